// Round 24 (issue 11): the tiled 32 x 32 SGEMM of ../round3/order.cu (unchanged apart from a row stride `ld`) at
// N x N fp32, row or column block order, with the operands placed three ways:
//   sep:  three cudaMalloc's, A, B, C (as round 3);
//   swap: one buffer, B first, then A, then C (each at a 2 MiB boundary);
//   pad:  as sep, rows ld = N + 32 floats apart (a row stride that is not a multiple of 4 KiB);
//   randS (S = 1, 2, ...): one buffer of 8 slots, each the matrix size rounded up to 2 MiB plus 8 MiB; A, B and C in
//         three slots of a permutation drawn with seed S, each 0-3 2 MiB pages into its slot (same seed).
// Usage: ./asym24 N order(row|column) layout(sep|swap|pad|randS)  -> one warm-up launch, then one launch whose clock and
// 64 checked elements of C (against float64 on the host) go to stderr as
//   launch,N,order,layout,ld,sm_mhz,max_rel_err,ms
// Run it under ncu with --launch-skip 1 --launch-count 1 for the second launch's counters. A fifth argument `naive`
// runs round 3's naive 16 x 16 kernel instead (round 24c); its launch line's layout reads e.g. `sep_naive`.
#include <algorithm>
#include <cmath>
#include <random>
#include <cstdio>
#include <string>
#include <vector>
#include "../round3/clk.h"
#include "../tile32.h"

#define TILE 32
__global__ void __launch_bounds__(1024, 2)
tiled32(const float* A, const float* B, float* C, int N, int ld, int order, ClkRec* rec) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int T = N / TILE;
  int tm, tn;
  if (order == 0) { tm = blockIdx.x / T; tn = blockIdx.x % T; } else { tn = blockIdx.x / T; tm = blockIdx.x % T; }
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = tm * TILE + ty, col = tn * TILE + tx;
  const float acc = tiled_dot<TILE>(A, B, As, Bs, row, col, N, ld);
  C[(size_t)row * ld + col] = acc;
  if (tx == 0 && ty == 0) clk_store(rec, blockIdx.x, g0, c0);
}

// Round 24c: round 3's naive 16 x 16 kernel (order.cu), with the same row stride and placements.
__global__ void __launch_bounds__(256)
naive16(const float* A, const float* B, float* C, int N, int ld, int order, ClkRec* rec) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int T = N / 16;
  int tm, tn;
  if (order == 0) { tm = blockIdx.x / T; tn = blockIdx.x % T; } else { tn = blockIdx.x / T; tm = blockIdx.x % T; }
  const int row = tm * 16 + threadIdx.y, col = tn * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < N; ++k) acc += A[(size_t)row * ld + k] * B[(size_t)k * ld + col];
  C[(size_t)row * ld + col] = acc;
  if (threadIdx.x == 0 && threadIdx.y == 0) clk_store(rec, blockIdx.x, g0, c0);
}

__global__ void init_kernel(float* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    x[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: %s N row|column sep|swap|pad|randS [naive]\n", argv[0]); return 1; }
  const bool naive = argc > 4 && std::string(argv[4]) == "naive";
  const int N = std::atoi(argv[1]);
  const int order = std::string(argv[2]) == "column" ? 1 : 0;
  const std::string layout = argv[3];
  if (N % TILE) { std::fprintf(stderr, "N must be a multiple of 32\n"); return 1; }
  const int ld = layout == "pad" ? N + 32 : N;
  const size_t n = (size_t)N * ld, bytes = n * 4, two_mib = 2u << 20, span = (bytes + two_mib - 1) / two_mib * two_mib;
  float *A, *B, *C, *buf = nullptr;
  if (layout == "swap") {
    CHECK(cudaMalloc(&buf, 3 * span));
    B = buf; A = (float*)((char*)buf + span); C = (float*)((char*)buf + 2 * span);
  } else if (layout.rfind("rand", 0) == 0) {
    const size_t stride = span + 4 * two_mib;  // a slot: the matrix and room to move it by up to 3 pages
    CHECK(cudaMalloc(&buf, 8 * stride));
    std::mt19937 rng(std::atoi(layout.c_str() + 4));
    int slot[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    std::shuffle(slot, slot + 8, rng);
    float* p[3];
    for (int i = 0; i < 3; ++i) p[i] = (float*)((char*)buf + slot[i] * stride + (rng() % 4) * two_mib);
    A = p[0]; B = p[1]; C = p[2];
  } else {
    CHECK(cudaMalloc(&A, bytes)); CHECK(cudaMalloc(&B, bytes)); CHECK(cudaMalloc(&C, bytes));
  }
  init_kernel<<<1024, 256>>>(A, n, 12345u); init_kernel<<<1024, 256>>>(B, n, 67890u);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  ClkRec* rec = clk_alloc();
  const int T = N / TILE, T16 = N / 16;
  auto launch = [&](ClkRec* r) {
    if (naive) naive16<<<T16 * T16, dim3(16, 16)>>>(A, B, C, N, ld, order, r);
    else tiled32<<<T * T, dim3(32, 32)>>>(A, B, C, N, ld, order, r);
  };
  launch(nullptr);  // warm-up
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  CHECK(cudaMemset(C, 0, bytes));
  CHECK(cudaEventRecord(e0));
  launch(rec);
  CHECK(cudaEventRecord(e1));
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  float ms = 0; CHECK(cudaEventElapsedTime(&ms, e0, e1));
  const double mhz = clk_mhz(rec, naive ? T16 * T16 : T * T);
  std::vector<float> hA(n), hB(n), hC(n);
  CHECK(cudaMemcpy(hA.data(), A, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hB.data(), B, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hC.data(), C, bytes, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  for (int s = 0; s < 64; ++s) {
    const int i = (s * 977) % N, j = (s * 1543 + 11) % N;
    double ref = 0, mag = 0;
    for (int k = 0; k < N; ++k) { ref += (double)hA[(size_t)i * ld + k] * hB[(size_t)k * ld + j]; mag += std::fabs((double)hA[(size_t)i * ld + k] * hB[(size_t)k * ld + j]); }
    maxerr = std::fmax(maxerr, std::fabs(hC[(size_t)i * ld + j] - ref) / mag);
  }
  std::fprintf(stderr, "launch,%d,%s,%s%s,%d,sm_mhz=%.0f,max_rel_err=%.3e,ms=%.3f,A=%p,B=%p,C=%p\n", N, argv[2], layout.c_str(), naive ? "_naive" : "", ld,
               mhz, maxerr, ms, (void*)A, (void*)B, (void*)C);
  return maxerr < 1e-5 ? 0 : 2;
}
