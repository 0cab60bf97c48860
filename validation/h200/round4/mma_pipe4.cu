// Round 4 (issue 12): round 3's mma_pipe.cu (cp.async + ldmatrix + mma.sync, S = 1..4 stages, three tiles) with
//   * every timed launch written out (launch_rows: its own CUDA-event time and in-kernel clock), so the S sweep has
//     a per-configuration spread;
//   * a COPY = false twin of every variant: the same k-loop (barriers, cp.async.wait_group, ldmatrix, mma.sync) with
//     no copies after the prologue (the S stages are loaded once, then computed over and over): the compute phase
//     of a k-step alone, at the kernel's own occupancy -- what the model's issue term stands for;
//   * a loaded cp.async latency: every warp's lane 0 reads clock64 when it issues a group and when
//     cp.async.wait_group returns for that group; mean round trip per group against the bytes per clock the SM
//     moves, for 1..8 groups in flight, 1..4 blocks per SM, on one SM and on all 132 (SM path vs chip).
//
// ./mma_pipe4 check_time M,N,K   -> summary rows as round 3 (+ copy column) on stdout, every launch on stderr-free
//                                   file launches_M.csv (kernel,copy,stages,M,rep,time_ms,sm_mhz)
// ./mma_pipe4 loaded             -> kind,sms,blocks_per_sm,threads,groups,chunks,bytes,time_ms,sm_mhz,
//                                   bytes_per_clk_per_sm,lat_clk_mean,lat_clk_p50_warp,inflight_bytes_per_sm
//
// --- round 3's description follows ---
// Tensor-core pipeline (issue 12): a CUTLASS-2.x-style multistage GEMM, cp.async + ldmatrix + mma.sync
// m16n8k16 (fp16 inputs, fp32 accumulate), S = 1, 2, 3, 4 shared-memory stages, three tile shapes.
//
// C (M x N, fp32, row-major) = A (M x K, fp16, row-major) * B^T, B stored N x K row-major (both operands
// K-contiguous: the "TN" layout, so ldmatrix needs no transpose). M, N multiples of the tile, K of BK.
//
// Block tile BM x BN x BK (BK = 32), warps WM x WN, warp tile (BM/WM) x (BN/WN) = MI m16 x NI n8 MMA tiles.
// Shared memory per stage: A tile BM x (BK+8) and B tile BN x (BK+8) halves (rows padded by 16 B: ldmatrix
// rows 80 B apart, conflict-free), dynamic, S stages.
// Per k-step kt (KT = K/BK steps):
//   S >= 2: prologue issues the copies of k-steps 0..S-2 (one cp.async group each);
//           loop: cp.async.wait_group(S-2); __syncthreads(); issue the copy of k-step kt+S-1 into stage
//           (kt+S-1) % S (one group, possibly empty); compute stage kt % S.
//           So S-1 copies are in flight while a stage is computed.
//   S == 1: copy k-step kt; wait_group 0; __syncthreads(); compute; __syncthreads()  (no overlap).
// Copies: 16-byte cp.async.cg (L2 only) per thread, BM*BK/8 + BN*BK/8 chunks per stage spread over the block.
// Compute per stage: BK/16 k16-steps; per k16: MI ldmatrix.x4 (A), NI/2 ldmatrix.x4 (B), MI*NI mma.sync.
// Epilogue: each lane stores its accumulators as float2 (c0,c1) and (c2,c3) straight to C.
//
// ./mma_pipe check_time M,N,K ...   -> kernel,BM,BN,BK,warps,stages,smem_bytes,regs,blocks_per_sm,M,N,K,
//                                      time_ms,tflops,sm_mhz,tflops_at_1980,rel_err,nan_count,reps
//      verified against a simple fp32-accumulate GPU reference (same fp16 inputs), ||C-R||_F/||R||_F;
//      timed: 3 warm-ups, then 20 launches each timed by CUDA events, 1 ms host sleep between launches,
//      median; sm_mhz = median in-kernel clock (clk.h) of those launches.
// ./mma_pipe ncu M,N,K               -> one launch of every variant (for ncu stall reasons)
// ./mma_pipe sustain M,N,K SECONDS   -> back-to-back launches of the 128x128 8-warp S=3 kernel for SECONDS:
//                                      launch,t_s,time_ms,tflops,sm_mhz (each launch's own in-kernel clock)
// ./mma_pipe cpasync                 -> cp.async throughput: kind,footprint_bytes,grid,bytes,time_ms,GBps,
//                                      sm_mhz,bytes_per_clk_per_sm  (16-byte cp.async.cg, 6 per thread per
//                                      group, 4 groups in flight, 256 threads; L2: a 32 MiB buffer every block
//                                      re-reads; DRAM: disjoint slices of a 4 GiB buffer)
#include <cuda_fp16.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>
#include "clk.h"  // ../round3/clk.h (-I../round3)

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int BM, int BN, int BK, int WM, int WN, int S>
struct Cfg {
  static constexpr int NT = WM * WN * 32;
  static constexpr int LDS = BK + 8;
  static constexpr int WTM = BM / WM, WTN = BN / WN;
  static constexpr int MI = WTM / 16, NI = WTN / 8;
  static constexpr int STAGE_HALVES = (BM + BN) * LDS;
  static constexpr int SMEM = S * STAGE_HALVES * 2;
  static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0, "warp tile");
  static_assert(BK % 16 == 0, "BK");
};

template <int BM, int BN, int BK, int WM, int WN, int S, bool COPY>
__global__ void __launch_bounds__(WM * WN * 32)
mma_gemm(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int M, int N, int K, ClkRec* rec) {
  using G = Cfg<BM, BN, BK, WM, WN, S>;
  extern __shared__ __align__(16) half smem[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp % WM, wn = warp / WM;
  const int tiles_n = N / BN;
  const int bm = blockIdx.x / tiles_n, bn = blockIdx.x % tiles_n;  // row-major raster
  const half* Ab = A + (size_t)bm * BM * K;
  const half* Bb = B + (size_t)bn * BN * K;
  const int KT = K / BK;

  auto load_stage = [&](int s, int kt) {
    half* As = smem + s * G::STAGE_HALVES;
    half* Bs = As + BM * G::LDS;
    const int k0 = kt * BK;
    constexpr int CPR = BK / 8;  // 16-byte chunks per row
#pragma unroll
    for (int c = tid; c < BM * CPR; c += G::NT) {
      int r = c / CPR, cc = (c % CPR) * 8;
      cp_async16(As + r * G::LDS + cc, Ab + (size_t)r * K + k0 + cc);
    }
#pragma unroll
    for (int c = tid; c < BN * CPR; c += G::NT) {
      int r = c / CPR, cc = (c % CPR) * 8;
      cp_async16(Bs + r * G::LDS + cc, Bb + (size_t)r * K + k0 + cc);
    }
  };

  float acc[G::MI][G::NI][4];
#pragma unroll
  for (int i = 0; i < G::MI; ++i)
#pragma unroll
    for (int j = 0; j < G::NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  auto compute_stage = [&](int s) {
    const half* As = smem + s * G::STAGE_HALVES;
    const half* Bs = As + BM * G::LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[G::MI][4], bf[G::NI][2];
#pragma unroll
      for (int mi = 0; mi < G::MI; ++mi) {
        int r = wm * G::WTM + mi * 16 + (lane & 15);
        int c = kk + (lane >> 4) * 8;
        ldmatrix_x4(af[mi], As + r * G::LDS + c);
      }
#pragma unroll
      for (int nj = 0; nj < G::NI / 2; ++nj) {
        int r = wn * G::WTN + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
        int c = kk + ((lane >> 3) & 1) * 8;
        unsigned t[4];
        ldmatrix_x4(t, Bs + r * G::LDS + c);
        bf[2 * nj][0] = t[0]; bf[2 * nj][1] = t[1]; bf[2 * nj + 1][0] = t[2]; bf[2 * nj + 1][1] = t[3];
      }
#pragma unroll
      for (int mi = 0; mi < G::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < G::NI; ++ni) mma16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  };

  if constexpr (!COPY) {  // compute phase alone: load the S stages once, then the k-loop without copies
#pragma unroll
    for (int s = 0; s < S; ++s) load_stage(s, s < KT ? s : 0);
    cp_commit();
    cp_wait<0>();
    __syncthreads();
    for (int kt = 0; kt < KT; ++kt) {
      cp_wait<0>();
      __syncthreads();
      compute_stage(kt % S);
      if constexpr (S == 1) __syncthreads();
    }
  } else if constexpr (S == 1) {
    for (int kt = 0; kt < KT; ++kt) {
      load_stage(0, kt);
      cp_commit();
      cp_wait<0>();
      __syncthreads();
      compute_stage(0);
      __syncthreads();
    }
  } else {
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < KT) load_stage(s, s);
      cp_commit();
    }
    for (int kt = 0; kt < KT; ++kt) {
      cp_wait<S - 2>();
      __syncthreads();
      int nk = kt + S - 1;
      if (nk < KT) load_stage(nk % S, nk);
      cp_commit();
      compute_stage(kt % S);
    }
    cp_wait<0>();
  }

  const int row0 = bm * BM + wm * G::WTM, col0 = bn * BN + wn * G::WTN;
#pragma unroll
  for (int mi = 0; mi < G::MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < G::NI; ++ni) {
      int r = row0 + mi * 16 + (lane >> 2), c = col0 + ni * 8 + (lane & 3) * 2;
      *reinterpret_cast<float2*>(C + (size_t)r * N + c) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<float2*>(C + (size_t)(r + 8) * N + c) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  if (tid == 0) clk_store(rec, blockIdx.x, g0, c0);
}

// Reference: one thread per C element, fp32 accumulation of the same fp16 products.
__global__ void ref_gemm(const half* A, const half* B, float* C, int M, int N, int K) {
  int j = blockIdx.x * 16 + threadIdx.x, i = blockIdx.y * 16 + threadIdx.y;
  if (i >= M || j >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc = fmaf(__half2float(A[(size_t)i * K + k]), __half2float(B[(size_t)j * K + k]), acc);
  C[(size_t)i * N + j] = acc;
}

__global__ void init_half(half* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    x[i] = __float2half((h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

// cp.async throughput: each thread copies CPA_CH x 16 B per stage into its own smem slots, CPA_ST stages
// (cp.async groups) in flight; 96 KiB dynamic shared memory per block, so 2 blocks fit on an SM.
#define CPA_ST 4
#define CPA_CH 6
__global__ void __launch_bounds__(256) cpasync_bw(const int4* src, size_t wrap_chunks, int iters, int disjoint, ClkRec* rec, int* sink) {
  extern __shared__ __align__(16) int4 cbuf[];  // [CPA_ST][CPA_CH][256]
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x;
  size_t base = disjoint ? (size_t)blockIdx.x * iters * CPA_CH * 256 : 0;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < CPA_CH; ++j) {
      size_t ch = (base + ((size_t)it * CPA_CH + j) * 256 + tid) % wrap_chunks;
      cp_async16(&cbuf[((it % CPA_ST) * CPA_CH + j) * 256 + tid], src + ch);
    }
    cp_commit();
    cp_wait<CPA_ST - 1>();
  }
  cp_wait<0>();
  __syncthreads();
  if (cbuf[tid].x == 0x7fffffff) sink[0] = 1;
  if (tid == 0) clk_store(rec, blockIdx.x, g0, c0);
}

// Loaded cp.async latency: each thread copies CH x 16 B per group; ST groups in flight; lane 0 of each warp times
// each group from its issue to the return of the wait_group that guarantees it. Shared memory ST*CH*NT*16 bytes.
template <int ST, int CH>
__global__ void cpasync_lat(const int4* src, size_t wrap_chunks, int iters, int disjoint, ClkRec* rec,
                            unsigned long long* lat_sum, unsigned long long* lat_n, int* sink) {
  extern __shared__ __align__(16) int4 lbuf[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31;
  size_t base = disjoint ? (size_t)blockIdx.x * iters * CH * nt : (size_t)(blockIdx.x % 64) * 4096;
  unsigned long long t_issue[ST];
  unsigned long long sum = 0, n = 0;
  for (int it = 0; it < iters; ++it) {
    t_issue[it % ST] = clock64();
#pragma unroll
    for (int j = 0; j < CH; ++j) {
      size_t ch = (base + ((size_t)it * CH + j) * nt + tid) % wrap_chunks;
      cp_async16(&lbuf[((it % ST) * CH + j) * nt + tid], src + ch);
    }
    cp_commit();
    cp_wait<ST - 1>();  // group it - ST + 1 has landed
    int done = it - ST + 1;
    if (done >= 0 && it >= 2 * ST) {  // past the start-up
      sum += clock64() - t_issue[done % ST];
      ++n;
    }
  }
  cp_wait<0>();
  __syncthreads();
  if (lbuf[tid].x == 0x7fffffff) sink[0] = 1;
  if (lane == 0) { atomicAdd(lat_sum, sum); atomicAdd(lat_n, n); }
  if (tid == 0) clk_store(rec, blockIdx.x, g0, c0);
}

struct Variant {
  const char* name; int BM, BN, BK, warps, S, smem; bool copy;
  void (*fn)(const half*, const half*, float*, int, int, int, ClkRec*);
  const void* kernel;
};

template <int BM, int BN, int BK, int WM, int WN, int S, bool CP>
static void launch_v(const half* A, const half* B, float* C, int M, int N, int K, ClkRec* rec) {
  using G = Cfg<BM, BN, BK, WM, WN, S>;
  mma_gemm<BM, BN, BK, WM, WN, S, CP><<<(M / BM) * (N / BN), G::NT, G::SMEM>>>(A, B, C, M, N, K, rec);
}
#define V(BM, BN, WM, WN, S, CP) \
  Variant{"mma_" #BM "x" #BN "_w" #WM "x" #WN, BM, BN, 32, WM * WN, S, Cfg<BM, BN, 32, WM, WN, S>::SMEM, CP, \
          launch_v<BM, BN, 32, WM, WN, S, CP>, (const void*)mma_gemm<BM, BN, 32, WM, WN, S, CP>}
#define V4(BM, BN, WM, WN, CP) V(BM, BN, WM, WN, 1, CP), V(BM, BN, WM, WN, 2, CP), V(BM, BN, WM, WN, 3, CP), V(BM, BN, WM, WN, 4, CP)

static std::vector<Variant> variants() {
  return {V4(128, 128, 2, 4, true), V4(64, 64, 2, 2, true), V4(128, 128, 2, 2, true),
          V4(128, 128, 2, 4, false), V4(64, 64, 2, 2, false), V4(128, 128, 2, 2, false)};
}

template <int ST, int CH>
static float run_lat(const int4* src, size_t wrap, int grid, int nt, int iters, int disjoint, ClkRec* rec,
                     unsigned long long* d_ls, unsigned long long* d_ln, int* sink, double* lat) {
  const int smem = ST * CH * nt * 16;
  CHECK(cudaFuncSetAttribute((const void*)cpasync_lat<ST, CH>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaMemset(d_ls, 0, 8)); CHECK(cudaMemset(d_ln, 0, 8));
  cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  CHECK(cudaEventRecord(a));
  cpasync_lat<ST, CH><<<grid, nt, smem>>>(src, wrap, iters, disjoint, rec, d_ls, d_ln, sink);
  CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
  float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
  unsigned long long ls, ln; CHECK(cudaMemcpy(&ls, d_ls, 8, cudaMemcpyDeviceToHost)); CHECK(cudaMemcpy(&ln, d_ln, 8, cudaMemcpyDeviceToHost));
  *lat = ln ? (double)ls / ln : -1.0;
  CHECK(cudaEventDestroy(a)); CHECK(cudaEventDestroy(b));
  return ms;
}

static std::vector<int> parse(const char* s) {
  std::vector<int> v; std::stringstream ss(s); std::string t;
  while (std::getline(ss, t, ',')) v.push_back(std::stoi(t));
  return v;
}

int main(int argc, char** argv) {
  if (argc < 2) { std::fprintf(stderr, "usage: %s check_time|ncu|sustain|cpasync ...\n", argv[0]); return 1; }
  std::string mode = argv[1];
  ClkRec* rec = clk_alloc();
  auto vs = variants();
  for (auto& v : vs) CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));

  if (mode == "loaded") {
    std::printf("kind,sms,blocks_per_sm,threads,groups,chunks,bytes,time_ms,sm_mhz,bytes_per_clk_per_sm,lat_clk_mean,inflight_bytes_per_sm\n");
    size_t big = 4ull << 30;
    int4* src; CHECK(cudaMalloc(&src, big)); CHECK(cudaMemset(src, 1, big));
    int* sink; CHECK(cudaMalloc(&sink, 4));
    unsigned long long *d_ls, *d_ln; CHECK(cudaMalloc(&d_ls, 8)); CHECK(cudaMalloc(&d_ln, 8));
    for (int dram = 0; dram < 2; ++dram)
      for (int sms : {1, 132})
        for (int nt : {128, 256})
          for (int bps : {1, 2, 4})
            for (int st : {1, 2, 4, 8})
              for (int ch : {1, 4}) {
                if (st * ch * nt * 16 * bps > 200 * 1024) continue;  // must fit on the SM together
                // on one SM: one block of bps x nt threads (a small grid would spread its blocks over SMs); on all SMs
                // bps blocks of nt threads each (breadth-first dispatch puts bps on every SM)
                int grid = sms == 1 ? 1 : sms * bps, bt = sms == 1 ? nt * bps : nt;
                if (bt > 1024) continue;
                int iters = 2048;
                size_t foot = dram ? big : (32u << 20);
                if (dram && (size_t)grid * iters * ch * bt * 16 > big) iters = (int)(big / ((size_t)grid * ch * bt * 16));
                double lat = 0, lat_r = 0; std::vector<float> t; std::vector<double> mz, lats;
                for (int r = 0; r < 5; ++r) {
                  float ms;
                  switch (st * 10 + ch) {
                    case 11: ms = run_lat<1, 1>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 14: ms = run_lat<1, 4>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 21: ms = run_lat<2, 1>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 24: ms = run_lat<2, 4>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 41: ms = run_lat<4, 1>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 44: ms = run_lat<4, 4>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    case 81: ms = run_lat<8, 1>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                    default: ms = run_lat<8, 4>(src, foot / 16, grid, bt, iters, dram, rec, d_ls, d_ln, sink, &lat_r); break;
                  }
                  double m = clk_mhz(rec, grid);
                  if (r >= 1) { t.push_back(ms); mz.push_back(m); lats.push_back(lat_r); }
                }
                std::sort(t.begin(), t.end()); std::sort(mz.begin(), mz.end()); std::sort(lats.begin(), lats.end());
                double ms = t[t.size() / 2], m = mz[mz.size() / 2]; lat = lats[lats.size() / 2];
                double bytes = (double)grid * iters * ch * bt * 16;
                std::printf("%s,%d,%d,%d,%d,%d,%.0f,%.4f,%.0f,%.2f,%.1f,%d\n", dram ? "DRAM" : "L2", sms, bps, nt, st, ch, bytes, ms, m,
                            bytes / (ms * 1e-3) / (m * 1e6) / sms, lat, st * ch * nt * 16 * bps);
                std::fflush(stdout);
              }
    return 0;
  }

  if (mode == "cpasync") {
    std::printf("kind,footprint_bytes,grid,bytes,time_ms,GBps,sm_mhz,bytes_per_clk_per_sm\n");
    size_t big = 4ull << 30;
    int4* src; CHECK(cudaMalloc(&src, big)); CHECK(cudaMemset(src, 1, big));
    int* sink; CHECK(cudaMalloc(&sink, 4));
    const int CPA_SMEM = CPA_ST * CPA_CH * 256 * 16;
    CHECK(cudaFuncSetAttribute((const void*)cpasync_bw, cudaFuncAttributeMaxDynamicSharedMemorySize, CPA_SMEM));
    cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    struct C_ { const char* kind; size_t foot; int grid; int iters; int disjoint; };
    const C_ cs[] = {{"L2", 32u << 20, 1, 256, 0},   {"L2", 32u << 20, 132, 1024, 0}, {"L2", 32u << 20, 264, 1024, 0},
                     {"DRAM", big, 1, 256, 1},        {"DRAM", big, 132, 1024, 1},     {"DRAM", big, 264, 512, 1}};
    for (auto& c : cs) {
      size_t wrap = c.foot / 16;
      std::vector<float> t; std::vector<double> mhz;
      for (int r = 0; r < 7; ++r) {
        CHECK(cudaEventRecord(a));
        cpasync_bw<<<c.grid, 256, CPA_SMEM>>>(src, wrap, c.iters, c.disjoint, rec, sink);
        CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
        float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
        double m = clk_mhz(rec, c.grid);
        if (r >= 2) { t.push_back(ms); mhz.push_back(m); }
      }
      std::sort(t.begin(), t.end()); std::sort(mhz.begin(), mhz.end());
      double ms = t[t.size() / 2], mz = mhz[mhz.size() / 2];
      double bytes = (double)c.grid * c.iters * CPA_CH * 256 * 16;
      double sms = std::min(c.grid, 132);
      std::printf("%s,%zu,%d,%.0f,%.4f,%.1f,%.0f,%.2f\n", c.kind, c.foot, c.grid, bytes, ms, bytes / ms / 1e6, mz,
                  bytes / (ms * 1e-3) / (mz * 1e6) / sms);
      std::fflush(stdout);
    }
    return 0;
  }

  if (argc < 3) { std::fprintf(stderr, "need M,N,K\n"); return 1; }
  std::vector<int> mnk = parse(argv[2]);
  int M = mnk[0], N = mnk[1], K = mnk[2];
  size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
  half *A, *B; float *C, *R;
  CHECK(cudaMalloc(&A, na * 2)); CHECK(cudaMalloc(&B, nb * 2));
  CHECK(cudaMalloc(&C, nc * 4)); CHECK(cudaMalloc(&R, nc * 4));
  init_half<<<1024, 256>>>(A, na, 1234u ^ (unsigned)M); init_half<<<1024, 256>>>(B, nb, 5678u ^ (unsigned)N);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());

  if (mode == "ncu") {
    for (auto& v : vs) {
      v.fn(A, B, C, M, N, K, nullptr); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
      std::printf("ncu_launch,%s,copy=%d,S=%d\n", v.name, (int)v.copy, v.S);
    }
    return 0;
  }
  if (mode == "sustain") {
    double secs = argc > 3 ? std::atof(argv[3]) : 10.0;
    Variant* v = &vs[2];  // 128x128 8 warps S=3
    cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    std::printf("launch,t_s,time_ms,tflops,sm_mhz\n");
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0;; ++i) {
      CHECK(cudaEventRecord(a));
      v->fn(A, B, C, M, N, K, rec);
      CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
      float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
      double mhz = clk_mhz(rec, (M / v->BM) * (N / v->BN));
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%d,%.4f,%.4f,%.1f,%.0f\n", i, el, ms, 2.0 * M * N * (double)K / (ms * 1e-3) / 1e12, mhz);
      if (el > secs) break;
    }
    return 0;
  }

  // check_time
  ref_gemm<<<dim3(N / 16, M / 16), dim3(16, 16)>>>(A, B, R, M, N, K);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  std::vector<float> hR(nc), hC(nc);
  CHECK(cudaMemcpy(hR.data(), R, nc * 4, cudaMemcpyDeviceToHost));
  double rn = 0; for (float x : hR) rn += (double)x * x;
  std::printf("kernel,copy,BM,BN,BK,warps,stages,smem_bytes,regs,blocks_per_sm,M,N,K,time_ms,tflops,sm_mhz,tflops_at_1980,rel_err,nan_count,reps\n");
  char lname[64]; std::snprintf(lname, sizeof lname, "launches_%d.csv", M);
  FILE* lf = std::fopen(lname, "w");
  std::fprintf(lf, "kernel,copy,stages,M,N,K,rep,time_ms,sm_mhz\n");
  cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  for (auto& v : vs) {
    if (M % v.BM || N % v.BN || K % v.BK) continue;
    cudaFuncAttributes fa; CHECK(cudaFuncGetAttributes(&fa, v.kernel));
    int bps = 0; CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, v.kernel, v.warps * 32, v.smem));
    CHECK(cudaMemset(C, 0xFF, nc * 4));  // poison: NaN
    v.fn(A, B, C, M, N, K, nullptr); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hC.data(), C, nc * 4, cudaMemcpyDeviceToHost));
    double en = 0; long nan = 0;
    for (size_t i = 0; i < nc; ++i) { if (!std::isfinite(hC[i])) { ++nan; continue; } double d = (double)hC[i] - hR[i]; en += d * d; }
    double rel = v.copy ? std::sqrt(en / rn) : NAN;  // the copy-less twin computes the first S stages over and over
    if (!v.copy) nan = -1;
    for (int w = 0; w < 3; ++w) v.fn(A, B, C, M, N, K, nullptr);
    CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    const int reps = 20;
    std::vector<float> t; std::vector<double> mhz;
    int blocks = (M / v.BM) * (N / v.BN);
    for (int r = 0; r < reps; ++r) {
      usleep(1000);
      CHECK(cudaEventRecord(a));
      v.fn(A, B, C, M, N, K, rec);
      CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
      float ms; CHECK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
      mhz.push_back(clk_mhz(rec, blocks));
      std::fprintf(lf, "%s,%d,%d,%d,%d,%d,%d,%.5f,%.0f\n", v.name, (int)v.copy, v.S, M, N, K, r, ms, mhz.back());
    }
    std::sort(t.begin(), t.end()); std::sort(mhz.begin(), mhz.end());
    double ms = t[reps / 2], mz = mhz[reps / 2];
    double tf = 2.0 * M * N * (double)K / (ms * 1e-3) / 1e12;
    std::printf("%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.1f,%.0f,%.1f,%.3e,%ld,%d\n", v.name, (int)v.copy, v.BM, v.BN, v.BK, v.warps,
                v.S, v.smem, fa.numRegs, bps, M, N, K, ms, tf, mz, tf * 1980.0 / mz, rel, nan, reps);
    std::fflush(stdout);
  }
  std::fclose(lf);
  return 0;
}
