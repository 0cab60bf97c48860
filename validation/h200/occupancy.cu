// Occupancy on the H200: the CUDA runtime's answer over a sweep, and real residency for a subset.
//
// Kernels kreg<R> are capped with __maxnreg__(R) and carry a register-hungry body (64 live floats,
// more with larger R) behind a run-time flag, so ptxas allocates (close to) R registers; the real count
// is read back with cudaFuncGetAttributes and is what the CSV records.
//
// Mode "api": for every kernel x threads x dynamic shared memory x carve-out preference, print
// cudaOccupancyMaxActiveBlocksPerMultiprocessor (MaxDynamicSharedMemorySize is raised to the opt-in
// maximum first, so blocks above 48 KiB are legal). carveout -1 = never set (driver default).
// Mode "hw": for a list of configurations, launch a grid of 34 x SMs spinning blocks (200 us each)
// and record the largest number of blocks seen resident on one SM at once (atomics on %smid).
//
// Usage: ./occupancy api > occupancy_api.csv ; ./occupancy hw > occupancy_hw.csv
#include <cstring>
#include <string>
#include <vector>
#include "common.h"

template <int R>
__global__ void __maxnreg__(R) kreg(float* buf, int mode, unsigned long long spin_ns, int* cur, int* peak) {
  if (mode == 1) {
    // register-hungry body: NV live values updated in an unrolled loop
    constexpr int NV = R < 64 ? 64 : (R > 240 ? 240 : R);
    float v[NV];
#pragma unroll
    for (int i = 0; i < NV; ++i) v[i] = buf[threadIdx.x + i * blockDim.x];
    for (int it = 0; it < 4; ++it) {
#pragma unroll
      for (int i = 0; i < NV; ++i) v[i] = v[i] * v[(i + 1) % NV] + v[(i + 7) % NV];
    }
#pragma unroll
    for (int i = 0; i < NV; ++i) buf[threadIdx.x + i * blockDim.x] = v[i];
  } else if (mode == 2) {
    // residency probe: count blocks on this SM while the block spins
    unsigned s = smid();  // no __shared__ variable: the kernel must have 0 B of static shared memory
    if (threadIdx.x == 0) {
      int now = atomicAdd(&cur[s], 1) + 1;
      atomicMax(&peak[s], now);
    }
    __syncthreads();
    unsigned long long t0 = globaltimer_ns();
    while (globaltimer_ns() - t0 < spin_ns) { }
    __syncthreads();
    if (threadIdx.x == 0) atomicSub(&cur[s], 1);
  }
}

typedef void (*kfn)(float*, int, unsigned long long, int*, int*);
struct K { int cap; kfn f; };
static const K kernels[] = {
  {16, kreg<16>}, {24, kreg<24>}, {32, kreg<32>}, {37, kreg<37>}, {40, kreg<40>}, {48, kreg<48>},
  {56, kreg<56>}, {64, kreg<64>}, {65, kreg<65>}, {72, kreg<72>}, {80, kreg<80>}, {96, kreg<96>},
  {128, kreg<128>}, {168, kreg<168>}, {200, kreg<200>}, {232, kreg<232>}, {255, kreg<255>},
};

static int numregs(kfn f) {
  cudaFuncAttributes a; CHECK(cudaFuncGetAttributes(&a, (const void*)f));
  if (a.sharedSizeBytes != 0) { std::fprintf(stderr, "kernel has %zu B static smem\n", a.sharedSizeBytes); std::exit(1); }
  return a.numRegs;
}

static int api(kfn f, int threads, int smem, int carve, int optin_max) {
  CHECK(cudaFuncSetAttribute((const void*)f, cudaFuncAttributeMaxDynamicSharedMemorySize, optin_max));
  CHECK(cudaFuncSetAttribute((const void*)f, cudaFuncAttributePreferredSharedMemoryCarveout, carve));
  int blocks = -1;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, smem);
  if (e != cudaSuccess) { cudaGetLastError(); return -1; }
  return blocks;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "api";
  cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0));
  const int optin = (int)p.sharedMemPerBlockOptin;
  if (mode == "props") {
    std::printf("name,%s\ncc,%d.%d\nsms,%d\nmaxThreadsPerMultiProcessor,%d\nmaxBlocksPerMultiProcessor,%d\n"
                "regsPerMultiprocessor,%d\nregsPerBlock,%d\nsharedMemPerMultiprocessor,%zu\nsharedMemPerBlock,%zu\n"
                "sharedMemPerBlockOptin,%zu\nreservedSharedMemPerBlock,%zu\nl2CacheSize,%d\nmemoryBusWidth,%d\n"
                "totalGlobalMem,%zu\n",
                p.name, p.major, p.minor, p.multiProcessorCount, p.maxThreadsPerMultiProcessor,
                p.maxBlocksPerMultiProcessor, p.regsPerMultiprocessor, p.regsPerBlock, p.sharedMemPerMultiprocessor,
                p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock, p.l2CacheSize,
                p.memoryBusWidth, p.totalGlobalMem);
    int clk = 0, mclk = 0;
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
    cudaDeviceGetAttribute(&mclk, cudaDevAttrMemoryClockRate, 0);
    std::printf("clockRate_kHz,%d\nmemoryClockRate_kHz,%d\n", clk, mclk);
    return 0;
  }
  if (mode == "api") {
    const int threads[] = {32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024};
    const int smems[] = {0, 1024, 7168, 16384, 31744, 48128, 49152, 65536, 73728, 98304, 102400,
                         115712, 115713, 153600, 204800, 232448};
    const int carves[] = {-1, 0, 10, 25, 50, 60, 75, 100};
    std::printf("reg_cap,regs,threads,smem_bytes,carveout,blocks_per_sm\n");
    for (const K& k : kernels) {
      int r = numregs(k.f);
      for (int c : carves)
        for (int t : threads)
          for (int s : smems) std::printf("%d,%d,%d,%d,%d,%d\n", k.cap, r, t, s, c, api(k.f, t, s, c, optin));
    }
    return 0;
  }
  if (mode == "hw") {
    struct C { int ki, threads, smem, carve; };
    // (kernel index into kernels[], threads, dynamic smem, carveout)
    const C cfgs[] = {
      {2, 128, 0, -1}, {2, 256, 0, -1}, {2, 1024, 0, -1}, {4, 96, 0, -1}, {4, 128, 0, -1}, {9, 128, 0, -1},
      {9, 256, 0, -1}, {7, 1024, 0, -1}, {8, 512, 0, -1}, {12, 128, 0, -1}, {16, 128, 0, -1}, {16, 256, 0, -1},
      {2, 64, 16384, 100}, {2, 64, 16384, 50}, {2, 64, 16384, 25}, {2, 64, 16384, 0}, {2, 64, 7168, 0},
      {2, 64, 0, 0}, {2, 64, 0, 10}, {2, 256, 115712, -1}, {2, 256, 115713, -1}, {2, 256, 73728, -1},
      {2, 256, 49152, -1}, {9, 256, 73728, -1}, {2, 128, 31744, 60}, {5, 160, 1024, -1}, {3, 320, 0, -1},
      {10, 192, 48128, 75}, {13, 64, 0, -1}, {14, 96, 65536, 25},
    };
    std::printf("reg_cap,regs,threads,smem_bytes,carveout,api_blocks_per_sm,grid,hw_max_resident_per_sm,hw_min_peak_per_sm\n");
    int *cur, *peak; float* buf;
    CHECK(cudaMalloc(&cur, 1024 * sizeof(int)));
    CHECK(cudaMalloc(&peak, 1024 * sizeof(int)));
    CHECK(cudaMalloc(&buf, 1 << 20));
    for (const C& c : cfgs) {
      const K& k = kernels[c.ki];
      int a = api(k.f, c.threads, c.smem, c.carve, optin);
      if (a <= 0) { std::printf("%d,%d,%d,%d,%d,%d,0,-1,-1\n", k.cap, numregs(k.f), c.threads, c.smem, c.carve, a); continue; }
      // enough blocks for every SM to reach the block limit (32), so a driver more generous than the API shows
      int grid = p.multiProcessorCount * 34;
      CHECK(cudaMemset(cur, 0, 1024 * sizeof(int)));
      CHECK(cudaMemset(peak, 0, 1024 * sizeof(int)));
      k.f<<<grid, c.threads, c.smem>>>(buf, 2, 200000ull, cur, peak);
      CHECK_LAUNCH();
      CHECK(cudaDeviceSynchronize());
      std::vector<int> h(p.multiProcessorCount);
      CHECK(cudaMemcpy(h.data(), peak, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
      int mx = 0, mn = 1 << 30;
      for (int v : h) { mx = v > mx ? v : mx; mn = v < mn ? v : mn; }
      std::printf("%d,%d,%d,%d,%d,%d,%d,%d,%d\n", k.cap, numregs(k.f), c.threads, c.smem, c.carve, a, grid, mx, mn);
    }
    return 0;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 1;
}
