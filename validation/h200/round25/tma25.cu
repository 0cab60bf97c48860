// Round 25 (issue 12): how many bytes a second the tensor memory accelerator (TMA) brings into one SM, alone and with
// every SM copying. H200, sm_90.
//
// One block per SM (its dynamic shared memory is more than half an SM's), 128 threads; thread 0 is the producer: it
// issues S tile loads (cp.async.bulk.tensor.2d, each completing on its stage's mbarrier), then, for each next tile,
// waits for the oldest stage's mbarrier and issues the next tile into it -- S copies always in flight, nothing
// computed. The tiles are boxes of BOX_ROWS x 64 fp16 (128-byte rows, as the GEMMs' K-slices) of a row-major
// tensor, swizzled or not; block b reads tiles (b * 37 + t) mod (tiles of the tensor) in turn. The tensor is 16 MiB
// (L2-resident after the warm-up launch) or 512 MiB (streamed from DRAM). Only the first ACTIVE blocks copy; the
// others exit at once.
//
// Checks: after its last wait every thread of a block sums part of the last tile in shared memory (a sum over the
// whole tile, so the swizzle does not matter) and the host compares it with the tile's known contents.
// Timing: thread 0's clock64 and %globaltimer around the loop; clock = d(clock64) / d(globaltimer).
// Round 25b (./tma25 b): the same kernel as bursts (mode 1: issue S boxes, wait for all, again) and with two producer
// warps (mode 2: threads 0 and 32, each with its own S stages and half the boxes), and the DRAM case again with each
// block's tiles (tiles / SMs) apart (round 25's blocks, 37 tiles apart, mostly read each other's tiles from L2); the
// descriptor prefetched (prefetch.tensormap, as CUTLASS does) in all of them, and the round 25 stream with and without.
// Usage: ./tma25 [b] > tma25[b].csv  (a sweep; one row per configuration: the median block's bytes per clock, and the
// chip's)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int COLS = 64;  // fp16 elements a box row: 128 bytes

__device__ __forceinline__ unsigned long long gtimer() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      " @!p bra WAIT_%=;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap* map, int x, int y, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :: "r"(dst), "l"((unsigned long long)map), "r"(x), "r"(y), "r"(bar) : "memory");
}

struct Out { unsigned long long c0, c1, g0, g1; float sum; int smid; };

// Tile t of a tensor of tiles_y x tiles_x boxes: box (ty, tx) -> element coordinates (x = tx * 64, y = ty * rows).
__global__ void __launch_bounds__(128, 1)
tma_stream(const __grid_constant__ CUtensorMap map, int rows, int stages, int tiles_x, int tiles, int iters, int active,
           int mode, long long first_stride, int prefetch, Out* out) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  if ((int)blockIdx.x >= active) return;
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);  // 128-byte swizzle: 1 KiB aligned
  __shared__ __align__(8) unsigned long long bars[16];
  const unsigned box = rows * COLS * 2;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2 * stages && s < 14; ++s) mbar_init(smem_u32(&bars[s]), 1);
    if (prefetch) asm volatile("prefetch.tensormap [%0];" :: "l"((unsigned long long)&map) : "memory");  // as CUTLASS
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  unsigned long long c0 = 0, c1 = 0, g0 = 0, g1 = 0;
  int last_stage = 0;
  // Producers: thread 0 (mode 0, 1), or threads 0 and 32 (mode 2: two warps, each with its own `stages` stages and
  // half the boxes). Block b starts at tile b * first_stride.
  const int producers = mode == 2 ? 2 : 1;
  const int me = threadIdx.x == 0 ? 0 : (mode == 2 && threadIdx.x == 32 ? 1 : -1);
  if (me >= 0) {
    const int base = me * stages, n = iters / producers;
    const int first = (int)(((long long)b * first_stride + (long long)me * n) % tiles);
    // The next box's coordinates, stepped: no division in the loop (round 25's `(first + t) % tiles` in 64 bits was a
    // software division of ~600 cycles a box in the one producer thread, and set round 25's rates).
    int bx = (first % tiles_x) * COLS, by = (first / tiles_x) * rows;
    const int width = tiles_x * COLS, height = tiles / tiles_x * rows;
    auto issue = [&](int t, int s) {
      (void)t;
      mbar_expect(smem_u32(&bars[base + s]), box);
      tma_load(smem_u32(smem + (size_t)(base + s) * box), &map, bx, by, smem_u32(&bars[base + s]));
      bx += COLS;
      if (bx == width) { bx = 0; by += rows; if (by == height) by = 0; }
    };
    g0 = gtimer(); c0 = clock64();
    if (mode == 1) {  // bursts: issue `stages` boxes, wait for all of them, again
      for (int t = 0; t < n; t += stages) {
        for (int s = 0; s < stages; ++s) issue(t + s, s);
        for (int s = 0; s < stages; ++s) mbar_wait(smem_u32(&bars[s]), (t / stages) & 1);
      }
      last_stage = stages - 1;
    } else {  // a stream: `stages` boxes always in flight
      for (int t = 0; t < stages && t < n; ++t) issue(t, t);
      for (int t = 0; t < n; ++t) {
        const int s = t % stages;
        mbar_wait(smem_u32(&bars[base + s]), (t / stages) & 1);
        if (t + stages < n) issue(t + stages, s);
        last_stage = base + s;
      }
    }
    c1 = clock64(); g1 = gtimer();
    if (me == 0) bars[15] = (unsigned long long)last_stage;
    if (me == 1) bars[14] = c1 - c0;
  }
  __syncthreads();
  last_stage = (int)bars[15];
  // Sum of the last tile (all threads), as float: the data are small integers, exact in fp16 and in the sum.
  const __half* tile = reinterpret_cast<const __half*>(smem + (size_t)last_stage * box);
  float part = 0.f;
  for (int i = threadIdx.x; i < rows * COLS; i += blockDim.x) part += __half2float(tile[i]);
  __shared__ float red[128];
  red[threadIdx.x] = part;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int i = 0; i < 128; ++i) s += red[i];
    unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    if (mode == 2 && bars[14] > c1 - c0) c1 = c0 + bars[14];  // the slower of the two producers
    out[b] = Out{c0, c1, g0, g1, s, (int)sm};
  }
}

__global__ void fill(__half* x, long long n, int width) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    x[i] = __int2half_rn((int)(((i / width) * 7 + (i % width) * 3) % 17));
}

static double tile_sum(long long ty, long long tx, int rows, int width) {  // the host's sum of one box
  double s = 0;
  for (long long r = ty * rows; r < (ty + 1) * rows; ++r)
    for (long long c = tx * COLS; c < (tx + 1) * COLS; ++c) s += (double)((r * 7 + c * 3) % 17);
  return s;
}

int main(int argc, char** argv) {
  const bool round_b = argc > 1 && (std::string(argv[1]) == "b" || std::string(argv[1]) == "c");
  int nsm = 0; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  int smem_max = 0; CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  CK(cudaFuncSetAttribute(tma_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max - 1024));
  const int width = 4096;  // fp16 columns: 8 KiB rows
  const long long rows_small = 2048, rows_big = 65536;  // 16 MiB, 512 MiB
  __half* data; CK(cudaMalloc(&data, rows_big * width * 2));
  fill<<<1024, 256>>>(data, rows_big * width, width); CK(cudaDeviceSynchronize());
  Out* d_out; CK(cudaMalloc(&d_out, nsm * sizeof(Out)));
  std::vector<Out> h(nsm);
  printf("mode,prefetch,source,swizzle,box_rows,box_bytes,stages,active_sms,iters,sm_mhz,median_b_per_clk,min_b_per_clk,max_b_per_clk,chip_gb_s,bad_sums,distinct_sms\n");
  struct Cfg { int big, swz, rows, stages, active, iters, mode, spread, prefetch = 0; };
  std::vector<Cfg> cfgs;
  const long long room = smem_max - 3072;
  auto fits = [&](int rows, int st, int mode) { return (long long)st * (mode == 2 ? 2 : 1) * rows * COLS * 2 <= room; };
  if (!round_b) {  // round 25
    for (int swz : {1, 0})
      for (int rows : {64, 128, 256})
        for (int st : {1, 2, 4, 8})
          if (fits(rows, st, 0)) cfgs.push_back({0, swz, rows, st, 1, 4000, 0, 0});
    for (int act : {2, 8, 16, 33, 66, 99, 132})
      for (int rows : {128, 256}) cfgs.push_back({0, 1, rows, 4, act, 2000, 0, 0});
    for (int act : {1, 16, 66, 132})
      for (int rows : {128, 256}) cfgs.push_back({1, 1, rows, 4, act, 2000, 0, 0});
  } else {  // round 25b: bursts, two producers, DRAM with the blocks' tiles apart; the descriptor prefetched or not
    for (int pf : {0, 1})
      for (int rows : {64, 128, 256})
        for (int st : {1, 2, 4}) cfgs.push_back({0, 1, rows, st, 1, 4000, 0, 0, pf});  // round 25's stream again
    for (int rows : {64, 128, 256})
      for (int st : {1, 2, 4, 8})
        if (fits(rows, st, 1)) cfgs.push_back({0, 1, rows, st, 1, 4000, 1, 0, 1});
    for (int rows : {64, 128, 256})
      for (int st : {1, 2, 4})
        if (fits(rows, st, 2)) cfgs.push_back({0, 1, rows, st, 1, 4000, 2, 0, 1});
    for (int act : {16, 132}) cfgs.push_back({0, 1, 128, 4, act, 2000, 2, 0, 1});
    for (int act : {1, 16, 66, 132})
      for (int rows : {128, 256}) cfgs.push_back({1, 1, rows, 4, act, 2000, 0, 1, 1});
  }
  // The driver's cuTensorMapEncodeTiled through the runtime (no -lcuda at link time).
  PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&encode, 12000, cudaEnableDefault, &q));
  if (q != cudaDriverEntryPointSuccess || !encode) { fprintf(stderr, "no cuTensorMapEncodeTiled\n"); return 1; }
  int bad_total = 0;
  for (const Cfg& c : cfgs) {
    const long long rows_t = c.big ? rows_big : rows_small;
    CUtensorMap map;
    cuuint64_t gdim[2] = {(cuuint64_t)width, (cuuint64_t)rows_t};
    cuuint64_t gstride[1] = {(cuuint64_t)width * 2};
    cuuint32_t boxd[2] = {(cuuint32_t)COLS, (cuuint32_t)c.rows};
    cuuint32_t estr[2] = {1, 1};
    CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, data, gdim, gstride, boxd, estr,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE,
                                        c.swz ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) rows %d\n", (int)r, c.rows); return 1; }
    const int tiles_x = width / COLS, tiles = (int)(rows_t / c.rows) * tiles_x;
    const long long stride = c.spread ? tiles / nsm : 37;  // block b's first tile: b * stride
    const size_t smem = smem_max - 1024;  // one block per SM
    for (int rep = 0; rep < 2; ++rep) {  // rep 0 warms the L2 (and the clocks); rep 1 is recorded
      CK(cudaMemset(d_out, 0, nsm * sizeof(Out)));
      tma_stream<<<nsm, 128, smem>>>(map, c.rows, c.stages, tiles_x, tiles, c.iters, c.active, c.mode, stride, c.prefetch, d_out);
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    }
    CK(cudaMemcpy(h.data(), d_out, nsm * sizeof(Out), cudaMemcpyDeviceToHost));
    const double box = (double)c.rows * COLS * 2;
    std::vector<double> bpc;
    double dc = 0, dg = 0;
    unsigned long long gmin = ~0ull, gmax = 0;
    int bad = 0;
    std::vector<int> sms;
    for (int b = 0; b < c.active; ++b) {
      const Out& o = h[b];
      bpc.push_back(box * c.iters / (double)(o.c1 - o.c0));
      dc += (double)(o.c1 - o.c0); dg += (double)(o.g1 - o.g0);
      gmin = std::min(gmin, o.g0); gmax = std::max(gmax, o.g1);
      const int last = (c.mode == 2 ? c.iters / 2 : c.iters) - 1, tile = (int)(((long long)b * stride + last) % tiles);
      if (o.sum != (float)tile_sum(tile / tiles_x, tile % tiles_x, c.rows, width)) ++bad;
      sms.push_back(o.smid);
    }
    std::sort(sms.begin(), sms.end());
    const int distinct = (int)(std::unique(sms.begin(), sms.end()) - sms.begin());
    std::sort(bpc.begin(), bpc.end());
    bad_total += bad;
    printf("%s,%d,%s,%d,%d,%d,%d,%d,%d,%.0f,%.2f,%.2f,%.2f,%.1f,%d,%d\n", c.mode == 0 ? "stream" : c.mode == 1 ? "burst" : "two_producers", c.prefetch, c.big ? "dram" : "l2", c.swz, c.rows, (int)box, c.stages,
           c.active, c.iters, dc / dg * 1e3, bpc[bpc.size() / 2], bpc.front(), bpc.back(),
           box * c.iters * c.active / (double)(gmax - gmin), bad, distinct);
    fflush(stdout);
  }
  fprintf(stderr, "configurations %zu, wrong tile sums %d\n", cfgs.size(), bad_total);
  return bad_total ? 2 : 0;
}
