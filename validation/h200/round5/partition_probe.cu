// Which L2 partition each SM sits next to (issue 11: launch order). H200, sm_90.
//
// For a reference SM R and a target SM T: flush the L2 (cudaMemset of 512 MiB), let R walk a dependent chain of
// NL lines with ld.global.cg (each line is then held in its home partition and a clean copy in R's near
// partition), then let T walk the same chain, timing every load with clock64. If T is near the same partition as
// R, every line is a near hit; if not, the lines homed in R's partition are far hits (the pointer chase shows
// ~290 vs ~520 cycles, validation/h200/round3/latency3.csv). A first, cold walk by T gives its DRAM latencies.
// One block per SM (dynamic shared memory > half an SM's), the block on the wanted SM does the walk.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int NL = 1024;          // lines in the chain
constexpr int LINE_U32 = 32;      // 128 B

__device__ __forceinline__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }

__device__ __forceinline__ unsigned ld_cg(const unsigned* p) {
  unsigned v; asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}

__global__ void walk(const unsigned* chain, int target, unsigned* lat, unsigned* last, unsigned* sm_seen) {
  extern __shared__ unsigned s_lat[];
  unsigned me = smid();
  if (threadIdx.x == 0) atomicAdd(&sm_seen[me], 1u);
  if ((int)me != target || threadIdx.x != 0) return;
  __shared__ volatile unsigned s_dep;
  unsigned idx = 0;
  long long prev = clock64();
  for (int i = 0; i < NL; ++i) {
    idx = ld_cg(chain + (size_t)idx * LINE_U32);
    s_dep = idx;               // cannot issue before the load returns (in-order issue), so the clock read after it waits too
    long long t = clock64();
    s_lat[i] = (unsigned)(t - prev);
    prev = t;
  }
  for (int i = 0; i < NL; ++i) lat[i] = s_lat[i];
  *last = idx;
}

int main() {
  int nsm = 0; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  int smem_max = 0; CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  int smem = smem_max - 256;  // one block per SM (more than half of an SM; the static 4 B counts too)
  CK(cudaFuncSetAttribute(walk, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<unsigned> h(NL * LINE_U32, 0);
  for (int i = 0; i < NL; ++i) h[(size_t)i * LINE_U32] = (i + 1) % NL;
  unsigned *chain, *lat, *last, *seen; unsigned char* flush;
  size_t flush_bytes = 512ull << 20;
  CK(cudaMalloc(&chain, h.size() * 4)); CK(cudaMemcpy(chain, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&lat, NL * 4)); CK(cudaMalloc(&last, 4)); CK(cudaMalloc(&seen, nsm * 4 * 2)); CK(cudaMalloc(&flush, flush_bytes));
  std::vector<unsigned> hl(NL), hs(nsm * 2);
  printf("ref_sm,target_sm,phase,line,cycles\n");
  int refs[2] = {0, nsm - 1};
  int bad_place = 0, bad_chain = 0;
  for (int r = 0; r < 2; ++r) {
    int R = refs[r];
    for (int T = 0; T < nsm; ++T) {
      if (T == R) continue;
      for (int phase = 0; phase < 2; ++phase) {  // 0: T walks cold; 1: R walks, then T walks
        CK(cudaMemset(flush, (T + phase) & 0xff, flush_bytes));
        CK(cudaMemset(seen, 0, nsm * 4));
        if (phase == 1) walk<<<nsm, 32, smem>>>(chain, R, lat, last, seen);
        walk<<<nsm, 32, smem>>>(chain, T, lat, last, seen);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(hl.data(), lat, NL * 4, cudaMemcpyDeviceToHost));
        unsigned hlast; CK(cudaMemcpy(&hlast, last, 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hs.data(), seen, nsm * 4, cudaMemcpyDeviceToHost));
        if (hlast != 0) bad_chain++;  // NL steps around the ring end at line 0
        for (int s = 0; s < nsm; ++s) if (hs[s] != (phase ? 2u : 1u)) { bad_place++; break; }
        for (int i = 0; i < NL; ++i) printf("%d,%d,%d,%d,%u\n", R, T, phase, i, hl[i]);
      }
    }
  }
  fprintf(stderr, "sms %d smem/block %d  launches with a block not alone on its SM: %d  wrong chain ends: %d\n", nsm, smem, bad_place, bad_chain);
  return 0;
}
