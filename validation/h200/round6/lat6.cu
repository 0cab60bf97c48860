// Round 6 (issue 12): latencies of the instructions the mma_pipe GEMMs' copy code is made of, and the issue cost of
// cp.async, on the H200. One warp alone on one SM (grid 1, 32 threads) unless said otherwise.
//
// Each test is a straight-line sandwich CS2R SR_CLOCKLO; <N dependent instructions>; CS2R SR_CLOCKLO, run REPS times
// in a loop (the first pass pays instruction-cache misses; the host keeps the median of the later ones):
//   clk       the clock pair alone (subtract from every test)
//   iadd3     IADD3 x = a + x + b           (ALU)
//   lop3      LOP3.LUT x = x ^ a ^ b         (ALU)
//   shf       SHF.R.S32.HI x = x >> a        (ALU)
//   imad      IMAD x = x * a + b             (FMA-side integer multiply-add)
//   imadwide  IMAD.WIDE x64 = lo(x64) * a + x64   (the 64-bit address step of the copy code)
//   iadd64    x64 += y64: IADD3 + IADD3.X / IMAD.X (carry)
//   lea64     x64 = (x64 << 1) + b64: LEA + LEA.HI.X (the copy code's address scaling)
//   ldc       LDC x = c[0x3][x]: dependent indexed constant loads (constant cache hit)
//   s2ur_smid one S2UR v, SR_VIRTUALSMID; VIADD x += v (the uniform form): the add issues when the S2R's result is there, the second clock
//             read after it (in order), so the sandwich less `clk` is the S2R latency + 1 issue (%smid and %warpid are
//             volatile special registers, so ptxas keeps the read inside; SR_TID.X would be hoisted out)
//   s2r_warp  the same with S2R SR_VIRTID (%warpid) and its SHF/SGXT field extraction
//   bra       ISETP p = (x == b); @p BRA (never taken) over 11 dependent ALU ops: against 11 x the ALU chain, the
//             cost of compare -> branch
//   ldc_uniform  LDC u = c[0x3][u] with the same index in every lane (the GEMMs' LDC read one address; `ldc` above
//             has 32 different addresses per instruction, which the constant cache serialises)
//   bra_taken as `bra` but the branch is always taken (over 11 ALU ops), then 11 ALU ops: against 11 x the ALU chain
//   bra_early as `bra` with the compare issued 8 independent ALU ops before its branch: the branch's own cost
//   pred      ISETP p = (x != b); @p IADD3 x += a (always executed): compare -> predicated consumer, per link
//   ldgsts    8 cp.async.cg 16-byte copies from one warp, addresses in registers before the clock:
//             per-copy issue cost; with 1..32 warps per SM (one block), each warp timing its own burst; lane t reads
//             chunk t x 8 + c: 32 lines per instruction
//   ldgsts_gemm  the same with mma_pipe's pattern (8 rows of 64 bytes, 8 KiB apart, per instruction), 4 or 8 copies
// Output (stdout): test,warps,n_per_sandwich,rep,cycles (lane 0 of every warp, every rep)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "clk.h"  // ../round3/clk.h (-I../round3): CHECK, clock helpers

#define N 32
#define REPS 9

__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}
__constant__ unsigned cnext[64];

template <int T>
__global__ void lat(unsigned a_, unsigned b_, unsigned long long* out, unsigned long long* sink, unsigned zero) {
  // operands differ per thread so that ptxas keeps them in the vector (per-thread) datapath
  unsigned a = a_ ^ (threadIdx.x & 1), b = b_ + (threadIdx.x >> 6), x = threadIdx.x * 7u + 3u;
  unsigned long long w = ((unsigned long long)x << 32) | (x * 13u), y = w * 3u + b;
  unsigned u = (threadIdx.x & zero) + a_, y2 = b ^ threadIdx.x;  // the same value in every lane (zero = 0 at run time), in a vector register
#pragma unroll 1
  for (int r = 0; r < REPS; ++r) {
    unsigned long long t0 = clk();
    if constexpr (T == 0) {
    } else if constexpr (T == 1) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("{.reg .u32 s; add.u32 s, %0, %1; add.u32 %0, s, %2;}" : "+r"(x) : "r"(a), "r"(b));
    } else if constexpr (T == 2) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(x) : "r"(a), "r"(b));
    } else if constexpr (T == 3) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("shr.s32 %0, %0, %1;" : "+r"(x) : "r"(a));
    } else if constexpr (T == 4) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(a), "r"(b));
    } else if constexpr (T == 5) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm volatile("{.reg .u32 lo; cvt.u32.u64 lo, %0; mad.wide.s32 %0, lo, %1, %0;}" : "+l"(w) : "r"(a));
    } else if constexpr (T == 6) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("add.s64 %0, %0, %1;" : "+l"(w) : "l"(y));
    } else if constexpr (T == 7) {
#pragma unroll
      for (int i = 0; i < N; ++i) asm volatile("{.reg .u64 s; shl.b64 s, %0, 1; add.s64 %0, s, %1;}" : "+l"(w) : "l"(y));
    } else if constexpr (T == 8) {
#pragma unroll
      for (int i = 0; i < N; ++i) x = cnext[(x >> 2) & 63];
    } else if constexpr (T == 9) {
      asm volatile("{.reg .u32 v; mov.u32 v, %%smid; add.u32 %0, %0, v;}" : "+r"(x));
    } else if constexpr (T == 10) {
      asm volatile("{.reg .u32 v; mov.u32 v, %%warpid; add.u32 %0, %0, v;}" : "+r"(x));
    } else if constexpr (T == 12) {
#pragma unroll
      for (int i = 0; i < N; ++i) u = cnext[(u >> 2) & 63];
    } else if constexpr (T == 13) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm volatile("{.reg .pred p; setp.ne.u32 p, %0, %2; @p bra L%=; add.u32 %0, %0, %1;\n"
                     "xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2;\n"
                     "add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1;\n"
                     "L%=: add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1;\n"
                     "xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2;\n"
                     "add.u32 %0, %0, %1; }" : "+r"(x) : "r"(a), "r"(b));
    } else if constexpr (T == 14) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm volatile("{.reg .pred p; setp.eq.u32 p, %0, %2;\n"
                     "add.u32 %1, %1, %2; xor.b32 %1, %1, %2; add.u32 %1, %1, %2; xor.b32 %1, %1, %2;\n"
                     "add.u32 %1, %1, %2; xor.b32 %1, %1, %2; add.u32 %1, %1, %2; xor.b32 %1, %1, %2;\n"
                     "@p bra L%=; add.u32 %0, %0, %2;\n"
                     "xor.b32 %0, %0, %2; add.u32 %0, %0, %2; xor.b32 %0, %0, %2; add.u32 %0, %0, %2; xor.b32 %0, %0, %2;\n"
                     "add.u32 %0, %0, %2; xor.b32 %0, %0, %2; add.u32 %0, %0, %2; xor.b32 %0, %0, %2; add.u32 %0, %0, %2;\n"
                     "L%=: }" : "+r"(x), "+r"(y2) : "r"(b));
    } else if constexpr (T == 15) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm volatile("{.reg .pred p; setp.ne.u32 p, %0, %2; @p add.u32 %0, %0, %1;}" : "+r"(x) : "r"(a), "r"(b));
    } else if constexpr (T == 11) {
#pragma unroll
      for (int i = 0; i < N; ++i)
        asm volatile("{.reg .pred p; setp.eq.u32 p, %0, %2; @p bra L%=; add.u32 %0, %0, %1;\n"
                     "xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2;\n"
                     "add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1; xor.b32 %0, %0, %2; add.u32 %0, %0, %1;\n"
                     "L%=: }" : "+r"(x) : "r"(a), "r"(b));
    }
    unsigned long long t1 = clk();
    if ((threadIdx.x & 31) == 0) out[(threadIdx.x >> 5) * REPS + r] = t1 - t0;
  }
  sink[threadIdx.x] = x + w + u + y2;
}

// cp.async issue: every warp times a burst of NC 16-byte copies (addresses computed before the clock)
#define NC 8
template <int NCH, int GEMM>
__global__ void ldgsts(const int4* __restrict__ src, unsigned long long* out, unsigned long long* sink) {
  extern __shared__ __align__(16) int4 buf[];  // [warps][NC][32]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  unsigned s[NCH];
  const int4* g[NCH];
#pragma unroll
  for (int c = 0; c < NCH; ++c) {
    s[c] = (unsigned)__cvta_generic_to_shared(&buf[(warp * NCH + c) * 32 + lane]);
    // GEMM = 0: lane t of the warp reads chunk (tid * NCH + c): 32 lines per instruction. GEMM = 1: as mma_pipe's
    // load_stage with BK = 32 halves, K = 4096: 4 lanes per 64-byte row segment, 8 rows 8 KiB apart (8 lines, 16 sectors)
    size_t ch = GEMM ? ((size_t)((warp * NCH + c) * 8 + (lane >> 2)) * 512 + (lane & 3)) : ((size_t)tid * NCH + c);
    g[c] = src + ch % (1u << 20);
    asm volatile("" : "+r"(s[c]), "+l"(g[c]));  // pinned in registers before the clock
  }
  for (int r = 0; r < REPS; ++r) {
    __syncthreads();
    unsigned long long t0 = clk();
#pragma unroll
    for (int c = 0; c < NCH; ++c) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s[c]), "l"(g[c]) : "memory");
    unsigned long long t1 = clk();
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
    if (lane == 0) out[warp * REPS + r] = t1 - t0;
  }
  if (buf[tid].x == 0x7fffffff) sink[0] = 1;
}

template <int T>
static void run(const char* name, unsigned long long* d_out, unsigned long long* sink) {
  lat<T><<<1, 32>>>(3u, 5u, d_out, sink, 0u);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> h(REPS);
  CHECK(cudaMemcpy(h.data(), d_out, REPS * 8, cudaMemcpyDeviceToHost));
  int n = T == 0 ? 0 : (T == 9 || T == 10) ? 1 : N;
  for (int r = 0; r < REPS; ++r) std::printf("%s,1,%d,%d,%llu\n", name, n, r, h[r]);
}

int main() {
  unsigned long long *d_out, *sink;
  CHECK(cudaMalloc(&d_out, 64 * REPS * 8)); CHECK(cudaMalloc(&sink, 1024 * 8));
  unsigned hc[64];
  for (int i = 0; i < 64; ++i) hc[i] = (unsigned)(((i * 37 + 11) % 64) * 4);  // a permutation, as byte offsets
  CHECK(cudaMemcpyToSymbol(cnext, hc, sizeof hc));
  std::printf("test,warps,n_per_sandwich,rep,cycles\n");
  run<0>("clk", d_out, sink);
  run<1>("iadd3", d_out, sink);
  run<2>("lop3", d_out, sink);
  run<3>("shf", d_out, sink);
  run<4>("imad", d_out, sink);
  run<5>("imadwide", d_out, sink);
  run<6>("iadd64", d_out, sink);
  run<7>("lea64", d_out, sink);
  run<8>("ldc", d_out, sink);
  run<9>("s2ur_smid", d_out, sink);
  run<10>("s2r_warp", d_out, sink);
  run<11>("bra", d_out, sink);
  run<12>("ldc_uniform", d_out, sink);
  run<13>("bra_taken", d_out, sink);
  run<14>("bra_early", d_out, sink);
  run<15>("pred", d_out, sink);
  int4* src; CHECK(cudaMalloc(&src, 16u << 20)); CHECK(cudaMemset(src, 1, 16u << 20));
  auto burst = [&](const char* name, auto kern, int nch) {
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, 32 * nch * 32 * 16));
    for (int warps : {1, 2, 4, 8, 16, 32}) {
      kern<<<1, warps * 32, warps * nch * 32 * 16>>>(src, d_out, sink);
      CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
      std::vector<unsigned long long> h(warps * REPS);
      CHECK(cudaMemcpy(h.data(), d_out, h.size() * 8, cudaMemcpyDeviceToHost));
      for (int w = 0; w < warps; ++w)
        for (int r = 0; r < REPS; ++r) std::printf("%s,%d,%d,%d,%llu\n", name, warps, nch, r, h[w * REPS + r]);
    }
  };
  burst("ldgsts", ldgsts<NC, 0>, NC);
  burst("ldgsts_gemm", ldgsts<4, 1>, 4);
  burst("ldgsts_gemm", ldgsts<8, 1>, 8);
  return 0;
}
