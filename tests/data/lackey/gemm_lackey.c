/*
 * The CPU kernels of gemmsim (gemmsim/kernels/cpu.py) as plain C, for valgrind lackey:
 * the six loop orders and three blocked variants, each computing C[i][j] += A[i][k] * B[k][j]
 * with all loops ascending, on row-major A (M x K), B (K x N), C (M x N).
 *
 * Usage: gemm_lackey M N K BM BN BK   (compile with -DTYPE=float or -DTYPE=double)
 *
 * A, B and C are separate global arrays, so at -O1 gcc knows they do not alias and may keep the
 * loop-invariant operand of the innermost loop in a register (gemmsim's promotion="hoisted");
 * at -O0 every access goes to memory (promotion="none"). M, N, K and the tile sizes come from the
 * command line so gcc cannot unroll the loops away. Before each kernel the program stores the kernel's
 * number to the volatile global gemmsim_mark (and 0 after the last one): in the lackey trace those
 * stores separate the kernels. The addresses of A, B, C and the marker are printed on stdout.
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef TYPE
#define TYPE float
#endif
#define MAXE 4096 /* elements per matrix: enough for 64 x 64 */

TYPE A[MAXE], B[MAXE], C[MAXE];
volatile int gemmsim_mark;

#define BODY C[i * N + j] += A[i * K + k] * B[k * N + j]
#define F(v, lo, hi, st) for (v = (lo); v < (hi); v += (st))
/* three nested loops over i, j, k in the order of the macro's name, outer -> inner */
#define FOR3_ijk(li, hi_, si, lj, hj, sj, lk, hk, sk) F(i, li, hi_, si) F(j, lj, hj, sj) F(k, lk, hk, sk)
#define FOR3_ikj(li, hi_, si, lj, hj, sj, lk, hk, sk) F(i, li, hi_, si) F(k, lk, hk, sk) F(j, lj, hj, sj)
#define FOR3_jik(li, hi_, si, lj, hj, sj, lk, hk, sk) F(j, lj, hj, sj) F(i, li, hi_, si) F(k, lk, hk, sk)
#define FOR3_jki(li, hi_, si, lj, hj, sj, lk, hk, sk) F(j, lj, hj, sj) F(k, lk, hk, sk) F(i, li, hi_, si)
#define FOR3_kij(li, hi_, si, lj, hj, sj, lk, hk, sk) F(k, lk, hk, sk) F(i, li, hi_, si) F(j, lj, hj, sj)
#define FOR3_kji(li, hi_, si, lj, hj, sj, lk, hk, sk) F(k, lk, hk, sk) F(j, lj, hj, sj) F(i, li, hi_, si)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define ORDER(O) \
    __attribute__((noinline)) void loop_##O(long M, long N, long K) { \
        long i, j, k; \
        FOR3_##O(0, M, 1, 0, N, 1, 0, K, 1) BODY; \
    }

/* tile loops in order TO over tile starts (renamed i, j, k inside FOR3), element loops in order IO */
#define BLOCKED(TO, IO) \
    __attribute__((noinline)) void blocked_##TO##_##IO(long M, long N, long K, long BM, long BN, long BK) { \
        long ii, jj, kk; \
        { \
            long i, j, k; \
            FOR3_##TO(0, M, BM, 0, N, BN, 0, K, BK) { \
                ii = i; jj = j; kk = k; \
                long ie = MIN(ii + BM, M), je = MIN(jj + BN, N), ke = MIN(kk + BK, K); \
                { \
                    long i, j, k; \
                    FOR3_##IO(ii, ie, 1, jj, je, 1, kk, ke, 1) BODY; \
                } \
            } \
        } \
    }

ORDER(ijk) ORDER(ikj) ORDER(jik) ORDER(jki) ORDER(kij) ORDER(kji)
BLOCKED(ijk, ikj) BLOCKED(kij, ijk) BLOCKED(jki, kji)

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s M N K BM BN BK\n", argv[0]);
        return 2;
    }
    long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
    long BM = atol(argv[4]), BN = atol(argv[5]), BK = atol(argv[6]);
    if (M * K > MAXE || K * N > MAXE || M * N > MAXE) {
        fprintf(stderr, "matrices larger than %d elements\n", MAXE);
        return 2;
    }
    printf("A=%p B=%p C=%p MARK=%p ELEM=%zu\n", (void *)A, (void *)B, (void *)C, (void *)&gemmsim_mark, sizeof(TYPE));
    gemmsim_mark = 1; loop_ijk(M, N, K);
    gemmsim_mark = 2; loop_ikj(M, N, K);
    gemmsim_mark = 3; loop_jik(M, N, K);
    gemmsim_mark = 4; loop_jki(M, N, K);
    gemmsim_mark = 5; loop_kij(M, N, K);
    gemmsim_mark = 6; loop_kji(M, N, K);
    gemmsim_mark = 7; blocked_ijk_ikj(M, N, K, BM, BN, BK);
    gemmsim_mark = 8; blocked_kij_ijk(M, N, K, BM, BN, BK);
    gemmsim_mark = 9; blocked_jki_kji(M, N, K, BM, BN, BK);
    gemmsim_mark = 0;
    return 0;
}
