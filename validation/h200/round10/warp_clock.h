// Round 10's host side (smsp_share.cu, smsp_mio.cu): what one launch recorded per warp -- lane 0's clock64 at the start
// and end of its loop, rec[(block * W + warp) * 2 + {0, 1}] -- as the median over the blocks of each block's median loop
// time, for its MMA warps (slots < a: warps 0 .. 4a - 1) and its OTHER warps; -1 for a group with no loop.
#pragma once
#include <algorithm>
#include <vector>
#include "../common.h"

static double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct LoopTimes { double other, mma; };

static LoopTimes loop_times(const unsigned long long* d_rec, int sms, int W, int a) {
  std::vector<unsigned long long> h((size_t)sms * W * 2);
  CHECK(cudaMemcpy(h.data(), d_rec, h.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<double> om, mm;
  for (int blk = 0; blk < sms; ++blk) {
    std::vector<double> o, m;
    for (int w = 0; w < W; ++w) {
      unsigned long long t0 = h[((size_t)blk * W + w) * 2], t1 = h[((size_t)blk * W + w) * 2 + 1];
      if (t1 > t0) (w / 4 < a ? m : o).push_back((double)(t1 - t0));
    }
    if (!o.empty()) om.push_back(median(o));
    if (!m.empty()) mm.push_back(median(m));
  }
  return {median(om), median(mm)};
}
