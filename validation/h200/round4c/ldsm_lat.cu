// Round 4c (issue 12): shared-memory load latency on the H200 for the SM pipeline model's ldmatrix -> HMMA wait.
//
// chain<OP>: one warp per SM (grid = #SMs, 32 threads); each lane walks a dependent chain of HOPS shared loads whose
//   next address is this one's result (shared memory holds zeros written at run time from a kernel argument, so the
//   compiler cannot know the offset): OP 0 ldmatrix.sync.aligned.m8n8.x4.shared.b16 (lane l addresses row l, 16 B
//   rows, conflict-free; the next address adds the first result register), OP 1 ld.shared.u32 (LDS, lane l word l).
//   Thread 0 reads clock64 around the chain; cycles per hop = median over blocks of (c1 - c0) / HOPS.
// group<W>: one block of W warps per SM (W/4 warps per SMSP); per iteration each warp runs 4 groups of
//   {ldmatrix.x4 -> 4 mma.sync.m16n8k16 (fp16, fp32 acc) reading it}, 16 accumulator sets (each used once per
//   iteration), as the copy-less twins' k-loop does; cycles per iteration, median over blocks. The SASS (run
//   script) shows whether ptxas reused the fragment register (each group waits for its ldmatrix) or loaded ahead.
// ./ldsm_lat -> CSV: test,warps,rep,cycles_per_unit,sm_mhz,sink   (unit: one hop / one iteration)
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../round3/clk.h"

#define HOPS 2048
#define ITERS 2048

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

template <int OP>
__global__ void chain(unsigned zero, unsigned* sink, unsigned long long* cyc, ClkRec* rec) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  __shared__ __align__(16) unsigned sm[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) sm[i] = zero;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  unsigned addr = OP == 0 ? smem_u32(sm) + lane * 16 : smem_u32(sm) + lane * 4;
  unsigned r0 = 0, r1 = 0, r2 = 0, r3 = 0;
  unsigned long long t0 = clock64();
#pragma unroll 8
  for (int h = 0; h < HOPS; ++h) {
    if (OP == 0) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
    } else {
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(r0) : "r"(addr));
    }
    addr += r0;
  }
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  sink[blockIdx.x * blockDim.x + threadIdx.x] = addr + r1 + r2 + r3;
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

template <int W>
__global__ void group(unsigned zero, float* sink, unsigned long long* cyc, ClkRec* rec) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  __shared__ __align__(16) unsigned sm[4 * 128];
  for (int i = threadIdx.x; i < 4 * 128; i += blockDim.x) sm[i] = zero + 0x3c003c00u;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const unsigned base = smem_u32(sm) + lane * 16;
  float acc[16][4];
#pragma unroll
  for (int i = 0; i < 16; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
  unsigned a[4], b[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = 0x3c003c00u ^ (lane + i);
  unsigned long long t0 = clock64();
#pragma unroll 1
  for (int it = 0; it < ITERS; ++it) {
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(base + g * 512));
#pragma unroll
      for (int j = 0; j < 4; ++j)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(acc[g * 4 + j][0]), "+f"(acc[g * 4 + j][1]), "+f"(acc[g * 4 + j][2]), "+f"(acc[g * 4 + j][3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * j]), "r"(b[2 * j + 1]));
    }
  }
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 16; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

static double median_cycles(unsigned long long* d, int n, double per) {
  std::vector<unsigned long long> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  std::sort(h.begin(), h.end());
  return h[n / 2] / per;
}

int main() {
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long* cyc; CHECK(cudaMalloc(&cyc, sms * sizeof(unsigned long long)));
  void* sink; CHECK(cudaMalloc(&sink, sms * 512 * sizeof(float)));
  ClkRec* rec = clk_alloc();
  printf("test,warps,rep,cycles_per_unit,sm_mhz,sink\n");
  auto run = [&](const char* name, int warps, auto launch, double per) {
    launch();  // warm-up
    CHECK(cudaDeviceSynchronize());
    clk_mhz(rec, sms);
    for (int rep = 0; rep < 5; ++rep) {
      launch();
      CHECK(cudaDeviceSynchronize());
      double c = median_cycles(cyc, sms, per);
      double mhz = clk_mhz(rec, sms);
      unsigned s0; CHECK(cudaMemcpy(&s0, sink, 4, cudaMemcpyDeviceToHost));
      printf("%s,%d,%d,%.3f,%.0f,%u\n", name, warps, rep, c, mhz, s0);
    }
  };
  run("ldsm_chain", 1, [&] { chain<0><<<sms, 32>>>(0u, (unsigned*)sink, cyc, rec); }, HOPS);
  run("lds_chain", 1, [&] { chain<1><<<sms, 32>>>(0u, (unsigned*)sink, cyc, rec); }, HOPS);
  run("group", 4, [&] { group<4><<<sms, 128>>>(0u, (float*)sink, cyc, rec); }, ITERS);
  run("group", 8, [&] { group<8><<<sms, 256>>>(0u, (float*)sink, cyc, rec); }, ITERS);
  run("group", 16, [&] { group<16><<<sms, 512>>>(0u, (float*)sink, cyc, rec); }, ITERS);
  CHECK(cudaGetLastError());
  return 0;
}
