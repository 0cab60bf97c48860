// Waves of blocks that may not saturate an SM (issue 11), and the FMA latency / per-SM FMA rate they depend on.
//
// chains<C>: every thread runs C independent fp32 FMA chains, `steps` dependent FMAs each
//   (a[j] = fmaf(a[j], m, c), m and c kernel arguments so nothing folds; inner loop unrolled 64 steps, so
//   loop overhead is ~3 instructions per 64*C FFMA). One warp issues at most one FFMA per C chains every
//   FMA-latency cycles; an SM issues at most 4 warp-FFMA per clock (4 schedulers x 32 FP32 lanes).
//
// ./waves3 rate  -> rate,warps,chains,steps,cycles,cycles_per_step,warp_fma_per_clk,sm_mhz
//   ONE block of `warps` warps (one SM), clock64 around the whole block (thread 0): cycles per dependent step.
//   warps = 1, chains = 1 gives the FMA latency (the model's parameter); larger warps x chains the issue limit.
// ./waves3 waves -> kernel,threads,chains,steps,smem_bytes,blocks_per_sm,grid,time_ms,sm_mhz
//   time (median of 11 CUDA-event timings after 3 warm-ups) against grid = every multiple of 132 up to
//   3 x blocks_per_sm x 132, plus 1, 33, 66, and +-1 around 132, R*132 and 2R*132; threads 64, 128, 256 (no
//   shared memory: 32, 16, 8 blocks/SM) and 128 threads with 24000 B dynamic shared memory (9 blocks/SM);
//   chains 1, 2, 4. sm_mhz: median over the timed launches of the in-kernel clock (clk.h).
#include <algorithm>
#include <string>
#include <vector>
#include "clk.h"

template <int C>
__global__ void chains(int steps, float m, float c, float* out, ClkRec* rec) {
  extern __shared__ float pad[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  float a[C];
#pragma unroll
  for (int j = 0; j < C; ++j) a[j] = threadIdx.x + j;
  for (int i = 0; i < steps; i += 64) {
#pragma unroll
    for (int u = 0; u < 64; ++u) {
#pragma unroll
      for (int j = 0; j < C; ++j) a[j] = fmaf(a[j], m, c);
    }
  }
  float r = 0.f;
#pragma unroll
  for (int j = 0; j < C; ++j) r += a[j];
  if (r == 1234.5f) out[threadIdx.x] = r + pad[0];
  if (threadIdx.x == 0) clk_store(rec, blockIdx.x, g0, c0);
}

__global__ void empty_kernel() {}

static void launch(int C, int grid, int threads, int smem, int steps, float* out, ClkRec* rec) {
  const float m = 0.999999f, c = 1e-7f;
  switch (C) {
    case 1: chains<1><<<grid, threads, smem>>>(steps, m, c, out, rec); break;
    case 2: chains<2><<<grid, threads, smem>>>(steps, m, c, out, rec); break;
    case 4: chains<4><<<grid, threads, smem>>>(steps, m, c, out, rec); break;
    case 8: chains<8><<<grid, threads, smem>>>(steps, m, c, out, rec); break;
  }
}

static int occupancy(int C, int threads, int smem) {
  int b = 0;
  switch (C) {
    case 1: CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, chains<1>, threads, smem)); break;
    case 2: CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, chains<2>, threads, smem)); break;
    case 4: CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, chains<4>, threads, smem)); break;
    case 8: CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, chains<8>, threads, smem)); break;
  }
  return b;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "waves";
  cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
  const int sms = p.multiProcessorCount;
  float* out; CHECK(cudaMalloc(&out, 4096 * 4));
  ClkRec* rec = clk_alloc();
  if (mode == "rate") {
    std::printf("rate,warps,chains,steps,cycles,cycles_per_step,warp_fma_per_clk,sm_mhz\n");
    const int steps = 1 << 16;
    for (int C : {1, 2, 4, 8}) {
      for (int w : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32}) {
        launch(C, 1, 32 * w, 0, steps, out, rec); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());  // warm-up
        CHECK(cudaMemset(rec, 0, CLK_BLOCKS * sizeof(ClkRec)));
        launch(C, 1, 32 * w, 0, steps, out, rec); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
        ClkRec h; CHECK(cudaMemcpy(&h, rec, sizeof h, cudaMemcpyDeviceToHost));
        double cyc = (double)(h.c1 - h.c0), mhz = cyc / (double)(h.g1 - h.g0) * 1e3;
        double cps = cyc / steps;
        std::printf("rate,%d,%d,%d,%.0f,%.4f,%.4f,%.0f\n", w, C, steps, cyc, cps, w * C / cps, mhz);
      }
    }
    return 0;
  }
  const int steps = 8192;
  for (int C : {1, 2, 4}) {
    void* f = C == 1 ? (void*)chains<1> : C == 2 ? (void*)chains<2> : (void*)chains<4>;
    CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.sharedMemPerBlockOptin));
  }
  cudaEvent_t ea, eb; CHECK(cudaEventCreate(&ea)); CHECK(cudaEventCreate(&eb));
  auto median_ms = [&](auto fn, int grid, double* mhz_out) {
    for (int i = 0; i < 3; ++i) fn();
    CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    std::vector<float> t; std::vector<double> mhz;
    for (int i = 0; i < 11; ++i) {
      CHECK(cudaEventRecord(ea)); fn(); CHECK(cudaEventRecord(eb)); CHECK(cudaEventSynchronize(eb));
      CHECK_LAUNCH();
      float ms; CHECK(cudaEventElapsedTime(&ms, ea, eb)); t.push_back(ms);
      if (grid > 0) mhz.push_back(clk_mhz(rec, grid));
    }
    std::sort(t.begin(), t.end()); std::sort(mhz.begin(), mhz.end());
    *mhz_out = mhz.empty() ? -1 : mhz[mhz.size() / 2];
    return t[t.size() / 2];
  };
  double mhz;
  float overhead = median_ms([&] { empty_kernel<<<1, 32>>>(); }, 0, &mhz);
  std::printf("kernel,threads,chains,steps,smem_bytes,blocks_per_sm,grid,time_ms,sm_mhz\n");
  std::printf("empty,32,0,0,0,0,1,%.6f,-1\n", overhead);
  struct Cfg { int threads, smem; };
  const Cfg cfgs[] = {{64, 0}, {128, 0}, {256, 0}, {128, 24000}};
  for (const Cfg& cf : cfgs) {
    for (int C : {1, 2, 4}) {
      int R = occupancy(C, cf.threads, cf.smem);
      std::vector<int> g = {1, sms / 4, sms / 2, sms - 1, sms + 1, R * sms - 1, R * sms + 1, 2 * R * sms - 1, 2 * R * sms + 1};
      for (int q = 1; q <= 3 * R; ++q) g.push_back(q * sms);
      std::sort(g.begin(), g.end()); g.erase(std::unique(g.begin(), g.end()), g.end());
      for (int grid : g) {
        if (grid < 1) continue;
        float ms = median_ms([&] { launch(C, grid, cf.threads, cf.smem, steps, out, rec); }, grid, &mhz);
        std::printf("chains,%d,%d,%d,%d,%d,%d,%.6f,%.0f\n", cf.threads, C, steps, cf.smem, R, grid, ms, mhz);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
