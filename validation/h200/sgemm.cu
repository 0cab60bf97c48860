// Shared-memory tiled SGEMM (TILE = 32, one C element per thread) under three block launch orders.
//
// C = A B, all N x N fp32, row-major, N a multiple of 32. One thread block of 32 x 32 threads computes one
// 32 x 32 tile of C; thread (tx, ty) = (threadIdx.x, threadIdx.y) computes C[tm*32 + ty][tn*32 + tx].
// Each of the N/32 k-steps loads As[ty][tx] = A[row][k0 + tx] and Bs[ty][tx] = B[k0 + ty][col] with one
// 4-byte global load each (a warp = one row ty: 32 consecutive floats, 128 B, 4 sectors, 1 line per load),
// __syncthreads, 32 FMAs acc += As[ty][k] * Bs[k][tx] (As read is a warp-wide broadcast, Bs is stride-1),
// __syncthreads. Shared memory: two unpadded float[32][32] arrays, 8 KiB static. __launch_bounds__(1024, 2)
// keeps registers <= 32, so 2 blocks (64 warps) are resident per SM.
//
// The grid is 1-D, (N/32)^2 blocks; blockIdx.x = pid is mapped to a tile (tm, tn) by `order`:
//   0 row-major:    tm = pid / T, tn = pid % T           (consecutive blocks walk along a row of C tiles)
//   1 column-major: tn = pid / T, tm = pid % T
//   2 grouped:      Triton's tutorial with GROUP_M = group_m: in-group = group_m * T; g = pid / in-group;
//                   first_m = g * group_m; gsize = min(T - first_m, group_m);
//                   tm = first_m + (pid % in-group) % gsize; tn = (pid % in-group) / gsize
// with T = N/32.
//
// Usage: ./sgemm time N1,N2,..   (median time over repetitions, checked against a float64 host reference
//                                 at 64 random elements)
//        ./sgemm ncu N1,N2,..    (one launch per (N, order), for ncu -k sgemm_tiled)
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <algorithm>
#include "common.h"
#include "tile32.h"

#define TILE 32

__global__ void __launch_bounds__(1024, 2)
sgemm_tiled(const float* A, const float* B, float* C, int N, int order, int group_m) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int T = N / TILE;
  const int pid = blockIdx.x;
  int tm, tn;
  if (order == 0) { tm = pid / T; tn = pid % T; }
  else if (order == 1) { tn = pid / T; tm = pid % T; }
  else {
    const int in_group = group_m * T;
    const int first_m = (pid / in_group) * group_m;
    const int gsize = min(T - first_m, group_m);
    tm = first_m + (pid % in_group) % gsize;
    tn = (pid % in_group) / gsize;
  }
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = tm * TILE + ty, col = tn * TILE + tx;
  const float acc = tiled_dot<TILE>(A, B, As, Bs, row, col, N, N);
  C[(size_t)row * N + col] = acc;
}

__global__ void init_kernel(float* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    x[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

static const char* order_name(int o) { return o == 0 ? "row" : o == 1 ? "column" : "grouped"; }

int main(int argc, char** argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: %s time|ncu N1,N2,...\n", argv[0]); return 1; }
  std::string mode = argv[1];
  std::vector<int> sizes;
  { std::stringstream ss(argv[2]); std::string t; while (std::getline(ss, t, ',')) sizes.push_back(std::stoi(t)); }
  const int group_m = 8;
  if (mode == "time") std::printf("N,order,group_m,tile,time_ms,tflops,max_rel_err\n");
  for (int N : sizes) {
    if (N % TILE) { std::fprintf(stderr, "N must be a multiple of %d\n", TILE); return 1; }
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
    const int T = N / TILE;
    dim3 block(TILE, TILE);
    for (int order = 0; order < 3; ++order) {
      if (mode == "ncu") {
        sgemm_tiled<<<T * T, block>>>(A, B, C, N, order, group_m);
        CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
        std::printf("ncu_launch,%d,%s,%d\n", N, order_name(order), group_m);
        continue;
      }
      CHECK(cudaMemset(C, 0xFF, n * 4));  // poison: NaN
      sgemm_tiled<<<T * T, block>>>(A, B, C, N, order, group_m);
      CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
      // check 64 random elements against a float64 host reference
      std::vector<float> hC(n);
      CHECK(cudaMemcpy(hC.data(), C, n * 4, cudaMemcpyDeviceToHost));
      std::mt19937 rng(N * 10 + order);
      double maxerr = 0;
      for (int s = 0; s < 64; ++s) {
        int i = rng() % N, j = rng() % N;
        double ref = 0, mag = 0;
        for (int k = 0; k < N; ++k) { ref += (double)hA[(size_t)i * N + k] * hB[(size_t)k * N + j]; mag += std::fabs((double)hA[(size_t)i * N + k] * hB[(size_t)k * N + j]); }
        double err = std::fabs(hC[(size_t)i * N + j] - ref) / mag;
        if (!(err == err)) err = 1e30;
        maxerr = std::max(maxerr, err);
      }
      int reps = N >= 8192 ? 5 : N >= 4096 ? 10 : 20;
      cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
      std::vector<float> t;
      for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(a));
        sgemm_tiled<<<T * T, block>>>(A, B, C, N, order, group_m);
        CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b));
        float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
      }
      CHECK_LAUNCH();
      std::sort(t.begin(), t.end());
      float ms = t[t.size() / 2];
      std::printf("%d,%s,%d,%d,%.4f,%.3f,%.3e\n", N, order_name(order), order == 2 ? group_m : 0, TILE, ms,
                  2.0 * N * N * (double)N / (ms * 1e-3) / 1e12, maxerr);
      std::fflush(stdout);
    }
    CHECK(cudaFree(A)); CHECK(cudaFree(B)); CHECK(cudaFree(C));
  }
  return 0;
}
