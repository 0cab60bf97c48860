// Shared by the naive-kernel trace programs (round7/drift7.cu, round12/drift12.cu). Device side: a block's tile in
// row or column order, and its trace record. Host side: the inputs (uniform in [-1, 1), seeded by N), the device
// buffers, the trace and C copied back, the check of 64 elements of C against float64, and the trace written as CSV.
// Each program keeps its own k-loop.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>
#include "../round3/clk.h"

// The block's tile (tm, tn): consecutive pids along a block row (order 0, row) or a block column (1, column).
__device__ __forceinline__ void naive_tile(int N, int order, int& tm, int& tn) {
  const int T = N / 16;
  if (order == 0) { tm = blockIdx.x / T; tn = blockIdx.x % T; } else { tn = blockIdx.x / T; tm = blockIdx.x % T; }
}

// Thread (0, 0) records the block's start (g0, c0: globaltimer and clock64 read first thing), end and SM.
__device__ __forceinline__ void naive_record(ClkRec* rec, unsigned long long* trace, unsigned long long g0,
                                             unsigned long long c0) {
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    clk_store(rec, blockIdx.x, g0, c0);
    unsigned long long g1 = globaltimer_ns();
    unsigned long long* t = trace + 4 * (size_t)blockIdx.x;
    t[0] = g0; t[1] = g1; t[2] = smid(); t[3] = c0;
  }
}

struct NaiveRun {
  int N, nb;
  size_t n;
  std::mt19937 rng;  // after the inputs: the check draws its elements from it
  std::vector<float> hA, hB, hC;
  float *A, *B, *C;
  unsigned long long* tr;  // per block: start, end (globaltimer), SM, clock64 at start
  ClkRec* rec;
  std::vector<unsigned long long> h;
};

// Inputs on the host and the device, a trace buffer and the clock record of the launch.
static NaiveRun naive_setup(int N) {
  NaiveRun r{N, (N / 16) * (N / 16), (size_t)N * N, std::mt19937(1234 + N)};
  r.hA.resize(r.n); r.hB.resize(r.n);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& x : r.hA) x = u(r.rng);
  for (auto& x : r.hB) x = u(r.rng);
  CHECK(cudaMalloc(&r.A, r.n * 4)); CHECK(cudaMalloc(&r.B, r.n * 4)); CHECK(cudaMalloc(&r.C, r.n * 4));
  CHECK(cudaMemcpy(r.A, r.hA.data(), r.n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(r.B, r.hB.data(), r.n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMalloc(&r.tr, (size_t)r.nb * 32));
  r.rec = clk_alloc();
  return r;
}

// After the timed launch: its SM clock, and the trace and C on the host.
static double naive_fetch(NaiveRun& r) {
  const double mhz = clk_mhz(r.rec, r.nb);
  r.h.resize((size_t)r.nb * 4);
  CHECK(cudaMemcpy(r.h.data(), r.tr, (size_t)r.nb * 32, cudaMemcpyDeviceToHost));
  r.hC.resize(r.n);
  CHECK(cudaMemcpy(r.hC.data(), r.C, r.n * 4, cudaMemcpyDeviceToHost));
  return mhz;
}

// Largest relative error of 64 elements C(i, j) against float64; a(i, k) / b(k, j) index the stored A and B.
template <class IA, class IB>
static double naive_check(NaiveRun& r, IA a_at, IB b_at) {
  const int N = r.N;
  double maxerr = 0;
  for (int s = 0; s < 64; ++s) {
    int i = r.rng() % N, j = r.rng() % N;
    double ref = 0, mag = 0;
    for (int k = 0; k < N; ++k) {
      double a = r.hA[a_at(i, k)], b = r.hB[b_at(k, j)];
      ref += a * b; mag += std::fabs(a * b);
    }
    double err = std::fabs(r.hC[(size_t)i * N + j] - ref) / mag;
    if (!(err == err)) err = 1e30;
    maxerr = std::max(maxerr, err);
  }
  return maxerr;
}

// The launch's span in ms (first start to last end).
static double naive_span_ms(const NaiveRun& r) {
  unsigned long long t0 = ~0ull, t1 = 0;
  for (int b = 0; b < r.nb; ++b) { t0 = std::min(t0, r.h[4 * b]); t1 = std::max(t1, r.h[4 * b + 1]); }
  return (t1 - t0) / 1e6;
}

// The trace as CSV on stdout, times from the first block start (pid order; tile of pid: row order tm = pid / T,
// column order tn = pid / T).
static void naive_print_trace(const NaiveRun& r) {
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < r.nb; ++b) t0 = std::min(t0, r.h[4 * b]);
  std::printf("pid,smid,start_ns,end_ns\n");
  for (int b = 0; b < r.nb; ++b) std::printf("%d,%llu,%llu,%llu\n", b, r.h[4 * b + 2], r.h[4 * b] - t0, r.h[4 * b + 1] - t0);
}
