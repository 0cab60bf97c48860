// Round 11 (issue 12): how do two co-resident blocks sit against each other when each alternates two phases?
// gemmsim's SM pipeline model decides from its own queues where co-resident blocks settle (together or half a step
// apart), and for the GEMM at S = 1 it settles them together where the H200 alternates (round 10b). This kernel is the
// smallest case of that question, with no GEMM in it: a block of 8 warps (2 per SMSP) loops ITERS times over
//   phase X  (mode 1: integer adds, `nx` per warp on 8 chains -- issue only;
//             mode 2: a dependent chase of `nx` L2 loads per thread -- waiting only;
//             mode 3: a 16 KiB copy, 4 x 16-byte cp.async.cg per thread from an L2-resident buffer, then wait_all --
//             the GEMM's S = 1 copy without its address code), __syncthreads,
//   phase Y  (`ny` mma.sync.m16n8k16 per warp on 8 independent accumulators), __syncthreads,
// and thread 0 stores clock64 at the start of each iteration and after X's barrier. 100 KiB of dynamic shared memory
// per block allows at most two blocks per SM: grid 132 runs one block per SM (each phase alone), grid 264 two.
//
// ./sit11 OUTDIR -> OUTDIR/launches.csv (one row per launch: configuration, clock, check) and OUTDIR/marks_<i>.csv
// (launch i: per block its SM and its 2 x ITERS clock marks, relative to its first).
#include <cstdio>
#include <string>
#include <vector>
#include "../round3/clk.h"

#define ITERS 64
#define GBUF_BYTES (4 << 20)
#define CHASE_N (1 << 18)       // chase buffer: 1 MiB of unsigned, stride CHASE_STEP (a new 128-byte line each hop)
#define CHASE_STEP 4099u
#define SMEM_BYTES (100 << 10)

template <int X>
__global__ void __launch_bounds__(256, 2) sit(const float4* gbuf, const unsigned* chase, unsigned long long* marks,
                                           unsigned* sm_of, float* chk_mma, unsigned* chk_x, unsigned* bad, int nx,
                                           int ny, ClkRec* rec) {
  extern __shared__ float4 smem[];
  unsigned long long g0 = globaltimer_ns(), c0 = clock64();
  const int tid = threadIdx.x, lane = tid & 31;
  float acc[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
  // two fp16 1.0 in each of the six operand registers: every mma adds 16 to each accumulator element. Six distinct
  // registers, as a GEMM's fragments are (the first run read one register six times: raw_sameop/)
  unsigned a0, a1, a2, a3, b0, b1;
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(a0));
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(a1));
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(a2));
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(a3));
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(b0));
  asm volatile("mov.b32 %0, 0x3c003c00;\n" : "=r"(b1));
  unsigned x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = lane + i;
  unsigned p = (blockIdx.x * 256u + tid) * 97u % CHASE_N;
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  unsigned long long* mk = marks + (size_t)blockIdx.x * 2 * ITERS;
  for (int it = 0; it < ITERS; ++it) {
    if (tid == 0) mk[2 * it] = clock64();
    if (X == 1) {
      for (int j = 0; j < nx; j += 64) {
#pragma unroll
        for (int u = 0; u < 64; ++u) asm volatile("add.u32 %0, %0, %1;\n" : "+r"(x[u % 8]) : "r"(it));
      }
    } else if (X == 2) {
      for (int j = 0; j < nx; ++j) asm volatile("ld.global.cg.u32 %0, [%1];\n" : "=r"(p) : "l"(chase + p));
    } else if (X == 3) {
      const size_t src = ((size_t)(blockIdx.x * ITERS + it) * 16384) % GBUF_BYTES;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned off = j * 4096 + tid * 16;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sbase + off),
                     "l"(reinterpret_cast<const char*>(gbuf) + src + off));
      }
      asm volatile("cp.async.commit_group;\n" ::);
      asm volatile("cp.async.wait_all;\n" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) mk[2 * it + 1] = clock64();
    for (int j = 0; j < ny; j += 8) {
#pragma unroll
      for (int h = 0; h < 8; ++h)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(acc[h][0]), "+f"(acc[h][1]), "+f"(acc[h][2]), "+f"(acc[h][3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    if (X == 3 && it == ITERS - 1) {  // the last copy landed where it should: this thread's 4 chunks against global
      const size_t src = ((size_t)(blockIdx.x * ITERS + it) * 16384) % GBUF_BYTES;
      for (int j = 0; j < 4; ++j) {
        const float4 s = smem[(j * 4096 + tid * 16) / 16];
        const float4 g = __ldcg(reinterpret_cast<const float4*>(reinterpret_cast<const char*>(gbuf) + src + j * 4096 + tid * 16));
        if (s.x != g.x || s.y != g.y || s.z != g.z || s.w != g.w) atomicAdd(bad, 1u);
      }
    }
    __syncthreads();
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
  if (tid == 0) {
    sm_of[blockIdx.x] = smid();
    chk_mma[blockIdx.x] = s;  // 8 sets x 4 elements x 16 x (ny / 8) x ITERS
    chk_x[blockIdx.x] = X == 2 ? p : x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
    clk_store(rec, blockIdx.x, g0, c0);
  }
}

typedef void (*Kern)(const float4*, const unsigned*, unsigned long long*, unsigned*, float*, unsigned*, unsigned*, int,
                     int, ClkRec*);

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : ".";
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Kern ks[4] = {nullptr, sit<1>, sit<2>, sit<3>};
  for (int m = 1; m <= 3; ++m) CHECK(cudaFuncSetAttribute(ks[m], cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  std::vector<float> hg(GBUF_BYTES / 4);
  for (size_t i = 0; i < hg.size(); ++i) hg[i] = (float)(i % 1021);
  float4* gbuf; CHECK(cudaMalloc(&gbuf, GBUF_BYTES));
  CHECK(cudaMemcpy(gbuf, hg.data(), GBUF_BYTES, cudaMemcpyHostToDevice));
  std::vector<unsigned> hc(CHASE_N);
  for (unsigned i = 0; i < CHASE_N; ++i) hc[i] = (i + CHASE_STEP * 32) % CHASE_N;  // 32 x 4 B: a new line each hop
  unsigned* chase; CHECK(cudaMalloc(&chase, CHASE_N * 4));
  CHECK(cudaMemcpy(chase, hc.data(), CHASE_N * 4, cudaMemcpyHostToDevice));
  const int maxb = 2 * sms;
  unsigned long long* marks; CHECK(cudaMalloc(&marks, (size_t)maxb * 2 * ITERS * 8));
  unsigned *sm_of, *chk_x, *bad; float* chk_mma;
  CHECK(cudaMalloc(&sm_of, maxb * 4)); CHECK(cudaMalloc(&chk_x, maxb * 4)); CHECK(cudaMalloc(&bad, 4));
  CHECK(cudaMalloc(&chk_mma, maxb * 4));
  ClkRec* rec = clk_alloc();
  // (mode, nx, ny): X alone (ny = 0) and Y alone (mode 1, nx = 0) give each phase's time; the pairs are the question
  const int cfg[][3] = {{1, 0, 96}, {1, 0, 192}, {1, 512, 0}, {2, 2, 0}, {3, 0, 0},
                        {1, 512, 96}, {1, 1024, 96}, {2, 2, 96}, {2, 4, 96}, {3, 0, 96}, {3, 0, 192}, {2, 2, 192},
                        {1, 0, 48}, {1, 512, 48}, {2, 2, 48}, {3, 0, 48}};
  FILE* lf = std::fopen((out + "/launches.csv").c_str(), "w");
  std::fprintf(lf, "launch,mode,nx,ny,blocks_per_sm,rep,sm_mhz,time_ms,sms_with_2,check_ok\n");
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  int li = 0;
  for (auto& c : cfg) {
    const int mode = c[0], nx = c[1], ny = c[2];
    for (int bps = 1; bps <= 2; ++bps) {
      const int grid = bps * sms;
      for (int rep = -1; rep < 3; ++rep) {  // one warm-up
        CHECK(cudaMemset(marks, 0, (size_t)maxb * 2 * ITERS * 8)); CHECK(cudaMemset(bad, 0, 4));
        CHECK(cudaEventRecord(e0));
        ks[mode]<<<grid, 256, SMEM_BYTES>>>(gbuf, chase, marks, sm_of, chk_mma, chk_x, bad, nx, ny, rec);
        CHECK(cudaEventRecord(e1)); CHECK(cudaEventSynchronize(e1)); CHECK_LAUNCH();
        float ms; CHECK(cudaEventElapsedTime(&ms, e0, e1));
        const double mhz = clk_mhz(rec, grid);
        std::vector<unsigned long long> hm((size_t)grid * 2 * ITERS);
        std::vector<unsigned> hs(grid), hx(grid); std::vector<float> hmma(grid); unsigned hbad;
        CHECK(cudaMemcpy(hm.data(), marks, hm.size() * 8, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hs.data(), sm_of, grid * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hx.data(), chk_x, grid * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(hmma.data(), chk_mma, grid * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&hbad, bad, 4, cudaMemcpyDeviceToHost));
        // checks: the accumulators, the integer chains / the chase's end, the copy (device side), two blocks per SM
        bool ok = hbad == 0;
        const float want_mma = 32.f * 16.f * (ny / 8) * ITERS;
        unsigned long long sumit = (unsigned long long)ITERS * (ITERS - 1) / 2;
        for (int b = 0; b < grid; ++b) {
          ok &= hmma[b] == want_mma;
          if (mode == 1) ok &= hx[b] == (unsigned)(28 + 8 * (nx / 8) * sumit);  // lane 0: x_i = i + (nx/8) sum(it)
          if (mode == 2) ok &= hx[b] == (unsigned)((((unsigned long long)b * 256u * 97u) % CHASE_N +
                                                     (unsigned long long)nx * ITERS * CHASE_STEP * 32) % CHASE_N);
        }
        std::vector<int> per(256, 0);
        for (int b = 0; b < grid; ++b) per[hs[b] % 256]++;
        int two = 0;
        for (int v : per) two += v == 2;
        if (rep < 0) continue;
        std::fprintf(lf, "%d,%d,%d,%d,%d,%d,%.0f,%.4f,%d,%d\n", li, mode, nx, ny, bps, rep, mhz, ms, two, ok ? 1 : 0);
        FILE* mf = std::fopen((out + "/marks_" + std::to_string(li) + ".csv").c_str(), "w");
        for (int b = 0; b < grid; ++b) {
          const unsigned long long* r = hm.data() + (size_t)b * 2 * ITERS;
          std::fprintf(mf, "%d,%u,%llu", b, hs[b], r[0]);
          for (int j = 1; j < 2 * ITERS; ++j) std::fprintf(mf, ",%lld", (long long)(r[j] - r[0]));
          std::fprintf(mf, "\n");
        }
        std::fclose(mf);
        ++li;
      }
    }
  }
  std::fclose(lf);
  std::printf("%d launches\n", li);
  return 0;
}
