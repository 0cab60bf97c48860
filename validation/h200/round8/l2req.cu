// Round 8 (issue 12): what L2 throughput 16-byte cp.async traffic from all SMs reaches, by request size, layout,
// footprint and bytes in flight -- a copy-only kernel with the mma_pipe GEMMs' tile walk (no MMA, no ldmatrix, the
// source addresses in registers before the loop: the only work in the k-loop is the copies, their wait and barrier).
//
// tilecopy<NT, S, CH>: one block per (BM x BN) output tile, row-major raster over the tiles (mma_pipe's
//   blockIdx.x / tiles_n, % tiles_n). Each k-step copies the block's A tile and B tile, each BM x 64 bytes
//   (mma_pipe: BM rows x BK = 32 halves), CH 16-byte chunks per thread per operand, into stage kt % S; the loop is
//   mma_pipe's: S >= 2: prologue of S-1 groups; per step cp.async.wait_group S-2, __syncthreads, copy of step
//   kt+S-1, commit. S = 1: copy, commit, wait_group 0, __syncthreads, __syncthreads.
//   Layout of an operand (M x K halves, M = rows of all panels; same bytes and the same reuse in every layout):
//     rows RB (RB = 32, 64, 128): the tile is BM*64/RB rows of RB bytes, row pitch K*2*RB/64 bytes, step kt at
//       byte kt*RB of its rows. RB = 64 is mma_pipe's (A, B row-major with K contiguous): one 64-byte piece of a
//       128-byte line per row, i.e. one L2 request of 2 sectors per row; RB = 32 -> 1 sector, RB = 128 -> 4.
//     tiled: the (panel, step) tile contiguous (BM*64 bytes): a warp's 512 bytes are 4 whole lines.
//   footprint: kw = 0: the whole K (KT = K/32 steps over M x K); kw > 0: the step's offset wraps every kw steps
//   (the same pattern over a kw*64-byte slice of every row: L2-resident).
//   Per launch: CUDA events, the in-kernel clock (../round3/clk.h), and lane 0 of every warp sums clock64 from the
//   commit of a group to the return of the wait that guarantees it (S >= 2, steps past the first 2S; S = 1 each
//   step): with no compute in the loop that is the group's loaded round trip. Verified: after the loop every
//   thread compares the chunks it copied last with the source (int4 (i, 7i+1, ~i, i^0x9e3779b9) at chunk i).
// ./l2req run  -> CSV rows (header printed)      ./l2req ncu -> one launch of each profiled configuration
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "../round3/clk.h"

__device__ __forceinline__ void cp16(unsigned s, const char* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cpwait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

struct Args {
  const char *A, *B;     // operands (M x K and N x K halves)
  long long pitch;       // row pitch in bytes (rows layout)
  int rb;                // bytes per row per step (rows layout); 0 = tiled
  int tile_bytes;        // BM * 64 = bytes of one operand tile per step
  int spad;              // rows layout: shared-memory row = row_bytes + spad (mma_pipe: 64 + 16, ldmatrix conflict-free)
  int tile_smem;         // shared-memory bytes of one operand tile (rows x (row_bytes + spad); tiled: tile_bytes)
  int KT, kwmask;        // steps; offsets wrap every kwmask+1 steps (kwmask = -1: no wrap)
  int tiles_n;
  unsigned long long *lat_sum, *lat_n;
  int* bad;
  ClkRec* rec;
};

// byte offset of chunk c of a panel's tile at step 0, and the per-step advance
__device__ __forceinline__ long long chunk_off(const Args& a, int panel, int c) {
  if (a.rb == 0) return (long long)panel * a.tile_bytes * a.KT + (long long)c * 16;
  const int cpr = a.rb >> 4, rows = a.tile_bytes / a.rb;
  return ((long long)panel * rows + c / cpr) * a.pitch + (c % cpr) * 16;
}

template <int NT, int S, int CH>
__global__ void __launch_bounds__(NT, 1536 / NT) tilecopy(Args a) {
  extern __shared__ __align__(16) char smem[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x, lane = tid & 31;
  const int bm = blockIdx.x / a.tiles_n, bn = blockIdx.x % a.tiles_n;
  const long long step_bytes = a.rb ? a.rb : a.tile_bytes;
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  unsigned oa[CH], ob[CH];  // byte offsets of the thread's chunks at step 0 (operands < 4 GiB)
  unsigned sa[CH];
#pragma unroll
  for (int j = 0; j < CH; ++j) {
    const int c = tid + j * NT;
    oa[j] = (unsigned)chunk_off(a, bm, c);
    ob[j] = (unsigned)chunk_off(a, bn, c);
    sa[j] = sbase + (a.rb ? (c / (a.rb >> 4)) * (a.rb + a.spad) + (c % (a.rb >> 4)) * 16 : c * 16);
    asm volatile("" : "+r"(oa[j]), "+r"(ob[j]), "+r"(sa[j]));
  }
  const char* const A = a.A;
  const char* const B = a.B;
  const unsigned stage = 2u * a.tile_smem;
  auto load = [&](int s, int kt) {
    const unsigned off = (unsigned)(kt & a.kwmask) * (unsigned)step_bytes;
#pragma unroll
    for (int j = 0; j < CH; ++j) cp16(sa[j] + s * stage, A + (oa[j] + off));
#pragma unroll
    for (int j = 0; j < CH; ++j) cp16(sa[j] + s * stage + a.tile_smem, B + (ob[j] + off));
  };
  unsigned long long lsum = 0, ln = 0;
  if constexpr (S == 1) {
    for (int kt = 0; kt < a.KT; ++kt) {
      load(0, kt);
      commit();
      const unsigned long long t0 = clk();
      cpwait<0>();
      const unsigned long long t1 = clk();
      if (kt >= 2) { lsum += t1 - t0; ++ln; }
      __syncthreads();
      __syncthreads();
    }
  } else {
    unsigned tc[S];  // low 32 bits of clock64 at each group's commit
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < a.KT) load(s, s);
      commit();
      tc[s] = (unsigned)clk();
    }
    for (int k0 = 0; k0 < a.KT; k0 += S) {
#pragma unroll
      for (int s = 0; s < S; ++s) {  // kt % S == s
        const int kt = k0 + s;
        if (kt < a.KT) {
          cpwait<S - 2>();
          const unsigned t1 = (unsigned)clk();
          if (kt >= 2 * S) { lsum += t1 - tc[s]; ++ln; }
          __syncthreads();
          const int nk = kt + S - 1;
          if (nk < a.KT) load((s + S - 1) % S, nk);
          commit();
          tc[(s + S - 1) % S] = (unsigned)clk();
        }
      }
    }
  }
  cpwait<0>();
  __syncthreads();
  {  // the last step's chunks against the source
    const int kt = a.KT - 1, s = kt % S;
    const unsigned off = (unsigned)(kt & a.kwmask) * (unsigned)step_bytes;
    int nbad = 0;
#pragma unroll
    for (int j = 0; j < CH; ++j) {
      const int4 x = *reinterpret_cast<const int4*>(smem + (sa[j] - sbase) + s * stage);
      const int4 y = *reinterpret_cast<const int4*>(smem + (sa[j] - sbase) + s * stage + a.tile_smem);
      const int4 gx = __ldg(reinterpret_cast<const int4*>(A + (oa[j] + off)));
      const int4 gy = __ldg(reinterpret_cast<const int4*>(B + (ob[j] + off)));
      nbad += (x.x != gx.x) | (x.y != gx.y) | (x.z != gx.z) | (x.w != gx.w);
      nbad += (y.x != gy.x) | (y.y != gy.y) | (y.z != gy.z) | (y.w != gy.w);
      const unsigned i = (oa[j] + off) >> 4;  // and the source holds what init wrote there
      nbad += (gx.x != (int)i) | (gx.y != (int)(7u * i + 1u)) | (gx.z != (int)~i) | (gx.w != (int)(i ^ 0x9e3779b9u));
    }
    if (nbad) atomicAdd(a.bad, nbad);
  }
  if (lane == 0 && ln) { atomicAdd(a.lat_sum, lsum); atomicAdd(a.lat_n, ln); }
  if (tid == 0) clk_store(a.rec, blockIdx.x, g0, c0);
}

__global__ void init_src(int4* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned u = (unsigned)i;
    p[i] = make_int4((int)u, (int)(7u * u + 1u), (int)~u, (int)(u ^ 0x9e3779b9u));
  }
}

typedef void (*Fn)(Args);
struct Tile { const char* name; int BM, NT; };
static const Tile TILES[] = {{"64x64_w4", 64, 128}, {"128x128_w8", 128, 256}, {"128x128_w4", 128, 128}};

static Fn pick(int NT, int S, int CH) {
#define P(nt, s, ch) if (NT == nt && S == s && CH == ch) return tilecopy<nt, s, ch>;
  P(128, 1, 2) P(128, 2, 2) P(128, 3, 2) P(128, 4, 2)
  P(256, 1, 2) P(256, 2, 2) P(256, 3, 2) P(256, 4, 2)
  P(128, 1, 4) P(128, 2, 4) P(128, 3, 4) P(128, 4, 4)
#undef P
  return nullptr;
}

struct Cfg { std::string set; int tile, S, size, rb, kw, bps, spad = 0; };

static std::vector<Cfg> configs(bool ncu) {
  std::vector<Cfg> v;
  const int gemm_bps[3][4] = {{7, 6, 6, 5}, {2, 2, 2, 2}, {2, 2, 2, 2}};  // mma_pipe's occupancy (round 3)
  if (ncu) {
    for (int t = 0; t < 3; ++t)
      for (int rb : {32, 64, 128, 0})
        for (int kw : {0, 8}) v.push_back({"pattern", t, 2, 4096, rb, kw, gemm_bps[t][1]});
    for (int t = 0; t < 3; ++t) v.push_back({"pattern", t, 2, 8192, 64, 0, gemm_bps[t][1]});
    for (int bps : {1, 2, 4, 8, 12}) v.push_back({"inflight", 0, 2, 4096, 64, 8, bps});
    for (int size : {4096, 8192})  // mma_pipe's exact copy: 64-byte rows into 80-byte shared-memory rows
      for (int t = 0; t < 3; ++t)
        for (int S = 1; S <= 4; ++S) v.push_back({"stages_pad", t, S, size, 64, 0, gemm_bps[t][S - 1], 16});
    for (int kw : {0, 8}) v.push_back({"pattern_pad", 0, 2, 4096, 64, kw, gemm_bps[0][1], 16});
    return v;
  }
  for (int size : {4096, 8192})
    for (int t = 0; t < 3; ++t)
      for (int rb : {32, 64, 128, 0})
        for (int kw : {0, 8}) v.push_back({"pattern", t, 2, size, rb, kw, gemm_bps[t][1]});
  for (int size : {4096, 8192})
    for (int t = 0; t < 3; ++t)
      for (int S = 1; S <= 4; ++S) v.push_back({"stages", t, S, size, 64, 0, gemm_bps[t][S - 1]});
  for (int size : {4096, 8192})  // mma_pipe's exact copy: 64-byte rows into 80-byte shared-memory rows
    for (int t = 0; t < 3; ++t) {
      for (int S = 1; S <= 4; ++S) v.push_back({"stages_pad", t, S, size, 64, 0, gemm_bps[t][S - 1], 16});
      v.push_back({"pattern_pad", t, 2, size, 64, 8, gemm_bps[t][1], 16});
      v.push_back({"pattern_pad", t, 2, size, 32, 0, gemm_bps[t][1], 16});
    }
  for (int kw : {0, 8})
    for (int bps : {1, 2, 3, 4, 6, 8, 12}) v.push_back({"inflight_pad", 0, 2, 4096, 64, kw, bps, 16});
  // bytes in flight per SM ~ blocks x (S-1) x 8 KiB (64x64 tile); shared memory caps S = 2 at 13 blocks, S = 4 at 7
  for (int kw : {0, 8}) {
    for (int bps : {1, 2, 3, 4, 6, 8, 12}) v.push_back({"inflight", 0, 2, 4096, 64, kw, bps});
    for (int bps : {1, 2, 3, 4, 6}) v.push_back({"inflight", 0, 4, 4096, 64, kw, bps});
  }
  for (int rb : {0, 128, 32})
    for (int bps : {1, 2, 4, 8, 12}) v.push_back({"inflight", 0, 2, 4096, rb, 8, bps});
  return v;
}

int main(int argc, char** argv) {
  const bool ncu = argc > 1 && std::strcmp(argv[1], "ncu") == 0;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t maxk = 8192, bytes = maxk * maxk * 2;  // each operand 8192 x 8192 halves = 128 MiB
  char *A, *B;
  CHECK(cudaMalloc(&A, bytes)); CHECK(cudaMalloc(&B, bytes));
  init_src<<<1024, 256>>>((int4*)A, bytes / 16); init_src<<<1024, 256>>>((int4*)B, bytes / 16);
  CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  unsigned long long *ls, *ln; int* bad;
  CHECK(cudaMalloc(&ls, 8)); CHECK(cudaMalloc(&ln, 8)); CHECK(cudaMalloc(&bad, 4));
  ClkRec* rec = clk_alloc();
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  if (!ncu)
    std::printf("set,tile,BM,threads,stages,size,row_bytes,smem_pad,kw_steps,bps_target,bps_occ,smem,grid,steps,rep,time_ms,"
                "sm_mhz,bytes,GBps,bytes_per_clk_per_sm,requests,lat_clk_mean,bad\n");
  for (auto& c : configs(ncu)) {
    const Tile& t = TILES[c.tile];
    const int CH = t.BM * 4 / t.NT;
    Fn fn = pick(t.NT, c.S, CH);
    if (!fn) { std::fprintf(stderr, "no kernel for %d %d %d\n", t.NT, c.S, CH); return 1; }
    const int tile_smem = c.rb ? t.BM * 64 / c.rb * (c.rb + c.spad) : t.BM * 64;
    const int need = c.S * 2 * tile_smem;
    int smem = std::max(need, (233472 / c.bps - 1024) / 128 * 128);
    smem = std::min(smem, 232448);
    CHECK(cudaFuncSetAttribute((const void*)fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int occ = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, fn, t.NT, smem));
    Args a;
    a.A = A; a.B = B; a.rb = c.rb; a.tile_bytes = t.BM * 64; a.spad = c.spad; a.tile_smem = tile_smem;
    a.KT = c.size / 32;
    a.pitch = (long long)c.size * 2 * (c.rb ? c.rb : 64) / 64;
    a.kwmask = c.kw ? c.kw - 1 : -1;
    a.tiles_n = c.size / t.BM;
    a.lat_sum = ls; a.lat_n = ln; a.bad = bad; a.rec = rec;
    const int grid = (c.size / t.BM) * (c.size / t.BM);
    const double moved = (double)grid * a.KT * 2.0 * a.tile_bytes;
    const double rq = c.rb ? moved / c.rb : moved / 128.0;  // 128-byte line pieces: one L2 request each
    const int reps = ncu ? 1 : 5;
    for (int rep = ncu ? 0 : -1; rep < reps; ++rep) {
      CHECK(cudaMemset(ls, 0, 8)); CHECK(cudaMemset(ln, 0, 8)); CHECK(cudaMemset(bad, 0, 4));
      usleep(1000);
      CHECK(cudaEventRecord(e0));
      fn<<<grid, t.NT, smem>>>(a);
      CHECK(cudaEventRecord(e1)); CHECK_LAUNCH(); CHECK(cudaEventSynchronize(e1));
      float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
      double mhz = clk_mhz(rec, grid);
      unsigned long long hs, hn; int hb;
      CHECK(cudaMemcpy(&hs, ls, 8, cudaMemcpyDeviceToHost)); CHECK(cudaMemcpy(&hn, ln, 8, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(&hb, bad, 4, cudaMemcpyDeviceToHost));
      if (ncu) { std::printf("ncu_launch,%s,%s,S=%d,size=%d,rb=%d,spad=%d,kw=%d,bps=%d,bad=%d\n", c.set.c_str(), t.name, c.S, c.size, c.rb, c.spad, c.kw, c.bps, hb); continue; }
      if (rep < 0) continue;
      std::printf("%s,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.0f,%.0f,%.1f,%.2f,%.0f,%.1f,%d\n", c.set.c_str(),
                  t.name, t.BM, t.NT, c.S, c.size, c.rb, c.spad, c.kw, c.bps, occ, smem, grid, a.KT, rep, ms, mhz, moved,
                  moved / (ms * 1e6), moved / (ms * 1e-3) / (mhz * 1e6) / sms, rq, hn ? (double)hs / hn : -1.0, hb);
      std::fflush(stdout);
    }
  }
  return 0;
}
