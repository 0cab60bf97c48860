// Round 4d (issue 12): the cp.async round trip and copy rate with no address arithmetic between the clock reads.
//
// Round 4's cpasync_lat read clock64, then computed each chunk's source address with a 64-bit `%` (a ~25-instruction
// dependent chain through I2F, MUFU.RCP, F2I and IMADs, in branches that serialise the chunks), then issued the
// cp.async: its "round trip" (484 cycles) and its per-warp rate (2.39 B/clk) include that chain. Here every source
// address is computed from a power-of-two mask and pinned in a register by an empty volatile asm BEFORE the first
// clock read, so only the cp.async, commit and wait lie between the two reads.
//
// rt<ST, CH>: blocks of NT threads, one block per SM (grid = SMs x blocks_per_sm); per group each thread issues CH
//   16-byte cp.async.cg (L2 only) from a 32 MiB L2-resident buffer, ST groups in flight (cp.async.wait_group ST-1
//   after each commit); lane 0 of every warp: the mean cycles from a group's first clock read to the return of the
//   wait that guarantees it (past the start-up). CH = 0: the clock pair around commit + wait alone (baseline).
// ./cpa_rt -> CSV: sms,blocks_per_sm,threads,groups,chunks,rep,time_ms,sm_mhz,bytes_per_clk_per_sm,lat_clk_mean,sink
#include <algorithm>
#include <cstdio>
#include <vector>
#include "../round3/clk.h"

#define WRAP_CHUNKS (1u << 21)  // 32 MiB of int4
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(unsigned s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}
template <int N> __device__ __forceinline__ void cpwait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

template <int ST, int CH>
__global__ void rt(const int4* src, int iters, unsigned long long* lat_sum, unsigned long long* lat_n, int* sink, ClkRec* rec) {
  extern __shared__ __align__(16) int4 buf[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31;
  const unsigned base = (blockIdx.x * 4099u * 64u) & (WRAP_CHUNKS - 1);
  unsigned long long t_issue[ST > 0 ? ST : 1];
  unsigned long long sum = 0, n = 0;
  for (int it0 = 0; it0 < iters; it0 += ST) {
#pragma unroll
    for (int s = 0; s < ST; ++s) {
      const int it = it0 + s;
      const int4* p[CH > 0 ? CH : 1];
      unsigned sa[CH > 0 ? CH : 1];
#pragma unroll
      for (int j = 0; j < CH; ++j) {
        p[j] = src + ((base + ((unsigned)it * CH + j) * nt + tid) & (WRAP_CHUNKS - 1));
        sa[j] = smem_u32(&buf[(s * CH + j) * nt + tid]);
        asm volatile("" : "+l"(p[j]), "+r"(sa[j]));  // both in registers before the clock read
      }
      t_issue[s] = clk();
#pragma unroll
      for (int j = 0; j < CH; ++j) cp16(sa[j], p[j]);
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      cpwait<ST - 1>();
      const unsigned long long t1 = clk();
      const int done = it - (ST - 1);  // this group has landed
      if (done >= 2 * ST) { sum += t1 - t_issue[(s + 1) % ST]; ++n; }
    }
  }
  cpwait<0>();
  __syncthreads();
  if (CH > 0 && buf[tid].x == 0x7fffffff) sink[0] = 1;
  if (lane == 0) { atomicAdd(lat_sum, sum); atomicAdd(lat_n, n); }
  if (tid == 0) clk_store(rec, blockIdx.x, g0, c0);
}

typedef void (*Fn)(const int4*, int, unsigned long long*, unsigned long long*, int*, ClkRec*);
struct Cfg { int sms, bps, nt, st, ch; Fn fn; };

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  int4* src; CHECK(cudaMalloc(&src, (size_t)WRAP_CHUNKS * 16)); CHECK(cudaMemset(src, 0, (size_t)WRAP_CHUNKS * 16));
  unsigned long long *ls, *ln; int* sink;
  CHECK(cudaMalloc(&ls, 8)); CHECK(cudaMalloc(&ln, 8)); CHECK(cudaMalloc(&sink, 4)); CHECK(cudaMemset(sink, 0, 4));
  ClkRec* rec = clk_alloc();
  std::vector<Cfg> cfgs;
  for (int S : {1, sms}) {
    for (int nt : {128, 256, 512}) {
      cfgs.push_back({S, 1, nt, 1, 0, rt<1, 0>});
      cfgs.push_back({S, 1, nt, 1, 1, rt<1, 1>});
      cfgs.push_back({S, 1, nt, 2, 4, rt<2, 4>});
      cfgs.push_back({S, 1, nt, 4, 4, rt<4, 4>});
      cfgs.push_back({S, 1, nt, 8, 1, rt<8, 1>});
    }
    cfgs.push_back({S, 2, 512, 2, 4, rt<2, 4>});
    cfgs.push_back({S, 2, 256, 4, 4, rt<4, 4>});
  }
  printf("sms,blocks_per_sm,threads,groups,chunks,rep,time_ms,sm_mhz,bytes_per_clk_per_sm,lat_clk_mean,sink\n");
  const int iters = 2048;
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  for (auto& c : cfgs) {
    size_t smem = (size_t)std::max(c.st * c.ch, 1) * c.nt * 16;
    CHECK(cudaFuncSetAttribute((const void*)c.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int grid = c.sms * c.bps;
    for (int rep = -1; rep < 4; ++rep) {
      CHECK(cudaMemset(ls, 0, 8)); CHECK(cudaMemset(ln, 0, 8));
      CHECK(cudaEventRecord(e0));
      c.fn<<<grid, c.nt, smem>>>(src, iters, ls, ln, sink, rec);
      CHECK(cudaEventRecord(e1)); CHECK_LAUNCH(); CHECK(cudaEventSynchronize(e1));
      float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
      double mhz = clk_mhz(rec, grid);
      unsigned long long hs, hn; int hk;
      CHECK(cudaMemcpy(&hs, ls, 8, cudaMemcpyDeviceToHost)); CHECK(cudaMemcpy(&hn, ln, 8, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(&hk, sink, 4, cudaMemcpyDeviceToHost));
      if (rep < 0) continue;
      double bytes = (double)grid * c.nt * c.ch * 16.0 * iters;
      double bpc = bytes / (ms * 1e-3 * mhz * 1e6) / c.sms;
      printf("%d,%d,%d,%d,%d,%d,%.4f,%.0f,%.2f,%.1f,%d\n", c.sms, c.bps, c.nt, c.st, c.ch, rep, ms, mhz, bpc,
             hn ? (double)hs / hn : -1.0, hk);
      fflush(stdout);
    }
  }
  return 0;
}
