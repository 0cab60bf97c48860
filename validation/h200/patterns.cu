// One warp instruction per launch, for Nsight Compute: shared-memory wavefronts and global sectors.
//
// Reads patterns.txt (name space op width offset0..offset31; see patterns.py) and launches, for each
// line in order, one block of one warp whose lane i performs exactly one access of `width` bytes at
// base + offset[i]: an ld.shared / st.shared (base = start of dynamic shared memory) or an
// ld.global / st.global (base = a 256-byte-aligned cudaMalloc buffer). The accesses are inline PTX
// (asm volatile) so the compiler can neither drop, merge nor widen them; the lane offsets come from
// __constant__ memory so no other global load appears in the kernel. Loaded values feed a store that
// never happens (a comparison with a run-time value the compiler cannot know; with a constant, ptxas
// proved 8- and 16-bit loads could never match it and deleted them), which keeps the load alive.
//
// Usage: ./patterns patterns.txt      (run under ncu; see run_all.sh)
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "common.h"

__constant__ unsigned c_offs[32];

template <int W> __device__ __forceinline__ unsigned ld_shared(unsigned addr) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (W == 1) asm volatile("ld.shared.u8 %0, [%1];" : "=r"(a) : "r"(addr));
  if (W == 2) asm volatile("ld.shared.u16 %0, [%1];" : "=r"(a) : "r"(addr));
  if (W == 4) asm volatile("ld.shared.u32 %0, [%1];" : "=r"(a) : "r"(addr));
  if (W == 8) asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "r"(addr));
  if (W == 16) asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
  return a ^ b ^ c ^ d;
}
template <int W> __device__ __forceinline__ void st_shared(unsigned addr, unsigned v) {
  if (W == 1) asm volatile("st.shared.u8 [%0], %1;" ::"r"(addr), "r"(v));
  if (W == 2) asm volatile("st.shared.u16 [%0], %1;" ::"r"(addr), "r"(v));
  if (W == 4) asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v));
  if (W == 8) asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(addr), "r"(v), "r"(v + 1));
  if (W == 16) asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v), "r"(v + 1), "r"(v + 2), "r"(v + 3));
}
template <int W> __device__ __forceinline__ unsigned ld_global(const char* p) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (W == 1) asm volatile("ld.global.u8 %0, [%1];" : "=r"(a) : "l"(p));
  if (W == 2) asm volatile("ld.global.u16 %0, [%1];" : "=r"(a) : "l"(p));
  if (W == 4) asm volatile("ld.global.u32 %0, [%1];" : "=r"(a) : "l"(p));
  if (W == 8) asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(p));
  if (W == 16) asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p));
  return a ^ b ^ c ^ d;
}
template <int W> __device__ __forceinline__ void st_global(char* p, unsigned v) {
  if (W == 1) asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "r"(v));
  if (W == 2) asm volatile("st.global.u16 [%0], %1;" ::"l"(p), "r"(v));
  if (W == 4) asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v));
  if (W == 8) asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v), "r"(v + 1));
  if (W == 16) asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v), "r"(v + 1), "r"(v + 2), "r"(v + 3));
}

template <int W> __global__ void smem_ld(unsigned* sink, unsigned magic) {
  extern __shared__ char sm[];
  unsigned base = (unsigned)__cvta_generic_to_shared(sm);
  unsigned v = ld_shared<W>(base + c_offs[threadIdx.x & 31]);
  if (v == magic) sink[threadIdx.x] = v;
}
template <int W> __global__ void smem_st(unsigned* sink) {
  extern __shared__ char sm[];
  unsigned base = (unsigned)__cvta_generic_to_shared(sm);
  st_shared<W>(base + c_offs[threadIdx.x & 31], threadIdx.x);
}
template <int W> __global__ void global_ld(const char* buf, unsigned* sink, unsigned magic) {
  unsigned v = ld_global<W>(buf + c_offs[threadIdx.x & 31]);
  if (v == magic) sink[threadIdx.x] = v;
}
template <int W> __global__ void global_st(char* buf) {
  st_global<W>(buf + c_offs[threadIdx.x & 31], threadIdx.x);
}

template <int W> void launch(const std::string& space, const std::string& op, char* buf, unsigned* sink) {
  const size_t smem = 48 * 1024;
  if (space == "smem" && op == "ld") smem_ld<W><<<1, 32, smem>>>(sink, 0xFFFFFFFFu);
  else if (space == "smem" && op == "st") smem_st<W><<<1, 32, smem>>>(sink);
  else if (space == "global" && op == "ld") global_ld<W><<<1, 32>>>(buf, sink, 0xFFFFFFFFu);
  else if (space == "global" && op == "st") global_st<W><<<1, 32>>>(buf);
  else { std::fprintf(stderr, "bad space/op %s/%s\n", space.c_str(), op.c_str()); std::exit(1); }
  CHECK_LAUNCH();
}

int main(int argc, char** argv) {
  if (argc < 2) { std::fprintf(stderr, "usage: %s patterns.txt\n", argv[0]); return 1; }
  std::ifstream in(argv[1]);
  if (!in) { std::fprintf(stderr, "cannot open %s\n", argv[1]); return 1; }
  char* buf; unsigned* sink;
  CHECK(cudaMalloc(&buf, 1 << 20));
  CHECK(cudaMemset(buf, 0, 1 << 20));
  CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  std::string line;
  int n = 0;
  std::printf("id,name,space,op,width\n");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::string name, space, op; int width; unsigned offs[32];
    ss >> name >> space >> op >> width;
    for (int i = 0; i < 32; ++i) ss >> offs[i];
    if (!ss) { std::fprintf(stderr, "bad line: %s\n", line.c_str()); return 1; }
    CHECK(cudaMemcpyToSymbol(c_offs, offs, sizeof(offs)));
    switch (width) {
      case 1: launch<1>(space, op, buf, sink); break;
      case 2: launch<2>(space, op, buf, sink); break;
      case 4: launch<4>(space, op, buf, sink); break;
      case 8: launch<8>(space, op, buf, sink); break;
      case 16: launch<16>(space, op, buf, sink); break;
      default: std::fprintf(stderr, "bad width %d\n", width); return 1;
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("%d,%s,%s,%s,%d\n", n++, name.c_str(), space.c_str(), op.c_str(), width);
  }
  return 0;
}
