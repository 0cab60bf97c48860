// Load-to-use latency by pointer chasing, one thread, on the H200.
//
// An array of 32-bit indices forms one random cycle over `footprint / 128` slots, one slot per 128-byte
// line. A single thread follows it for `hops` steps; cycles (clock64) and nanoseconds (%globaltimer)
// per hop are reported. Loads use ld.global.ca (L1 and L2) for the L1 rows and ld.global.cg (L2 only,
// bypassing L1) for the others. Footprints within the 60 MiB L2 measure L2 hits (both L2 partitions,
// averaged); larger ones measure DRAM (with TLB misses on the largest).
//
// Usage: ./latency > latency_raw.csv
#include <algorithm>
#include <numeric>
#include <random>
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
    for (int rep = 0; rep < 2; ++rep) {  // the second run is reported (warm TLB and L2 where they fit)
      if (f.cg) chase<true><<<1, 1>>>(d, f.hops, 0, out, sink); else chase<false><<<1, 1>>>(d, f.hops, 0, out, sink);
      CHECK_LAUNCH(); CHECK(cudaDeviceSynchronize());
    }
    unsigned long long h[2]; CHECK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
    std::printf("%s,%zu,%d,%.1f,%.1f\n", f.level, f.bytes, f.hops, (double)h[0] / f.hops, (double)h[1] / f.hops);
    CHECK(cudaFree(d));
  }
  return 0;
}
