"""Numerics lab: what a GEMM computes, not how fast (seed 000 sections 1.1, 6.2, 12, 15.3, 17).

* ``arith``    exactly emulated fp32 / fp16 / bf16 / fp8 arithmetic (round to nearest even, subnormals, FMA).
* ``orders``   C = A @ B summed in a kernel's real order (sequential, blocked, SIMD lanes, split-K, pairwise,
               Kahan), accumulator and output formats, FMA or mul + add; the six literal loop orders.
* ``error``    an exact-to-float64 reference (Dot2) and errors in units of Higham's gamma_K |A||B| bound.
* ``strassen`` Strassen and Winograd with a cutoff, in emulated arithmetic; operation counts; Higham's bounds.
* ``quant``    int8 / int4 quantization with scale and zero point; bytes and dequantization work.
* ``lab``      the experiment (``python -m gemmsim numerics FILE`` or ``run FILE`` with ``kind: numerics``): CSV
               tables, ``figures`` and a report whose ``verdicts`` are computed from the rows; its ``strassen_time``
               study runs the Strassen/Winograd trace kernels (gemmsim.kernels.cpu_strassen) through the CPU models.
"""
