// Round 24 (issue 11): which L2 partition is home to which address, over 512 MiB. H200, sm_90.
//
// Round 5's partition_probe.cu found, over one 128 KiB chain, that a line's home partition is constant over 4 KiB
// and alternates with address bits 12, 13 and 15. Here: one probe line in every 4 KiB chunk of a 512 MiB buffer
// (the line at (chunk mod 32) * 128 B inside it, so the probes spread over the low address bits), walked in segments
// of SEG lines. Per segment, as round 5: flush the L2 (cudaMemset of 512 MiB elsewhere), SM R (partition 0) walks the
// segment's dependent chain with ld.global.cg (each line then sits in its home partition and a clean copy in R's
// near one), then SM T walks it, timing each load with clock64. T in the other partition (SM 2) finds the lines
// homed in its own partition near (~300 cycles) and the rest far (~520); T in R's partition (SM 1, the control,
// first segment only) finds all near. Also every line of the buffer's first 2 MiB (is the home constant per 4 KiB
// everywhere?), and the first 64 MiB of a second buffer (other physical pages).
// Output (stdout): buffer,mode,target_sm,offset,cycles   (offset: bytes from the buffer's start); stderr: checks.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int SEG = 16384;

__device__ __forceinline__ unsigned smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
__device__ __forceinline__ unsigned ld_cg(const unsigned* p) {
  unsigned v; asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v;
}

// The chain: word first (u32 index) holds the index of the next probe word; n loads.
__global__ void walk(const unsigned* buf, unsigned first, int n, int target, unsigned* lat, unsigned* last, unsigned* seen) {
  extern __shared__ unsigned s_lat[];
  unsigned me = smid();
  if (threadIdx.x == 0) atomicAdd(&seen[me], 1u);
  if ((int)me != target || threadIdx.x != 0) return;
  __shared__ volatile unsigned s_dep;
  unsigned idx = first;
  long long prev = clock64();
  for (int i = 0; i < n; ++i) {
    idx = ld_cg(buf + idx);
    s_dep = idx;
    long long t = clock64();
    s_lat[i] = (unsigned)(t - prev);
    prev = t;
  }
  for (int i = 0; i < n; ++i) lat[i] = s_lat[i];
  *last = idx;
}

int nsm, smem, bad_place = 0, bad_chain = 0;
unsigned *d_lat, *d_last, *d_seen; unsigned char* d_flush;
const size_t FLUSH = 512ull << 20;

// Walk the probe offsets (bytes, ascending) of buffer buf in segments; print T's latencies.
void probe(unsigned* buf, const std::vector<size_t>& offs, int bufno, const char* mode, int T, int max_segments) {
  std::vector<unsigned> hl(SEG), seen(nsm);
  for (size_t s0 = 0, seg = 0; s0 < offs.size() && (int)seg < max_segments; s0 += SEG, ++seg) {
    const int n = (int)std::min((size_t)SEG, offs.size() - s0);
    for (int i = 0; i < n; ++i) {  // link the segment's words into a ring
      unsigned next = (unsigned)(offs[s0 + (i + 1) % n] / 4);
      CK(cudaMemcpy((char*)buf + offs[s0 + i], &next, 4, cudaMemcpyHostToDevice));
    }
    const unsigned first = (unsigned)(offs[s0] / 4);
    CK(cudaMemset(d_flush, (int)(seg & 0xff), FLUSH));
    CK(cudaMemset(d_seen, 0, nsm * 4));
    walk<<<nsm, 32, smem>>>(buf, first, n, 0, d_lat, d_last, d_seen);  // R = SM 0
    walk<<<nsm, 32, smem>>>(buf, first, n, T, d_lat, d_last, d_seen);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(hl.data(), d_lat, n * 4, cudaMemcpyDeviceToHost));
    unsigned hlast; CK(cudaMemcpy(&hlast, d_last, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(seen.data(), d_seen, nsm * 4, cudaMemcpyDeviceToHost));
    if (hlast != first) bad_chain++;
    for (int s = 0; s < nsm; ++s) if (seen[s] != 2u) { bad_place++; break; }
    for (int i = 0; i < n; ++i) printf("%d,%s,%d,%zu,%u\n", bufno, mode, T, offs[s0 + i], hl[i]);
  }
}

int main() {
  CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  int smem_max = 0; CK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  smem = smem_max - 256;
  if (SEG * 4 > smem) { fprintf(stderr, "SEG too large\n"); return 1; }
  CK(cudaFuncSetAttribute(walk, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const size_t BUF = 512ull << 20;
  unsigned *b0, *b1;
  CK(cudaMalloc(&b0, BUF)); CK(cudaMalloc(&b1, BUF));
  CK(cudaMalloc(&d_lat, SEG * 4)); CK(cudaMalloc(&d_last, 4)); CK(cudaMalloc(&d_seen, nsm * 4)); CK(cudaMalloc(&d_flush, FLUSH));
  fprintf(stderr, "buffers %p %p\n", (void*)b0, (void*)b1);
  printf("buffer,mode,target_sm,offset,cycles\n");
  std::vector<size_t> chunks, lines, chunks1;
  for (size_t c = 0; c < BUF / 4096; ++c) chunks.push_back(c * 4096 + (c % 32) * 128);
  for (size_t l = 0; l < (2u << 20) / 128; ++l) lines.push_back(l * 128);
  for (size_t c = 0; c < (64u << 20) / 4096; ++c) chunks1.push_back(c * 4096 + (c % 32) * 128);
  probe(b0, chunks, 0, "chunk", 1, 1);         // control: SM 1 shares SM 0's partition
  probe(b0, chunks, 0, "chunk", 2, 1 << 20);   // SM 2: the other partition
  probe(b0, lines, 0, "line", 2, 1 << 20);
  probe(b1, chunks1, 1, "chunk", 2, 1 << 20);
  fprintf(stderr, "sms %d smem %d  launches with a block not alone: %d  wrong chain ends: %d\n", nsm, smem, bad_place, bad_chain);
  return 0;
}
