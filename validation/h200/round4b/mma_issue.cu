// Round 4b (issue 12): does a warp's other instruction issue overlap the mma.sync (HMMA) pipe on one SM
// sub-partition (SMSP), and what is mma.sync's own rate? An input of gemmsim's SM pipeline model
// (models/sm_pipeline.py, issue_with_mma) that no earlier round measured.
//
// Kernel issue_mix<NH, NF, NI>: one block of W warps per SM (grid = #SMs, so W/4 warps per SMSP); each warp runs
// ITERS iterations of NH independent mma.sync.m16n8k16 (fp16 in, fp32 accumulate, 8 accumulator sets round-robin),
// NF FFMA on 8 independent chains and NI integer adds on 8 independent chains (asm volatile, so none is removed).
// Per launch: thread 0 of every block reads clock64 before and after its loop; cycles per iteration = median over
// blocks of (c1 - c0) / ITERS; the launch's SM clock from clk.h (clock64 / globaltimer over the first 64 blocks).
// If HMMA and other issue overlap, cycles/iter = max((W/4) NH t_mma, (W/4)(NF + NI) t_issue); if not, their sum.
//
// ./mma_issue  -> CSV on stdout: nh,nf,ni,warps,rep,cycles_per_iter,sm_mhz,time_ms,sink
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../round3/clk.h"

#define ITERS 4096

template <int NH, int NF, int NI>
__global__ void issue_mix(float* sink, unsigned long long* cyc, ClkRec* rec, int iters) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int lane = threadIdx.x & 31;
  float acc[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
  unsigned a0 = 0x3c003c00u ^ lane, a1 = 0x3c003c00u, a2 = 0x3c00u, a3 = lane, b0 = 0x3c003c00u, b1 = lane << 3;
  float f[8];
  unsigned x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) { f[i] = lane * 0.25f + i; x[i] = lane + i; }
  __syncthreads();
  unsigned long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int h = 0; h < NH; ++h)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(acc[h % 8][0]), "+f"(acc[h % 8][1]), "+f"(acc[h % 8][2]), "+f"(acc[h % 8][3])
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#pragma unroll
    for (int j = 0; j < NF; ++j) asm volatile("fma.rn.f32 %0, %0, 0f3F800347, 0f3F000000;\n" : "+f"(f[j % 8]));
#pragma unroll
    for (int j = 0; j < NI; ++j) asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[j % 8]) : "r"(it));
  }
  unsigned long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3] + f[i] + (float)(x[i] & 7);
  if (s == 1234.5f) sink[0] = s;  // practically never: keeps every chain live
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

struct Case { int nh, nf, ni; void (*k)(float*, unsigned long long*, ClkRec*, int); };
#define C(a, b, c) Case{a, b, c, issue_mix<a, b, c>}

int main() {
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<Case> cases = {C(8, 0, 0), C(16, 0, 0), C(0, 16, 0), C(0, 32, 0), C(0, 64, 0), C(8, 16, 0), C(8, 32, 0),
                             C(8, 64, 0), C(0, 0, 32), C(8, 0, 32), C(0, 0, 64), C(8, 0, 64), C(16, 32, 0), C(16, 64, 0)};
  float* sink; unsigned long long* cyc; CHECK(cudaMalloc(&sink, 4)); CHECK(cudaMalloc(&cyc, sms * 8));
  ClkRec* rec = clk_alloc();
  std::printf("nh,nf,ni,warps,rep,cycles_per_iter,sm_mhz,time_ms,sink\n");
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  for (int warps : {4, 8, 16}) {
    for (auto& c : cases) {
      for (int rep = -1; rep < 5; ++rep) {  // one warm-up
        CHECK(cudaEventRecord(e0));
        c.k<<<sms, warps * 32>>>(sink, cyc, rec, ITERS);
        CHECK(cudaEventRecord(e1)); CHECK(cudaEventSynchronize(e1)); CHECK_LAUNCH();
        float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
        double mhz = clk_mhz(rec, sms);
        std::vector<unsigned long long> h(sms);
        CHECK(cudaMemcpy(h.data(), cyc, sms * 8, cudaMemcpyDeviceToHost));
        std::sort(h.begin(), h.end());
        float sv; CHECK(cudaMemcpy(&sv, sink, 4, cudaMemcpyDeviceToHost));
        if (rep >= 0)
          std::printf("%d,%d,%d,%d,%d,%.3f,%.0f,%.4f,%g\n", c.nh, c.nf, c.ni, warps, rep, (double)h[sms / 2] / ITERS, mhz, ms, sv);
      }
    }
  }
  return 0;
}
