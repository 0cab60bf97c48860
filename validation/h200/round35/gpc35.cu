// Round 35 (issue 12): the H200's GPCs and what each can draw from the L2.
//
// Rounds 30, 32 and 34 traced every block of the 64x64 GEMMs: 24 of the 132 SMs (always the same 24 on one device)
// run those L2-bound blocks 0.69-0.79x as long as the others (S >= 2), which decides how the launch ends. Two
// programs here, no GEMM timing in either:
//
//   map   -- which SMs share a GPC: thread-block clusters are placed within one GPC, so clusters of 2, 4, 8 and 16
//            (16 non-portable) CTAs, one CTA per SM (200 KiB of shared memory), all co-resident (each holds its SM
//            for 30 us), record (cluster, %smid); SMs that ever share a cluster share a GPC (union over all runs).
//            Also cudaOccupancyMaxActiveClusters per size. Prints "map,size,max_active,cluster,smid" rows and the
//            groups as "gpc,g,sm list".
//   copy  -- L2 read bandwidth of the 64x64 GEMM tile's copy (per k-step, A and B tiles of 64 rows x 64 B at a row
//            stride of 8 KiB, cp.async 16 B into padded shared rows, S stages in flight, 128 threads) from a 32 MiB
//            buffer, with only chosen SMs active: exactly k blocks per SM are launched in one resident wave; a block
//            on an inactive SM returns at once, a block on an active one copies `tiles` tiles of 128 k-steps. Subsets
//            (from the map): all SMs; each GPC alone; the GPCs of each size together; one SM per GPC; one SM. k = 2
//            and 5, S = 1 and 4. Median of 5 launches; clock from clock64 / globaltimer; every copied chunk's value
//            checked against its address (bad = mismatches). Per-SM block times of the all-SM launches as well.
//
// The copies use CUDA's own cp.async intrinsics (cuda_pipeline.h: 16 bytes -> cp.async.cg, LDGSTS.E.BYPASS.128) where
// the run itself used hand-written helpers (a copy of round 3's cp_async16 / cp_commit / cp_wait). With the device's
// nvcc (13.0.88) both sources compile to byte-identical machine code for every kernel (the cubins' .text sections).
#include <cuda_pipeline.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>
#include "../common.h"

__device__ __forceinline__ unsigned clusterid_x() {
  unsigned c;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(c));
  return c;
}

__global__ void gpc_map(int* out, unsigned long long hold_ns) {
  extern __shared__ char big[];
  unsigned long long t0 = globaltimer_ns();
  if (threadIdx.x == 0) {
    big[0] = 1;
    out[2 * blockIdx.x] = (int)smid();
    out[2 * blockIdx.x + 1] = (int)clusterid_x();
  }
  while (globaltimer_ns() - t0 < hold_ns) {
  }
}

struct Rec { unsigned long long g0, g1, c0, c1; int sm; int pad; };

constexpr int ROW_INT4 = 512;          // an 8 KiB row (K = 4096 halves)
constexpr int ROWS = 2048;             // 16 MiB per operand, A then B: 32 MiB
constexpr int SROW = 5;                // shared row: 64 B of data + 16 B of padding
constexpr int STAGE_INT4 = 2 * 64 * SROW;

template <int S>
__global__ void __launch_bounds__(128) l2copy(const int4* src, const unsigned char* active, int tiles, Rec* rec, int* bad) {
  extern __shared__ int4 sbuf[];
  const unsigned sm = smid();
  if (!active[sm]) {  // hold the slot until the whole wave is placed, then leave
    unsigned long long t0 = globaltimer_ns();
    while (globaltimer_ns() - t0 < 20000ull) {
    }
    return;
  }
  unsigned long long g0 = globaltimer_ns(), c0 = (unsigned long long)clock64();
  const int t = threadIdx.x;
  int mism = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    unsigned h = (blockIdx.x * 2654435761u) ^ (tile * 40503u + 0x9e37u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    const int bm = h % (ROWS / 64), bn = (h >> 8) % (ROWS / 64);
    size_t g_last[4];
    int s_last[4];
    for (int k = 0; k < 128; ++k) {
      const int st = (S == 1) ? 0 : (k % S);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = t + 128 * j, op = c >> 8, row = (c & 255) >> 2, col = c & 3;
        const size_t g = (size_t)(op * ROWS + (op ? bn : bm) * 64 + row) * ROW_INT4 + k * 4 + col;
        const int s = st * STAGE_INT4 + op * 64 * SROW + row * SROW + col;
        __pipeline_memcpy_async(&sbuf[s], src + g, 16);
        g_last[j] = g; s_last[j] = s;
      }
      __pipeline_commit();
      __pipeline_wait_prior(S == 1 ? 0 : S - 1);
    }
    __pipeline_wait_prior(0);
#pragma unroll
    for (int j = 0; j < 4; ++j) mism += sbuf[s_last[j]].x != (int)(g_last[j] & 0x7fffffff);
  }
  if (mism) atomicAdd(bad, mism);
  __syncthreads();
  if (t == 0) rec[blockIdx.x] = Rec{g0, globaltimer_ns(), c0, (unsigned long long)clock64(), (int)sm, 0};
}

__global__ void fill(int4* x, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] = make_int4((int)(i & 0x7fffffff), 1, 2, 3);
}

static int find(std::vector<int>& p, int x) { return p[x] == x ? x : p[x] = find(p, p[x]); }

int main(int argc, char** argv) {
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  const int NSM = prop.multiProcessorCount;
  std::printf("device,%s,%d SMs,smem per block optin %zu\n", prop.name, NSM, prop.sharedMemPerBlockOptin);
  // ---- map ----
  const int MAP_SMEM = 200 * 1024;
  CHECK(cudaFuncSetAttribute((const void*)gpc_map, cudaFuncAttributeMaxDynamicSharedMemorySize, MAP_SMEM));
  CHECK(cudaFuncSetAttribute((const void*)gpc_map, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int* d_out; CHECK(cudaMalloc(&d_out, 2 * 4096 * sizeof(int)));
  std::vector<int> parent(NSM);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> seen(NSM, 0);
  for (int cs : {2, 4, 8, 16}) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cs; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(32); cfg.dynamicSmemBytes = MAP_SMEM; cfg.attrs = attr; cfg.numAttrs = 1;
    cfg.gridDim = dim3(cs);
    int maxc = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&maxc, (void*)gpc_map, &cfg);
    if (e != cudaSuccess) { std::printf("map,%d,error,%s\n", cs, cudaGetErrorString(e)); cudaGetLastError(); continue; }
    std::printf("map_max_active,%d,%d\n", cs, maxc);
    if (maxc < 1) continue;
    for (int rep = 0; rep < 3; ++rep) {
      int n = std::max(1, maxc - rep);  // fewer clusters in later runs: other placements
      cfg.gridDim = dim3(n * cs);
      CHECK(cudaMemset(d_out, 0xff, 2 * 4096 * sizeof(int)));
      e = cudaLaunchKernelEx(&cfg, gpc_map, d_out, 30000ull);
      if (e != cudaSuccess) { std::printf("map,%d,launch error,%s\n", cs, cudaGetErrorString(e)); cudaGetLastError(); break; }
      CHECK(cudaDeviceSynchronize());
      std::vector<int> h(2 * n * cs);
      CHECK(cudaMemcpy(h.data(), d_out, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
      std::map<int, int> first;
      for (int b = 0; b < n * cs; ++b) {
        int s = h[2 * b], c = h[2 * b + 1];
        if (s < 0 || s >= NSM) continue;
        seen[s] = 1;
        std::printf("map,%d,%d,%d,%d,%d\n", cs, rep, b / cs, c, s);
        int key = b / cs;  // the cluster's index in the grid
        if (first.count(key)) parent[find(parent, s)] = find(parent, first[key]);
        else first[key] = s;
      }
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int s = 0; s < NSM; ++s) groups[find(parent, s)].push_back(s);
  std::vector<std::vector<int>> gpcs;
  for (auto& kv : groups) gpcs.push_back(kv.second);
  std::sort(gpcs.begin(), gpcs.end(), [](auto& a, auto& b) { return a.size() != b.size() ? a.size() > b.size() : a[0] < b[0]; });
  for (size_t g = 0; g < gpcs.size(); ++g) {
    std::printf("gpc,%zu,%zu,", g, gpcs[g].size());
    for (int s : gpcs[g]) std::printf("%d ", s);
    std::printf("\n");
  }
  // ---- copy ----
  const size_t N4 = (size_t)2 * ROWS * ROW_INT4;  // 32 MiB of int4
  int4* src; CHECK(cudaMalloc(&src, N4 * sizeof(int4)));
  fill<<<1024, 256>>>(src, N4); CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
  unsigned char* d_act; CHECK(cudaMalloc(&d_act, NSM));
  Rec* d_rec; CHECK(cudaMalloc(&d_rec, 8 * NSM * sizeof(Rec)));
  int* d_bad; CHECK(cudaMalloc(&d_bad, sizeof(int)));
  const int SMEM4 = 4 * STAGE_INT4 * 16, SMEM1 = STAGE_INT4 * 16;
  CHECK(cudaFuncSetAttribute((const void*)l2copy<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM4));
  CHECK(cudaFuncSetAttribute((const void*)l2copy<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM1));
  struct Sub { std::string name; std::vector<int> sms; };
  std::vector<Sub> subs;
  { std::vector<int> all(NSM); std::iota(all.begin(), all.end(), 0); subs.push_back({"all", all}); }
  for (size_t g = 0; g < gpcs.size(); ++g) subs.push_back({"gpc" + std::to_string(g) + "_of" + std::to_string(gpcs[g].size()), gpcs[g]});
  std::map<size_t, std::vector<int>> bysize;
  for (auto& g : gpcs) bysize[g.size()].insert(bysize[g.size()].end(), g.begin(), g.end());
  if (bysize.size() > 1)
    for (auto& kv : bysize) subs.push_back({"gpcs_of" + std::to_string(kv.first), kv.second});
  { std::vector<int> one; for (auto& g : gpcs) one.push_back(g[0]); subs.push_back({"one_per_gpc", one}); }
  subs.push_back({"one_sm", {gpcs[0][0]}});
  if (gpcs.size() > 1) subs.push_back({"one_sm_small", {gpcs.back()[0]}});
  std::printf("copy,subset,sms,k,S,tiles,bytes,time_ms,GBps,sm_mhz,bad\n");
  std::vector<Rec> keep;
  for (int S : {4, 1}) {
    for (int k : {5, 2}) {  // 5: the most S = 4 blocks (40 KiB) an SM holds
      for (auto& sub : subs) {
        std::vector<unsigned char> act(NSM, 0);
        for (int s : sub.sms) act[s] = 1;
        CHECK(cudaMemcpy(d_act, act.data(), NSM, cudaMemcpyHostToDevice));
        const int grid = NSM * k;
        const int tiles = std::max(1, std::min(64, (int)(6.0 * NSM / sub.sms.size() * (S == 4 ? 1 : 0.3) * 6 / k)));
        std::vector<float> ts; std::vector<double> mz;
        int badsum = 0;
        cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
        int ran = 0;
        for (int r = 0; r < 6; ++r) {
          CHECK(cudaMemset(d_rec, 0, 8 * NSM * sizeof(Rec))); CHECK(cudaMemset(d_bad, 0, sizeof(int)));
          CHECK(cudaEventRecord(a));
          if (S == 4) l2copy<4><<<grid, 128, SMEM4>>>(src, d_act, tiles, d_rec, d_bad);
          else l2copy<1><<<grid, 128, SMEM1>>>(src, d_act, tiles, d_rec, d_bad);
          CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b)); CHECK_LAUNCH();
          float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
          std::vector<Rec> h(grid);
          CHECK(cudaMemcpy(h.data(), d_rec, grid * sizeof(Rec), cudaMemcpyDeviceToHost));
          int hb; CHECK(cudaMemcpy(&hb, d_bad, sizeof(int), cudaMemcpyDeviceToHost));
          badsum += hb;
          double dc = 0, dg = 0; int nrun = 0;
          for (auto& x : h) if (x.g1 > x.g0) { dc += (double)(x.c1 - x.c0); dg += (double)(x.g1 - x.g0); ++nrun; }
          ran = nrun;
          if (r >= 1) { ts.push_back(ms); mz.push_back(dg > 0 ? dc / dg * 1e3 : -1); }
          if (r == 3 && sub.name == "all") {
            for (auto& x : h) if (x.g1 > x.g0)
              std::printf("block,%d,%d,%d,%llu,%llu\n", S, k, x.sm, x.g0, x.g1);
          }
        }
        std::sort(ts.begin(), ts.end()); std::sort(mz.begin(), mz.end());
        double ms = ts[ts.size() / 2], mhz = mz[mz.size() / 2];
        double bytes = (double)ran * tiles * 128 * 512 * 16;
        std::printf("copy,%s,%zu,%d,%d,%d,%.0f,%.4f,%.1f,%.0f,%d\n", sub.name.c_str(), sub.sms.size(), k, S, tiles, bytes, ms,
                    bytes / ms / 1e6, mhz, badsum);
        std::fflush(stdout);
        if (ran != (int)sub.sms.size() * k) std::printf("warning,%s,k=%d: %d blocks ran, expected %zu\n", sub.name.c_str(), k, ran, sub.sms.size() * k);
      }
    }
  }
  return 0;
}
