// The k loop of the shared-memory tiled SGEMM measured by sgemm.cu (run 1), round3/order.cu (rounds 3, 5) and
// round24/asym24.cu (round 24, rows `ld` floats apart): one thread per element of C, T x T tiles of A and B staged
// through shared memory. Returns element (row, col) of A B for N x N operands. Forced inline, so each kernel's
// machine code is what was measured: the three programs' cubins (nvcc -O3 -arch=sm_90) are byte for byte the same
// as when the loop was written out in each.
#pragma once

template <int T>
__device__ __forceinline__ float tiled_dot(const float* A, const float* B, float (&As)[T][T], float (&Bs)[T][T],
                                           int row, int col, int N, int ld) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  float acc = 0.f;
  for (int k0 = 0; k0 < N; k0 += T) {
    As[ty][tx] = A[(size_t)row * ld + k0 + tx];
    Bs[ty][tx] = B[(size_t)(k0 + ty) * ld + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  return acc;
}
