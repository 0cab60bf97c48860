// Launch-order asymmetry (issue 11): the naive one-thread-per-element SGEMM (16 x 16 blocks) and the 32 x 32
// shared-memory tiled SGEMM (the kernel of ../sgemm.cu, unchanged apart from the two record pointers) under
// row, column and grouped (GROUP_M = 8) block order.
//
// C = A B, N x N fp32, row-major, N a multiple of 32. The grid is 1-D, T*T blocks (T = N / tile);
// blockIdx.x = pid -> C tile (tm, tn):
//   0 row:     tm = pid / T, tn = pid % T
//   1 column:  tn = pid / T, tm = pid % T
//   2 grouped: in_group = G*T; first_m = (pid / in_group) * G; gsize = min(T - first_m, G);
//              tm = first_m + (pid % in_group) % gsize; tn = (pid % in_group) / gsize     (G = 8)
// (identical to gemmsim.kernels.gpu.launch_order).
//
// naive16: block dim3(16, 16); thread (tx, ty): row = tm*16 + ty, col = tn*16 + tx;
//          for k < N: acc += A[row*N + k] * B[k*N + col]; C[row*N + col] = acc.
//          A warp = two rows ty, ty+1 of 16 threads: A loads are 2 addresses (broadcast), B loads 2 x 64 B.
// tiled32: as ../sgemm.cu (dim3(32, 32), two float[32][32] shared tiles, __launch_bounds__(1024, 2)).
//
// Both kernels optionally record (a) the clock of the launch (clk.h) and (b) a per-block trace: thread 0 of
// every block writes %globaltimer at block start and end, %smid, and clock64 at start.
//
// Usage: ./order time N1,N2,..     -> kernel,N,order,group_m,time_ms,tflops,max_rel_err,sm_mhz_median,reps
//        ./order ncu N1,N2,..      -> one launch per (kernel, N, order), for ncu
//        ./order trace N           -> kernel,N,order,pid,tm,tn,smid,start_ns,end_ns,clk0 (naive and tiled,
//                                     row and column; times relative to the earliest block start)
#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include "clk.h"
#include "../tile32.h"

__device__ __forceinline__ void tile_of(int pid, int T, int order, int group_m, int& tm, int& tn) {
  if (order == 0) { tm = pid / T; tn = pid % T; }
  else if (order == 1) { tn = pid / T; tm = pid % T; }
  else {
    const int in_group = group_m * T;
    const int first_m = (pid / in_group) * group_m;
    const int gsize = min(T - first_m, group_m);
    tm = first_m + (pid % in_group) % gsize;
    tn = (pid % in_group) / gsize;
  }
}

__device__ __forceinline__ void trace_store(unsigned long long* trace, unsigned long long g0, unsigned long long c0) {
  if (trace != nullptr) {
    unsigned long long g1 = globaltimer_ns();
    unsigned long long* t = trace + 4 * (size_t)blockIdx.x;
    t[0] = g0; t[1] = g1; t[2] = smid(); t[3] = c0;
  }
}

__global__ void __launch_bounds__(256)
naive16(const float* A, const float* B, float* C, int N, int order, int group_m, ClkRec* rec, unsigned long long* trace) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int T = N / 16;
  int tm, tn;
  tile_of(blockIdx.x, T, order, group_m, tm, tn);
  const int row = tm * 16 + threadIdx.y, col = tn * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < N; ++k) acc += A[(size_t)row * N + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
  if (threadIdx.x == 0 && threadIdx.y == 0) { clk_store(rec, blockIdx.x, g0, c0); trace_store(trace, g0, c0); }
}

#define TILE 32
__global__ void __launch_bounds__(1024, 2)
tiled32(const float* A, const float* B, float* C, int N, int order, int group_m, ClkRec* rec, unsigned long long* trace) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int T = N / TILE;
  int tm, tn;
  tile_of(blockIdx.x, T, order, group_m, tm, tn);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = tm * TILE + ty, col = tn * TILE + tx;
  const float acc = tiled_dot<TILE>(A, B, As, Bs, row, col, N, N);
  C[(size_t)row * N + col] = acc;
  if (tx == 0 && ty == 0) { clk_store(rec, blockIdx.x, g0, c0); trace_store(trace, g0, c0); }
}

__global__ void init_kernel(float* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    x[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

static const char* order_name(int o) { return o == 0 ? "row" : o == 1 ? "column" : "grouped"; }

struct Launch {
  int kernel;  // 0 naive16, 1 tiled32
  void operator()(const float* A, const float* B, float* C, int N, int order, ClkRec* rec, unsigned long long* trace) const {
    if (kernel == 0) { int T = N / 16; naive16<<<T * T, dim3(16, 16)>>>(A, B, C, N, order, 8, rec, trace); }
    else { int T = N / 32; tiled32<<<T * T, dim3(32, 32)>>>(A, B, C, N, order, 8, rec, trace); }
  }
  const char* name() const { return kernel == 0 ? "naive16" : "tiled32"; }
  int blocks(int N) const { int T = N / (kernel == 0 ? 16 : 32); return T * T; }
};

int main(int argc, char** argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: %s time|ncu N1,N2,.. | trace N\n", argv[0]); return 1; }
  std::string mode = argv[1];
  std::vector<int> sizes;
  { std::stringstream ss(argv[2]); std::string t; while (std::getline(ss, t, ',')) sizes.push_back(std::stoi(t)); }
  ClkRec* rec = clk_alloc();
  if (mode == "time") std::printf("kernel,N,order,group_m,time_ms,tflops,max_rel_err,sm_mhz_median,reps\n");
  if (mode == "trace") std::printf("kernel,N,order,pid,tm,tn,smid,start_ns,end_ns,clk0\n");
  for (int N : sizes) {
    if (N % 32) { std::fprintf(stderr, "N must be a multiple of 32\n"); return 1; }
    size_t n = (size_t)N * N;
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, n * 4)); CHECK(cudaMalloc(&B, n * 4)); CHECK(cudaMalloc(&C, n * 4));
    init_kernel<<<1024, 256>>>(A, n, 12345u); init_kernel<<<1024, 256>>>(B, n, 67890u);
    CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    std::vector<float> hA, hB;
    if (mode == "time") {
      hA.resize(n); hB.resize(n);
      CHECK(cudaMemcpy(hA.data(), A, n * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(hB.data(), B, n * 4, cudaMemcpyDeviceToHost));
    }
    for (int kern = 0; kern < 2; ++kern) {
      Launch L{kern};
      for (int order = 0; order < 3; ++order) {
        if (mode == "ncu") {
          L(A, B, C, N, order, nullptr, nullptr);
          CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
          std::printf("ncu_launch,%s,%d,%s\n", L.name(), N, order_name(order));
          std::fflush(stdout);
          continue;
        }
        if (mode == "trace") {
          if (order == 2) continue;
          int nb = L.blocks(N);
          unsigned long long* tr; CHECK(cudaMalloc(&tr, (size_t)nb * 32));
          L(A, B, C, N, order, nullptr, nullptr);  // warm-up
          CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
          L(A, B, C, N, order, nullptr, tr);
          CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
          std::vector<unsigned long long> h((size_t)nb * 4);
          CHECK(cudaMemcpy(h.data(), tr, (size_t)nb * 32, cudaMemcpyDeviceToHost));
          unsigned long long t0 = ~0ull;
          for (int b = 0; b < nb; ++b) t0 = std::min(t0, h[4 * b]);
          int T = N / (kern == 0 ? 16 : 32);
          for (int b = 0; b < nb; ++b) {
            int tm, tn;
            if (order == 0) { tm = b / T; tn = b % T; } else { tn = b / T; tm = b % T; }
            std::printf("%s,%d,%s,%d,%d,%d,%llu,%llu,%llu,%llu\n", L.name(), N, order_name(order), b, tm, tn,
                        h[4 * b + 2], h[4 * b] - t0, h[4 * b + 1] - t0, h[4 * b + 3]);
          }
          CHECK(cudaFree(tr));
          continue;
        }
        // time: poison, run, check 64 elements against a float64 host reference, then timed repetitions
        CHECK(cudaMemset(C, 0xFF, n * 4));
        L(A, B, C, N, order, nullptr, nullptr);
        CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
        std::vector<float> hC(n);
        CHECK(cudaMemcpy(hC.data(), C, n * 4, cudaMemcpyDeviceToHost));
        std::mt19937 rng(N * 10 + order + 100 * kern);
        double maxerr = 0;
        for (int s = 0; s < 64; ++s) {
          int i = rng() % N, j = rng() % N;
          double ref = 0, mag = 0;
          for (int k = 0; k < N; ++k) { double p = (double)hA[(size_t)i * N + k] * hB[(size_t)k * N + j]; ref += p; mag += std::fabs(p); }
          double err = std::fabs(hC[(size_t)i * N + j] - ref) / mag;
          if (!(err == err)) err = 1e30;
          maxerr = std::max(maxerr, err);
        }
        int reps = N >= 4096 ? 5 : 10;
        cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
        std::vector<float> t; std::vector<double> mhz;
        for (int r = 0; r < reps; ++r) {
          CHECK(cudaEventRecord(a));
          L(A, B, C, N, order, rec, nullptr);
          CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b));
          CHECK_LAUNCH();
          float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
          mhz.push_back(clk_mhz(rec, L.blocks(N)));
        }
        std::sort(t.begin(), t.end()); std::sort(mhz.begin(), mhz.end());
        float ms = t[t.size() / 2];
        std::printf("%s,%d,%s,%d,%.4f,%.3f,%.3e,%.0f,%d\n", L.name(), N, order_name(order), order == 2 ? 8 : 0, ms,
                    2.0 * N * N * (double)N / (ms * 1e-3) / 1e12, maxerr, mhz[mhz.size() / 2], reps);
        std::fflush(stdout);
        CHECK(cudaEventDestroy(a)); CHECK(cudaEventDestroy(b));
      }
    }
    CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C));
  }
  return 0;
}
