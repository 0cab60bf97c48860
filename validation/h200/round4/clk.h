// Round 3 helpers: per-launch SM clock from inside the kernel.
//
// A kernel that records its clock stores, for its first CLK_BLOCKS blocks, thread 0's (globaltimer, clock64)
// at block start and block end. Host side: MHz = sum(d clock64) / sum(d globaltimer ns) * 1000 over those
// blocks (clock64 counts the SM's own cycles, %globaltimer nanoseconds), i.e. the clock the launch ran at.
#pragma once
#include <vector>
#include "../common.h"

#define CLK_BLOCKS 64

struct ClkRec { unsigned long long g0, g1, c0, c1; };

__device__ __forceinline__ void clk_store(ClkRec* rec, unsigned block, unsigned long long g0, unsigned long long c0) {
  if (rec != nullptr && block < CLK_BLOCKS) {
    unsigned long long c1 = clock64(), g1 = globaltimer_ns();
    rec[block] = ClkRec{g0, g1, c0, c1};
  }
}

// Clock of the last launch that wrote `rec` (nblocks = min(grid, CLK_BLOCKS)); also clears it.
static double clk_mhz(ClkRec* d_rec, int nblocks) {
  if (nblocks > CLK_BLOCKS) nblocks = CLK_BLOCKS;
  std::vector<ClkRec> h(nblocks);
  CHECK(cudaMemcpy(h.data(), d_rec, nblocks * sizeof(ClkRec), cudaMemcpyDeviceToHost));
  double dc = 0, dg = 0;
  for (auto& r : h) if (r.g1 > r.g0 && r.c1 > r.c0) { dc += (double)(r.c1 - r.c0); dg += (double)(r.g1 - r.g0); }
  CHECK(cudaMemset(d_rec, 0, CLK_BLOCKS * sizeof(ClkRec)));
  return dg > 0 ? dc / dg * 1e3 : -1.0;
}

static ClkRec* clk_alloc() {
  ClkRec* r; CHECK(cudaMalloc(&r, CLK_BLOCKS * sizeof(ClkRec))); CHECK(cudaMemset(r, 0, CLK_BLOCKS * sizeof(ClkRec)));
  return r;
}
