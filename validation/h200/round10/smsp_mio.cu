// Round 10c (issue 12): does copy code beside MMA warps slow down more when the MMA warps also read shared memory with
// ldmatrix, as mma_pipe's do? Round 10 (smsp_share.cu) put integer code beside MMA warps that only ran mma.sync; in
// the GEMM their ldmatrix and the copy code's cp.async both use the SM's shared-memory (MIO) pipe.
//
// Kernel mio<MK, OK>: one block per SM of 8 warps, warp w on SMSP w % 4; warps 0-3 MMA warps, 4-7 OTHER warps.
//   MK = 0: none; 1: 8 mma.sync per iteration on 8 accumulators (as round 10); 3: the same 8 mma.sync and 3
//   ldmatrix.x4 from shared memory (mma_pipe's 128x128/8-warp ratio: 6 per 16 HMMA), each feeding the next mma; its
//   address depends on an accumulator (a first version read a fixed address and ptxas hoisted 63 of 66 out of the loop).
//   OK = 1: 64 integer adds per iteration (as round 10); 4: copy code from L1 -- 16 x (one 16-byte cp.async.ca from a
//   4 KiB per-block buffer that stays in L1 + 3 integer adds) per iteration, so the copies are not L2-bound; 5: 16
//   x (4 ldmatrix-free shared stores st.shared.v4 + 3 adds): shared-memory writes without cp.async.
// OTHER warps sleep 4 us first (the MMA warps reach steady state), run `other_iters` iterations and stop; MMA warps
// run 4096 iterations. Lane 0 of every warp reads clock64 around its loop.
// ./smsp_mio -> CSV: mk,ok,other_iters,rep,other_cyc,mma_cyc,mma_cyc_per_hmma,sm_mhz,time_ms,sink
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../round3/clk.h"
#include "warp_clock.h"

#define MMA_ITERS 4096

template <int MK, int OK>
__global__ void mio(float* sink, const float4* gbuf, unsigned long long* rec_t, ClkRec* rec, int other_iters) {
  __shared__ __align__(16) half tile[4][64 * 8];       // per MMA warp: 64 rows of 16 B for ldmatrix.x4
  __shared__ __align__(16) float4 cbuf[4][4][32];      // per OTHER warp: 4 slots of 512 B
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < 4 * 64 * 8; i += blockDim.x) (&tile[0][0])[i] = __float2half(0.001f * (i & 63));
  __syncthreads();
  unsigned long long t0 = 0, t1 = 0;
  float s = 0.f;
  if (warp < 4) {
    if (MK > 0) {
      float acc[8][4];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
      unsigned a[4] = {0x3c003c00u ^ lane, 0x3c003c00u, 0x3c00u, (unsigned)lane}, b0 = 0x3c003c00u, b1 = lane << 3;
      const unsigned taddr = (unsigned)__cvta_generic_to_shared(&tile[warp][(lane & 63) * 8]);
      t0 = clock64();
      for (int it = 0; it < MMA_ITERS; ++it) {
#pragma unroll
        for (int h = 0; h < 8; ++h) {
          if (MK == 3 && (h == 0 || h == 3 || h == 6))
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                         : "r"(taddr + (__float_as_uint(acc[h][0]) & 16)));  // depends on the last mma: ptxas cannot hoist it
          asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                       : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                       : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
        }
      }
      t1 = clock64();
#pragma unroll
      for (int i = 0; i < 8; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
    }
  } else if (OK > 0) {
    __nanosleep(4000);
    unsigned x[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = lane + i;
    const int ow = warp - 4;
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(&cbuf[ow][0][lane]);
    const char* g = reinterpret_cast<const char*>(gbuf) + blockIdx.x * 4096;
    t0 = clock64();
    for (int it = 0; it < other_iters; ++it) {
      if (OK == 1) {
#pragma unroll
        for (int j = 0; j < 64; ++j) asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[j % 8]) : "r"(it));
      } else {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          if (OK == 4) {
            const unsigned off = ((j * 512 + lane * 16) ^ (x[j % 8] & 0x10)) & 4095;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(sbase + (j & 3) * 512), "l"(g + off));
          } else {
            asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(sbase + (j & 3) * 512), "r"(x[0]), "r"(x[1]),
                         "r"(x[2]), "r"(x[j % 8]) : "memory");
          }
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[j % 8]) : "r"(it));
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[(j + 1) % 8]) : "r"(j));
          asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[(j + 2) % 8]) : "r"(it));
        }
      }
    }
    t1 = clock64();
    if (OK == 4) asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
    for (int i = 0; i < 8; ++i) s += (float)(x[i] & 7);
    s += cbuf[ow][0][lane].x;
  }
  if (s == 1234.5f) sink[0] = s;  // practically never: keeps every chain live
  if (lane == 0) { rec_t[(blockIdx.x * 8 + warp) * 2] = t0; rec_t[(blockIdx.x * 8 + warp) * 2 + 1] = t1; }
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

typedef void (*Kern)(float*, const float4*, unsigned long long*, ClkRec*, int);
struct Case { int mk, ok; Kern k; };
#define C(m, o) Case{m, o, mio<m, o>}

int main() {
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<Case> cases = {C(1, 0), C(3, 0), C(0, 1), C(0, 4), C(0, 5), C(1, 1), C(1, 4), C(1, 5), C(3, 1), C(3, 4), C(3, 5)};
  float* sink; CHECK(cudaMalloc(&sink, 4));
  const size_t gbytes = (size_t)sms * 4096;
  float4* gbuf; CHECK(cudaMalloc(&gbuf, gbytes)); CHECK(cudaMemset(gbuf, 0, gbytes));
  unsigned long long* rec_t; CHECK(cudaMalloc(&rec_t, (size_t)sms * 8 * 2 * 8));
  ClkRec* rec = clk_alloc();
  std::printf("mk,ok,other_iters,rep,other_cyc,mma_cyc,mma_cyc_per_hmma,sm_mhz,time_ms,sink\n");
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  for (auto& c : cases) {
    for (int oi : {16, 64}) {
      if (c.ok == 0 && oi != 16) continue;
      for (int rep = -1; rep < 5; ++rep) {
        CHECK(cudaMemset(rec_t, 0, (size_t)sms * 8 * 2 * 8));
        CHECK(cudaEventRecord(e0));
        c.k<<<sms, 256>>>(sink, gbuf, rec_t, rec, oi);
        CHECK(cudaEventRecord(e1)); CHECK(cudaEventSynchronize(e1)); CHECK_LAUNCH();
        float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
        double mhz = clk_mhz(rec, sms);
        const LoopTimes lt = loop_times(rec_t, sms, 8, 1);
        float sv; CHECK(cudaMemcpy(&sv, sink, 4, cudaMemcpyDeviceToHost));
        double mcyc = lt.mma;
        if (rep >= 0)
          std::printf("%d,%d,%d,%d,%.1f,%.1f,%.3f,%.0f,%.4f,%g\n", c.mk, c.ok, c.ok ? oi : 0, rep, lt.other, mcyc,
                      mcyc > 0 ? mcyc / (8.0 * MMA_ITERS) : -1.0, mhz, ms, sv);
      }
    }
  }
  return 0;
}
