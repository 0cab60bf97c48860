// Round 39 (issue 12): in what order an SM serves its blocks' copies, by stages and blocks per SM -- a copy-only
// benchmark (no GEMM timing).
//
// Round 35's copy benchmark (round35/gpc35.cu, l2copy) is the 64x64 GEMM tile's copy alone: per k-step, A and B tiles
// of 64 rows x 64 B at a row stride of 8 KiB, cp.async 16 B into padded shared rows (80 B), 128 threads, S stages (at
// most S - 1 groups in flight after each commit; S = 1 waits for each), from a 32 MiB buffer that stays in the L2.
// Its per-block traces (round 35b, round 38b devices) show the 5 blocks of an SM at S = 4 finishing strictly in the
// order they were dispatched (0.81 ... 1.32 of the median), and evenly at S = 1 (5 blocks) and with 2 blocks.
// Here the same kernel runs on every SM with exactly k blocks per SM (dynamic shared memory: the largest, in 1 KiB
// steps, at which cudaOccupancyMaxActiveBlocksPerMultiprocessor gives exactly k; printed), one resident wave of 132 k blocks, for
// S = 1..4 and k = 2..7 (S = 4 stops at 5: 40 KiB a block), with and without a __syncthreads() after each k-step's
// wait (the GEMM has one). Each configuration: one warm-up, then 3 launches, all traced: every block's SM, start and
// end (%globaltimer), and clock64 at both ends; every copied chunk is checked against its address (bad = mismatches).
//
//   ./copy39 > copy39.csv     rows: device,...; occ,S,bar,k,smem,max_blocks_per_sm;
//                             launch,S,bar,k,rep,tiles,time_ms,GBps,sm_mhz,bad;  block,S,bar,k,rep,block,sm,g0,g1,c0,c1
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../common.h"

struct Rec { unsigned long long g0, g1, c0, c1; int sm; int pad; };

constexpr int ROW_INT4 = 512;          // an 8 KiB row (K = 4096 halves)
constexpr int ROWS = 2048;             // 16 MiB per operand, A then B: 32 MiB
constexpr int SROW = 5;                // shared row: 64 B of data + 16 B of padding
constexpr int STAGE_INT4 = 2 * 64 * SROW;

template <int S, bool BAR>
__global__ void __launch_bounds__(128) l2copy39(const int4* src, int tiles, Rec* rec, int* bad) {
  extern __shared__ int4 sbuf[];
  const unsigned sm = smid();
  unsigned long long g0 = globaltimer_ns(), c0 = (unsigned long long)clock64();
  const int t = threadIdx.x;
  int mism = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    unsigned h = (blockIdx.x * 2654435761u) ^ (tile * 40503u + 0x9e37u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    const int bm = h % (ROWS / 64), bn = (h >> 8) % (ROWS / 64);
    size_t g_last[4];
    int s_last[4];
    for (int k = 0; k < 128; ++k) {
      const int st = (S == 1) ? 0 : (k % S);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = t + 128 * j, op = c >> 8, row = (c & 255) >> 2, col = c & 3;
        const size_t g = (size_t)(op * ROWS + (op ? bn : bm) * 64 + row) * ROW_INT4 + k * 4 + col;
        const int s = st * STAGE_INT4 + op * 64 * SROW + row * SROW + col;
        __pipeline_memcpy_async(&sbuf[s], src + g, 16);
        g_last[j] = g; s_last[j] = s;
      }
      __pipeline_commit();
      __pipeline_wait_prior(S == 1 ? 0 : S - 1);
      if (BAR) __syncthreads();
    }
    __pipeline_wait_prior(0);
#pragma unroll
    for (int j = 0; j < 4; ++j) mism += sbuf[s_last[j]].x != (int)(g_last[j] & 0x7fffffff);
  }
  if (mism) atomicAdd(bad, mism);
  __syncthreads();
  if (t == 0) rec[blockIdx.x] = Rec{g0, globaltimer_ns(), c0, (unsigned long long)clock64(), (int)sm, 0};
}

__global__ void fill(int4* x, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = make_int4((int)(i & 0x7fffffff), 1, 2, 3);
}

template <int S, bool BAR>
static void run(const int4* src, Rec* d_rec, int* d_bad, int NSM) {
  auto kern = l2copy39<S, BAR>;
  for (int k = 2; k <= 7; ++k) {
    // the largest shared memory (1 KiB steps, at least S stages) at which exactly k blocks fit an SM
    CHECK(cudaFuncSetAttribute((const void*)kern, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    int smem = -1, occ = 0;
    for (int s = 227 * 1024; s >= S * STAGE_INT4 * 16; s -= 1024) {
      int o = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, kern, 128, s));
      if (o == k) { smem = s; occ = o; break; }
      if (o > k) break;
    }
    if (smem < 0) {
      int o = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o, kern, 128, S * STAGE_INT4 * 16));
      std::printf("occ,%d,%d,%d,none,%d\n", S, (int)BAR, k, o);
      continue;
    }
    std::printf("occ,%d,%d,%d,%d,%d\n", S, (int)BAR, k, smem, occ);
    if (occ != k) continue;
    const int grid = NSM * k;
    const int tiles = std::max(2, (S == 1 ? 16 : 40) / k);
    cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    for (int r = 0; r < 4; ++r) {
      CHECK(cudaMemset(d_rec, 0, grid * sizeof(Rec))); CHECK(cudaMemset(d_bad, 0, sizeof(int)));
      CHECK(cudaEventRecord(a));
      kern<<<grid, 128, smem>>>(src, tiles, d_rec, d_bad);
      CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
      float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
      std::vector<Rec> h(grid);
      CHECK(cudaMemcpy(h.data(), d_rec, grid * sizeof(Rec), cudaMemcpyDeviceToHost));
      int hb; CHECK(cudaMemcpy(&hb, d_bad, sizeof(int), cudaMemcpyDeviceToHost));
      double dc = 0, dg = 0;
      for (auto& x : h) { dc += (double)(x.c1 - x.c0); dg += (double)(x.g1 - x.g0); }
      const double bytes = (double)grid * tiles * 128 * 512 * 16;
      std::printf("launch,%d,%d,%d,%d,%d,%.4f,%.1f,%.0f,%d\n", S, (int)BAR, k, r, tiles, ms, bytes / ms / 1e6,
                  dg > 0 ? dc / dg * 1e3 : -1.0, hb);
      if (r >= 1)
        for (int i = 0; i < grid; ++i)
          std::printf("block,%d,%d,%d,%d,%d,%d,%llu,%llu,%llu,%llu\n", S, (int)BAR, k, r, i, h[i].sm, h[i].g0, h[i].g1,
                      h[i].c0, h[i].c1);
      usleep(2000);
    }
    CHECK(cudaEventDestroy(a)); CHECK(cudaEventDestroy(b));
  }
}

int main() {
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  const int NSM = prop.multiProcessorCount;
  std::printf("device,%s,%d SMs,smem per SM %zu,smem per block optin %zu\n", prop.name, NSM,
              prop.sharedMemPerMultiprocessor, prop.sharedMemPerBlockOptin);
  const size_t N4 = (size_t)2 * ROWS * ROW_INT4;  // 32 MiB of int4
  int4* src; CHECK(cudaMalloc(&src, N4 * sizeof(int4)));
  fill<<<1024, 256>>>(src, N4); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  Rec* d_rec; CHECK(cudaMalloc(&d_rec, 8 * NSM * sizeof(Rec)));
  int* d_bad; CHECK(cudaMalloc(&d_bad, sizeof(int)));
  std::printf("occ,S,bar,k,smem,max_blocks_per_sm\n");
  std::printf("launch,S,bar,k,rep,tiles,time_ms,GBps,sm_mhz,bad\n");
  std::printf("block,S,bar,k,rep,block,sm,g0,g1,c0,c1\n");
  run<1, false>(src, d_rec, d_bad, NSM); run<2, false>(src, d_rec, d_bad, NSM);
  run<3, false>(src, d_rec, d_bad, NSM); run<4, false>(src, d_rec, d_bad, NSM);
  run<1, true>(src, d_rec, d_bad, NSM); run<2, true>(src, d_rec, d_bad, NSM);
  run<3, true>(src, d_rec, d_bad, NSM); run<4, true>(src, d_rec, d_bad, NSM);
  return 0;
}
