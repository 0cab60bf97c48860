// Round 10 (issue 12): how does one SM sub-partition (SMSP) share its issue between warps that run mma.sync and
// warps that run other code (integer, FFMA, or cp.async copy code)? gemmsim's SM pipeline model
// (models/sm_pipeline.py) puts every warp's work on its SMSP as one resource; round 4b measured that HMMA and other
// issue do not overlap (their times add), but not the order in which the SMSP serves two warps that both have work:
// whole runs first come first served, time shared, or one instruction each in turn. At S = 1 this order decides how
// long one block's copy code takes while the other block's warps run their MMAs.
//
// Kernel share<MK, OK>: one block per SM of W = 4 (a + b) warps; warp w runs on SMSP w % 4 (checked: the MMA-only
// rate with a = 1 is one warp per SMSP, round 4b's). Warps of slot w / 4 < a are MMA warps: `mma_iters` iterations of
// 8 mma.sync.m16n8k16 (fp16 in, fp32 accumulate) -- MK = 1: 8 independent accumulator sets; MK = 2: one dependent
// chain -- and they run far longer than the others. Warps of slots a .. a+b-1 are OTHER warps: they sleep 4 us (the
// MMA warps reach steady state), then run `other_iters` iterations of 64 instructions -- OK = 1: integer adds on 8
// chains; OK = 2: FFMA on 8 chains; OK = 3: copy code, 16 x (one 16-byte cp.async.cg from an L2-resident buffer +
// 3 integer adds) -- and stop. Lane 0 of every warp stores clock64 at its loop's start and end.
// Per launch the host prints, over the 132 blocks' medians, the OTHER warps' loop time and the MMA warps' loop time.
// Policies predict, for n OTHER instructions beside MMA warps that never stall (MK = 1), OTHER's time:
//   first come first served by runs: ~the MMA warps' whole time; time shared: ~(1 + a) n; one instruction each in
//   turn: ~n (1 + a t_hmma) with t_hmma ~6 cycles (round 4b); OTHER first: ~n.
//
// ./smsp_share -> CSV on stdout: mk,ok,a,b,other_iters,rep,other_cyc,mma_cyc,mma_cyc_per_hmma,sm_mhz,time_ms,sink
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../round3/clk.h"
#include "warp_clock.h"

#define MMA_ITERS 4096
#define GBUF_BYTES (1 << 16)

template <int MK, int OK>
__global__ void share(float* sink, const float4* gbuf, unsigned long long* rec_t, ClkRec* rec, int a, int b,
                      int mma_iters, int other_iters) {
  extern __shared__ float4 smem[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, slot = warp >> 2;
  const int W = 4 * (a + b);
  __syncthreads();
  unsigned long long t0 = 0, t1 = 0;
  float s = 0.f;
  if (slot < a) {
    if (MK > 0) {
      float acc[8][4];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
      unsigned a0 = 0x3c003c00u ^ lane, a1 = 0x3c003c00u, a2 = 0x3c00u, a3 = lane, b0 = 0x3c003c00u, b1 = lane << 3;
      t0 = clock64();
      for (int it = 0; it < mma_iters; ++it) {
#pragma unroll
        for (int h = 0; h < 8; ++h) {
          const int i = MK == 1 ? h : 0;
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                       : "+f"(acc[i][0]), "+f"(acc[i][1]), "+f"(acc[i][2]), "+f"(acc[i][3])
                       : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
      }
      t1 = clock64();
#pragma unroll
      for (int i = 0; i < 8; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
    }
  } else if (OK > 0) {
    __nanosleep(4000);
    float f[8];
    unsigned x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) { f[i] = lane * 0.25f + i; x[i] = lane + i; }
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem + (warp - 4 * a) * 128);  // 2 KiB per OTHER warp
    const char* g = reinterpret_cast<const char*>(gbuf) + (blockIdx.x * 4096 + warp * 512) % GBUF_BYTES;
    t0 = clock64();
    for (int it = 0; it < other_iters; ++it) {
      if (OK == 1) {
#pragma unroll
        for (int j = 0; j < 64; ++j) asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[j % 8]) : "r"(it));
      } else if (OK == 2) {
#pragma unroll
        for (int j = 0; j < 64; ++j) asm volatile("fma.rn.f32 %0, %0, 0f3F800347, 0f3F000000;\n" : "+f"(f[j % 8]));
      } else {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const unsigned off = ((it * 16 + j) * 512 + lane * 16) & (GBUF_BYTES - 1);
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sbase + lane * 16 + (j & 3) * 512),
                       "l"(g + (off ^ (x[j % 8] & 0x10))));
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[j % 8]) : "r"(it));
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[(j + 1) % 8]) : "r"(j));
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[(j + 2) % 8]) : "r"(it));
        }
      }
    }
    t1 = clock64();
    if (OK == 3) asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
    for (int i = 0; i < 8; ++i) s += f[i] + (float)(x[i] & 7);
  }
  if (OK == 3 && slot >= a) s += smem[(warp - 4 * a) * 128 + lane].x;
  if (s == 1234.5f) sink[0] = s;  // practically never: keeps every chain live
  if (lane == 0) { rec_t[(blockIdx.x * W + warp) * 2] = t0; rec_t[(blockIdx.x * W + warp) * 2 + 1] = t1; }
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

typedef void (*Kern)(float*, const float4*, unsigned long long*, ClkRec*, int, int, int, int);
struct Case { int mk, ok; Kern k; };
#define C(m, o) Case{m, o, share<m, o>}

int main() {
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<Case> cases = {C(1, 0), C(2, 0), C(0, 1), C(0, 2), C(0, 3), C(1, 1), C(1, 2), C(1, 3), C(2, 1), C(2, 2), C(2, 3)};
  float* sink; CHECK(cudaMalloc(&sink, 4));
  float4* gbuf; CHECK(cudaMalloc(&gbuf, GBUF_BYTES)); CHECK(cudaMemset(gbuf, 0, GBUF_BYTES));
  unsigned long long* rec_t; CHECK(cudaMalloc(&rec_t, (size_t)sms * 64 * 2 * 8));
  ClkRec* rec = clk_alloc();
  std::printf("mk,ok,a,b,other_iters,rep,other_cyc,mma_cyc,mma_cyc_per_hmma,sm_mhz,time_ms,sink\n");
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  const int ab[][2] = {{1, 1}, {2, 2}, {1, 2}, {2, 1}, {1, 3}};
  for (auto& p : ab) {
    const int a = p[0], b = p[1], W = 4 * (a + b);
    for (auto& c : cases) {
      for (int oi : {4, 16, 64}) {
        if (c.ok == 0 && oi != 4) continue;  // MMA alone: one size
        const int mma_iters = c.mk == 2 ? MMA_ITERS / 4 : MMA_ITERS;
        for (int rep = -1; rep < 5; ++rep) {  // one warm-up
          CHECK(cudaMemset(rec_t, 0, (size_t)sms * W * 2 * 8));
          CHECK(cudaEventRecord(e0));
          c.k<<<sms, W * 32, 4 * b * 2048>>>(sink, gbuf, rec_t, rec, a, b, mma_iters, oi);
          CHECK(cudaEventRecord(e1)); CHECK(cudaEventSynchronize(e1)); CHECK_LAUNCH();
          float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
          double mhz = clk_mhz(rec, sms);
          const LoopTimes lt = loop_times(rec_t, sms, W, a);
          float sv; CHECK(cudaMemcpy(&sv, sink, 4, cudaMemcpyDeviceToHost));
          double mcyc = lt.mma;
          if (rep >= 0)
            std::printf("%d,%d,%d,%d,%d,%d,%.1f,%.1f,%.3f,%.0f,%.4f,%g\n", c.mk, c.ok, a, b, c.ok ? oi : 0, rep, lt.other,
                        mcyc, mcyc > 0 ? mcyc / (8.0 * mma_iters) / a : -1.0, mhz, ms, sv);
        }
      }
    }
  }
  return 0;
}
