// Round 12 (issue 11): does the stagger of blocks that share no per-step line come from how co-resident blocks share
// an SM? Round 7d's naive 16x16 SGEMM (../round7/drift7.cu, same indexing and orders) with B's rows wrapped every 64
// (tb = 2: the operand with a new line every k step L2-resident, so nothing ties blocks together) and, optionally, A's
// too (ta = 2); dynamic shared memory (unused) caps the resident blocks per SM at 1 ... 8.
//
// Round 12b: tb = 3 is tb = 2 with B read past L1 (ld.global.cg), tb = 4 the original B (not wrapped) read past L1.
//
// Round 12c: a 7th argument ex = 16 or 32 adds that many FMAs per k step (original A and B): the same memory
// accesses with more work for the SM. Round 14 (../round14) adds ex = 4 and 8 (new instantiations; the others'
// code is unchanged).
//
// Usage: ./drift12 N order ta tb bps carve [ex]
//   bps: blocks per SM wanted (1..8; 8 = no dynamic shared memory); carve: the shared-memory carve-out in percent
//   (cudaFuncAttributePreferredSharedMemoryCarveout; -1 leaves the driver's choice).
//   stdout: pid,smid,start_ns,end_ns per block (times from the first block start);
//   stderr: one line with the launch's SM clock (../round3/clk.h), the blocks per SM the occupancy API gives, the
//   dynamic shared memory, and the check of 64 elements of C against float64.
#include <string>
#include "../round7/naive_host.h"

template <int TA, int TB, int EX = 0>
__global__ void __launch_bounds__(256)
naive16w(const float* A, const float* B, float* C, int N, int order, ClkRec* rec, unsigned long long* trace) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  int tm, tn;
  naive_tile(N, order, tm, tn);
  const int row = tm * 16 + threadIdx.y, col = tn * 16 + threadIdx.x;
  float acc = 0.f;
  float x[8];  // 12c: EX extra FMAs per k step on 8 bounded chains (x <- 0.999 x + b), kept by C's tiny share
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] = 0.1f * j;
  for (int k = 0; k < N; ++k) {
    const float a = A[(size_t)(TA == 2 ? row & 63 : row) * N + k];
    const size_t bi = (size_t)(TB == 2 || TB == 3 ? k & 63 : k) * N + col;
    const float b = TB >= 3 ? __ldcg(B + bi) : B[bi];  // 12b: tb 3 / 4 read B past L1 (ld.global.cg)
    acc += a * b;
#pragma unroll
    for (int j = 0; j < EX; ++j) x[j & 7] = fmaf(x[j & 7], 0.999f, b);
  }
  if (EX) {
    float xs = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) xs += x[j];
    acc += 1e-30f * xs;  // |xs| <= 8000: changes C by < 1e-26, below the check's tolerance
  }
  C[(size_t)row * N + col] = acc;
  naive_record(rec, trace, g0, c0);
}

typedef void (*Kern)(const float*, const float*, float*, int, int, ClkRec*, unsigned long long*);

int main(int argc, char** argv) {
  if (argc < 7) { std::fprintf(stderr, "usage: %s N row|column ta tb bps carve  (ta tb: 0 2 or 2 2)\n", argv[0]); return 1; }
  const int N = std::atoi(argv[1]), order = std::string(argv[2]) == "column" ? 1 : 0;
  const int ta = std::atoi(argv[3]), tb = std::atoi(argv[4]), bps = std::atoi(argv[5]), carve = std::atoi(argv[6]);
  if (N % 16) { std::fprintf(stderr, "N must be a multiple of 16\n"); return 1; }
  Kern k = nullptr;
  if (ta == 0 && tb == 2) k = naive16w<0, 2>;
  else if (ta == 2 && tb == 2) k = naive16w<2, 2>;
  else if (ta == 0 && tb == 0) k = naive16w<0, 0>;
  else if (ta == 0 && tb == 3) k = naive16w<0, 3>;
  else if (ta == 0 && tb == 4) k = naive16w<0, 4>;
  const int ex = argc > 7 ? std::atoi(argv[7]) : 0;  // 12c: extra FMAs per k step (original B and A only)
  if (ex && !(ta == 0 && tb == 0 && (ex == 4 || ex == 8 || ex == 16 || ex == 32))) {
    std::fprintf(stderr, "ex: 4, 8, 16 or 32, with ta tb 0 0\n"); return 1; }
  if (ex == 4) k = naive16w<0, 0, 4>;
  if (ex == 8) k = naive16w<0, 0, 8>;
  if (ex == 16) k = naive16w<0, 0, 16>;
  if (ex == 32) k = naive16w<0, 0, 32>;
  if (!k || bps < 1 || bps > 8) { std::fprintf(stderr, "ta tb: 0 0, 0 2, 2 2, 0 3 or 0 4; bps 1..8\n"); return 1; }
  if (carve >= 0) CHECK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, carve));
  int smem = 0, got = 0;
  if (bps < 8) {  // the most dynamic shared memory that still fits bps blocks (the API decides), 1 KiB steps
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    for (smem = 227 * 1024; smem > 0; smem -= 1024) {
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, k, 256, smem));
      if (got >= bps) break;
    }
  }
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got, k, 256, smem));
  NaiveRun r = naive_setup(N);
  dim3 g(r.nb), b(16, 16);
  k<<<g, b, smem>>>(r.A, r.B, r.C, N, order, nullptr, r.tr);  // warm-up
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemset(r.C, 0xFF, r.n * 4));
  k<<<g, b, smem>>>(r.A, r.B, r.C, N, order, r.rec, r.tr);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  const double mhz = naive_fetch(r);
  const double maxerr = naive_check(  // C(i, j) against float64 with the wrapped indices
      r, [&](int i, int kk) { return (size_t)(ta == 2 ? i & 63 : i) * N + kk; },
      [&](int kk, int j) { return (size_t)(tb == 2 || tb == 3 ? kk & 63 : kk) * N + j; });
  std::fprintf(stderr, "launch,%d,%s,%d,%d,bps=%d,carve=%d,api_bps=%d,smem=%d,sm_mhz=%.0f,max_rel_err=%.3e,span_ms=%.3f%s\n",
               N, argv[2], ta, tb, bps, carve, got, smem, mhz, maxerr, naive_span_ms(r),
               ex ? (",ex=" + std::to_string(ex)).c_str() : "");
  naive_print_trace(r);
  return 0;
}
