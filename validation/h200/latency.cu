// Load-to-use latency by pointer chasing, one thread, on the H200.
//
// An array of 32-bit indices forms one random cycle over `footprint / 128` slots, one slot per 128-byte
// line. A single thread follows it for `hops` steps; cycles (clock64) and nanoseconds (%globaltimer)
// per hop are reported (the timed run only; see the warm-up rule in main). Loads use ld.global.ca (L1 and L2) for the L1 rows and ld.global.cg (L2 only,
// bypassing L1) for the others. Footprints within the 60 MiB L2 measure L2 hits (both L2 partitions,
// averaged); larger ones measure DRAM (with TLB misses on the largest).
//
// Usage: ./latency > latency_raw.csv
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include "common.h"

template <bool CG>
__global__ void chase(const unsigned* next, int hops, unsigned start, unsigned long long* out, unsigned* sink) {
  unsigned p = start;
  // warm-up pass over a few hops so the first misses of instruction fetch are out of the timing
  for (int i = 0; i < 64; ++i) p = CG ? __ldcg(next + p) : __ldca(next + p);
  unsigned long long c0 = clock64(), t0 = globaltimer_ns();
  for (int i = 0; i < hops; ++i) p = CG ? __ldcg(next + p) : __ldca(next + p);
  unsigned long long c1 = clock64(), t1 = globaltimer_ns();
  out[0] = c1 - c0; out[1] = t1 - t0; sink[0] = p;
}

int main() {
  struct F { const char* level; size_t bytes; bool cg; int hops; };
  const F cases[] = {
    {"L1", 16 << 10, false, 20000},        {"L2", 4 << 20, true, 20000},   {"L2", 16 << 20, true, 20000},
    {"L2", 40 << 20, true, 20000},         {"DRAM", 256u << 20, true, 20000}, {"DRAM", 1024u << 20, true, 20000},
    {"DRAM", 4096ull << 20, true, 10000},
  };
  std::printf("level,footprint_bytes,hops,cycles_per_hop,ns_per_hop\n");
  unsigned long long* out; unsigned* sink;
  CHECK(cudaMalloc(&out, 16)); CHECK(cudaMalloc(&sink, 4));
  std::mt19937_64 rng(7);
  for (const F& f : cases) {
    size_t slots = f.bytes / 128, words = f.bytes / 4;
    std::vector<unsigned> order(slots);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin() + 1, order.end(), rng);
    std::vector<unsigned> next(words, 0);
    for (size_t i = 0; i < slots; ++i) next[(size_t)order[i] * 32] = order[(i + 1) % slots] * 32;
    unsigned* d; CHECK(cudaMalloc(&d, f.bytes));
    CHECK(cudaMemcpy(d, next.data(), f.bytes, cudaMemcpyHostToDevice));
    // Cache-resident footprints (L1, L2): one warm-up pass over the whole cycle, then the timed run from the
    // same start (every line is a hit). DRAM footprints: a warm-up run, then the timed run continues from
    // where it stopped, so it touches lines no earlier run brought into the L2.
    const bool resident = std::string(f.level) != "DRAM";
    const int warm_hops = resident ? (int)std::min<size_t>(slots + 64, 1u << 22) : f.hops;
    auto launch = [&](int hops, unsigned start) {
      if (f.cg) chase<true><<<1, 1>>>(d, hops, start, out, sink); else chase<false><<<1, 1>>>(d, hops, start, out, sink);
      CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    };
    launch(warm_hops, 0);
    unsigned end; CHECK(cudaMemcpy(&end, sink, 4, cudaMemcpyDeviceToHost));
    launch(f.hops, resident ? 0u : end);
    unsigned long long h[2]; CHECK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
    std::printf("%s,%zu,%d,%.1f,%.1f\n", f.level, f.bytes, f.hops, (double)h[0] / f.hops, (double)h[1] / f.hops);
    CHECK(cudaFree(d));
  }
  return 0;
}
