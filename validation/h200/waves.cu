// Kernel time against grid size, in two regimes, on the H200.
//
// sleep_kernel: every thread of a 128-thread block waits block_ns nanoseconds (%globaltimer loop with
//   __nanosleep); co-resident blocks overlap fully (the "latency" regime).
// fma_kernel:   every thread of a 256-thread block runs `iters` iterations of 8 independent FMA chains
//   (fp32), enough to keep the SM's FP32 pipes busy with one block (the "throughput" regime).
// Resident blocks per SM are set with dynamic shared memory (and read back from the occupancy API).
// For each configuration and grid size: 3 warm-up launches, then the median of 15 launches timed with
// CUDA events. A 1-block empty kernel gives the launch overhead.
//
// Usage: ./waves > waves_raw.csv
#include <algorithm>
#include <vector>
#include "common.h"

__global__ void sleep_kernel(unsigned long long block_ns, int* sink) {
  extern __shared__ int pad[];
  unsigned long long t0 = globaltimer_ns();
  while (globaltimer_ns() - t0 < block_ns) __nanosleep(1000);
  if (block_ns == 0) sink[threadIdx.x] = pad[threadIdx.x];
}

__global__ void fma_kernel(int iters, float* out) {
  extern __shared__ int pad[];
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999999f, c = 1e-7f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);
      a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);
    }
  }
  float r = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (r == 1234.5f) out[threadIdx.x] = r + pad[0];
}

__global__ void empty_kernel() {}

template <typename F>
static float median_ms(F launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int i = 0; i < 15; ++i) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CHECK_LAUNCH();
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(a)); CHECK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

static std::vector<int> grids(int step_unit, int max_grid) {
  // every multiple of step_unit up to max_grid, +-1 around it, and 8 points inside each step
  std::vector<int> g;
  for (int k = 0; k * step_unit <= max_grid; ++k) {
    int base = k * step_unit;
    for (int d : {-1, 0, 1}) if (base + d >= 1 && base + d <= max_grid) g.push_back(base + d);
    for (int q = 1; q < 8; ++q) { int v = base + q * step_unit / 8; if (v >= 1 && v <= max_grid) g.push_back(v); }
  }
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

int main() {
  cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
  const int sms = p.multiProcessorCount;
  int* isink; float* fsink;
  CHECK(cudaMalloc(&isink, 4096)); CHECK(cudaMalloc(&fsink, 4096));
  CHECK(cudaFuncSetAttribute((const void*)sleep_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.sharedMemPerBlockOptin));
  CHECK(cudaFuncSetAttribute((const void*)fma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.sharedMemPerBlockOptin));
  float overhead = median_ms([&] { empty_kernel<<<1, 32>>>(); });
  std::printf("kernel,threads,smem_bytes,blocks_per_sm,block_param,grid,time_ms\n");
  std::printf("empty,32,0,0,0,1,%.6f\n", overhead);
  // dynamic shared memory that gives 1, 2, 4 and 8 blocks per SM on a 228 KiB SM (checked with the API below)
  const int smem_for[] = {120000, 100000, 50000, 27000};
  const unsigned long long block_ns = 50000;  // 50 us per block
  for (int s : smem_for) {
    int bps; CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, sleep_kernel, 128, s));
    for (int g : grids(sms * bps, 4 * sms * bps)) {
      float ms = median_ms([&] { sleep_kernel<<<g, 128, s>>>(block_ns, isink); });
      std::printf("sleep,128,%d,%d,%llu,%d,%.6f\n", s, bps, block_ns, g, ms);
    }
  }
  const int iters = 200;  // 200 x 16 x 8 FMA per thread: ~26 us per block on a saturated SM
  for (int s : smem_for) {
    int bps; CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, fma_kernel, 256, s));
    for (int g : grids(sms, std::min(std::max(4 * sms * bps, 8 * sms), 16 * sms))) {
      float ms = median_ms([&] { fma_kernel<<<g, 256, s>>>(iters, fsink); });
      std::printf("fma,256,%d,%d,%d,%d,%.6f\n", s, bps, iters, g, ms);
    }
  }
  return 0;
}
