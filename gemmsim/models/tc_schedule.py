"""When the blocks of a multistage tensor-core kernel (cp.async + mma.sync) run in step, and how fast they drift apart.

The memory system's bytes depend on which blocks share the L2 at a time, so on how the resident blocks sit in their
k-loops (``gpu_memory.simulate_memory``'s ``stagger``). For these kernels the rule is:

1. **The first wave starts together.** Every block the GPU can hold starts at the launch (H200: the first wave of
   all 48 traced launches of validation/h200/round30 started within a few microseconds).
2. **Blocks that wait for their copies can hold in step.** Blocks of one wave read the same A and B tiles at the same
   k-step; the one that asks first brings a tile into the L2 and the others find it there. If a block's step waits
   for its copy, a trailing block -- whose copies are L2 hits -- runs a shorter step and catches up; if the pipeline
   hides the copy latency (deep stages, or other resident blocks filling the wait), an L2 hit buys nothing. Against
   that pull, the blocks of a busy SM push each other apart (its oldest block is served first: validation/h200/round11), the
   faster the more blocks an SM holds (point 3). :func:`restoring_gain` is the pull: the SM pipeline's unloaded step
   with every copy from DRAM over the step with every copy from the L2, less one -- what a trailing block catches up
   per step, so per block (per wave), as a fraction of a block's time. :func:`holds`: the blocks hold in step where
   it exceeds the push, the spread the waves gain a wave without it (``DRIFT_PER_WAVE`` x blocks per SM).
   Round 30's 48 launches: the 128x128 tiles at S = 1, 2 pull 0.14-0.27 against a push of 0.075 and held (at most
   0.05 of a block apart after 15 waves); at S = 3, 4, and the 64x64 tile at S >= 2, the pull is 0.000-0.005 and the
   waves spread; the 64x64 tile at S = 1 is close on both sides (mma.sync: pull 0.24, push 0.26 at 7 blocks per SM,
   drifts; WMMA: 0.30 against 0.22 at 6, so held -- the one miss: the H200 drifts it, 0.15 a wave, slower than any
   other 64x64 launch).
3. **Otherwise the waves spread** by ``DRIFT_PER_WAVE`` x blocks per SM a wave (5-95 % range of a wave's starts
   over a block's time), until they are spread evenly over a block (a range of ``EVEN_SPREAD``, stagger 1).
   Fitted on round 30's mma.sync launches at 4096 (``validation/h200/round31/drift31.py``): rms 0.18 there, 0.16 on
   the held-out launches (mma.sync at 8192, WMMA), where a constant rate a wave did worse (0.19 / 0.26).

What is not modelled: why the rate is what it is (more blocks per SM, faster: the traces say so, no mechanism here),
nor a pull that only slows the drift (the 64x64 tile at S = 1 drifts at 0.15-0.23 a wave, the others at 0.27-0.58).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from gemmsim.models import sm_pipeline as sp

#: Whether ``sim/gpu.py`` applies this rule (False: these kernels take the even spread of ``gpu_memory.start_stagger``,
#: the model before round 31 -- kept so that earlier rounds' predictions can be recomputed as they were made).
APPLY = True

#: Whether a held launch's copies wait for DRAM (``sim/gpu.py``): blocks in step ask for a new tile together, so the
#: trailing ones "hit" in the L2 only on lines still on their way, and a stage lands with its slowest line -- a DRAM
#: access's whole latency -- unless the operands fit in the L2 and stay there between launches
#: (validation/h200/round33: one block per SM at S = 2). False: the copy latency by hit rate, as before round 33.
HELD_DRAM_ROUND_TRIP = True

#: Growth of a wave's spread (5-95 % range of its block starts, in block times), per wave and block per SM
#: (validation/h200/round31/drift31.py: least squares on the mma.sync launches at N = 4096 before saturation).
DRIFT_PER_WAVE = 0.0374

#: The 5-95 % range of starts spread evenly over one block: what ``stagger`` 1 gives.
EVEN_SPREAD = 0.9

#: Staggers at which a drifting launch's memory system is simulated; each wave's stagger is shared out between the
#: two nearest (linear), as ``gpu_memory.column_drift_weights`` does for block columns.
STAGGER_GRID = (0.0, 0.5, 1.0)


def restoring_gain(cost: sp.StepCost, blocks: int, hit_clk: float, miss_clk: float) -> float:
    """How much longer the steady step is with every copy from DRAM than with every copy from the L2 (a fraction of
    the L2 step), ``blocks`` blocks on the SM, no queueing: what a trailing block gains by finding its tiles in L2."""
    base = replace(cost, queues=())
    fast = sp.pipeline_time(replace(base, copy_latency_clk=hit_clk), blocks).step_clk
    slow = sp.pipeline_time(replace(base, copy_latency_clk=miss_clk), blocks).step_clk
    return (slow - fast) / fast if fast > 0 else 0.0


def holds(gain: float, blocks_per_sm: int) -> bool:
    """Whether the blocks hold in step: the pull (``restoring_gain``, block times a wave) exceeds the push (the spread
    a wave adds without it, ``DRIFT_PER_WAVE`` x blocks per SM)."""
    return gain > DRIFT_PER_WAVE * blocks_per_sm


def wave_staggers(blocks: int, wave_size: int, blocks_per_sm: int) -> tuple[np.ndarray, np.ndarray]:
    """(stagger of each wave, its share of the blocks) for a drifting launch: wave w spread over
    min(w x ``DRIFT_PER_WAVE`` x blocks per SM / ``EVEN_SPREAD``, 1) of a block."""
    n = -(-blocks // wave_size)
    w = np.arange(n)
    stagger = np.minimum(w * DRIFT_PER_WAVE * blocks_per_sm / EVEN_SPREAD, 1.0)
    share = np.full(n, float(wave_size))
    share[-1] = blocks - wave_size * (n - 1)
    return stagger, share / blocks


def grid_weights(stagger: np.ndarray, share: np.ndarray, grid: tuple = STAGGER_GRID) -> dict[float, float]:
    """The waves' staggers shared out between the two nearest points of ``grid`` (linear), weights summing to 1;
    points with no weight left out."""
    g = np.asarray(grid, dtype=float)
    out = dict.fromkeys(g.tolist(), 0.0)
    for s, q in zip(stagger, share):
        s = float(np.clip(s, g[0], g[-1]))
        j = min(int(np.searchsorted(g, s, side="right")) - 1, len(g) - 2)
        f = (s - g[j]) / (g[j + 1] - g[j])
        out[float(g[j])] += q * (1 - f)
        out[float(g[j + 1])] += q * f
    return {k: v for k, v in out.items() if v > 1e-12}


def work_spread(held: bool, blocks_per_sm: int) -> float:
    """How unequal a launch's blocks' times are, for the dispatch model (``sm_pipeline.dispatch_cycles``: block times
    spread evenly over this width, in block times): 0 where the blocks hold in step; else the spread the waves gain a
    wave (``DRIFT_PER_WAVE`` x blocks per SM, as a 5-95 % range) as an even spread of a block's time, so that one wave
    of such blocks gains that range."""
    return 0.0 if held else min(DRIFT_PER_WAVE * blocks_per_sm / EVEN_SPREAD, 1.0)
