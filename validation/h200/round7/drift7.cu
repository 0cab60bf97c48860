// Round 7 (issue 11): when does the naive 16x16 SGEMM leave lockstep? Block-start traces of round 3's naive kernel
// (../round3/order.cu, same indexing and order), in row and column order at N = 5120 ... 7168, and with one operand
// stored transposed: TA = A column-major (A(row, k) = A[k*N + row]), TB = B column-major (B(k, col) = B[col*N + k]).
// In column order the operand re-read from DRAM is A; row-major A is read down its columns (16 rows, one sector each,
// N*4 bytes apart), column-major A along a row (64 contiguous bytes per k, like B in row order). If the layout of
// the re-read operand decides the drift, column+TA holds lockstep and row+TB drifts.
// Round 7d: TA = 2 / TB = 2 keep the layouts row-major but wrap A's rows / B's rows every 64 (A(row, k) =
// A[(row % 64)*N + k], B(k, col) = B[(k % 64)*N + col]): that operand then lives in L2 for the whole launch and
// every block's loads of it hit there, so its DRAM traffic, and any sharing of it between blocks, is gone.
//
// Usage: ./drift7 N order ta tb   -> trace rows pid,smid,start_ns,end_ns on stdout (times from the first block start);
//                                    on stderr: the launch's SM clock (clk.h) and the check of 64 elements of C.
#include <string>
#include "naive_host.h"

template <int TA, int TB>
__global__ void __launch_bounds__(256)
naive16t(const float* A, const float* B, float* C, int N, int order, ClkRec* rec, unsigned long long* trace) {
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  int tm, tn;
  naive_tile(N, order, tm, tn);
  const int row = tm * 16 + threadIdx.y, col = tn * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k = 0; k < N; ++k) {
    const float a = TA == 1 ? A[(size_t)k * N + row] : A[(size_t)(TA == 2 ? row & 63 : row) * N + k];
    const float b = TB == 1 ? B[(size_t)col * N + k] : B[(size_t)(TB == 2 ? k & 63 : k) * N + col];
    acc += a * b;
  }
  C[(size_t)row * N + col] = acc;
  naive_record(rec, trace, g0, c0);
}

static void launch(int ta, int tb, const float* A, const float* B, float* C, int N, int order, ClkRec* rec,
                   unsigned long long* tr) {
  int T = N / 16;
  dim3 g(T * T), b(16, 16);
  if (!ta && !tb) naive16t<0, 0><<<g, b>>>(A, B, C, N, order, rec, tr);
  else if (ta == 1 && !tb) naive16t<1, 0><<<g, b>>>(A, B, C, N, order, rec, tr);
  else if (!ta && tb == 1) naive16t<0, 1><<<g, b>>>(A, B, C, N, order, rec, tr);
  else if (ta == 2 && !tb) naive16t<2, 0><<<g, b>>>(A, B, C, N, order, rec, tr);
  else if (!ta && tb == 2) naive16t<0, 2><<<g, b>>>(A, B, C, N, order, rec, tr);
  else if (ta == 1 && tb == 1) naive16t<1, 1><<<g, b>>>(A, B, C, N, order, rec, tr);
}

int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "usage: %s N row|column ta tb  (ta/tb: 0 row-major, 1 column-major, 2 rows wrapped every 64)\n", argv[0]); return 1; }
  const int N = std::atoi(argv[1]), order = std::string(argv[2]) == "column" ? 1 : 0;
  const int ta = std::atoi(argv[3]), tb = std::atoi(argv[4]);
  if (N % 16) { std::fprintf(stderr, "N must be a multiple of 16\n"); return 1; }
  if (ta < 0 || tb < 0 || ta > 2 || tb > 2 || (ta == 2 && tb) || (tb == 2 && ta)) {
    std::fprintf(stderr, "ta tb: 0 or 1 each, or 2 0, or 0 2\n"); return 1;
  }
  NaiveRun r = naive_setup(N);
  launch(ta, tb, r.A, r.B, r.C, N, order, nullptr, r.tr);  // warm-up
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemset(r.C, 0xFF, r.n * 4));
  launch(ta, tb, r.A, r.B, r.C, N, order, r.rec, r.tr);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  const double mhz = naive_fetch(r);
  const double maxerr = naive_check(  // C(i, j) against float64 with the stored layouts
      r, [&](int i, int k) { return ta == 1 ? (size_t)k * N + i : (size_t)(ta == 2 ? i & 63 : i) * N + k; },
      [&](int k, int j) { return tb == 1 ? (size_t)j * N + k : (size_t)(tb == 2 ? k & 63 : k) * N + j; });
  std::fprintf(stderr, "launch,%d,%s,%d,%d,sm_mhz=%.0f,max_rel_err=%.3e,span_ms=%.3f\n", N, argv[2], ta, tb, mhz, maxerr,
               naive_span_ms(r));
  naive_print_trace(r);
  return 0;
}
