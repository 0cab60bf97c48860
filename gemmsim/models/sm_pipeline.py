"""The per-k-step pipeline of a tensor-core GEMM on one SM: copies in flight, MMA issue, barriers.

A GEMM block (CTA) walks K in steps of BK. Each step needs its A and B tiles copied from global memory
into one of ``S`` shared-memory stage buffers and then runs the MMAs on them. This module simulates,
event by event, the ``B`` blocks resident on one SM doing that, and reports the SM's time per step and
where each step's time goes. Nothing in it is fitted: every cost is an input computed from the machine
file and the kernel's structure (``sim/gpu.py`` builds them).

Resources of one SM:

* ``sub_partitions`` (4) tensor pipes and issue ports, one per SM sub-partition (SMSP). Warp ``w`` of block
  ``b`` sits on SMSP ``(b*W + w) % 4``; a warp's step holds its SMSP for the longer of its MMAs,
  ``mma_clk * 4 / W`` (the block's FLOPs at the SM's tensor rate, split over its W warps, each SMSP doing a
  quarter of the rate), and its instruction issue, ``issue_clk`` (one instruction per clock); and a step lasts at
  least ``warp_latency_clk``, one warp's dependent instruction chain (so a lone block with few warps per SMSP is
  latency bound while co-resident blocks fill the issue slots it leaves). With ``issue_with_mma`` (the
  multistage mma.sync kernels, ``sim/gpu.py``) ``issue_clk`` counts the warp's instructions other than its
  MMAs and the SMSP is held for the MMAs *plus* them (MMA and other issue do not overlap on one SMSP), and the
  copy's issue, ``copy_issue_clk`` (the warp's cp.async and address instructions of the step), adds to it too:
  the same warps issue the copy and the MMAs from the same issue port, one after the other in their k-loop.
  A block of fewer than 4 warps leaves tensor pipes idle unless other blocks fill them; warps of several
  blocks on one SMSP queue for it.
* fragment waits (``groups``, from :func:`fragment_groups`): where a kernel's ldmatrix / mma order is given, each
  warp is simulated on its own: per group, its ldmatrix leave for the shared pipe, its first mma waits for their
  data (the measured ldmatrix latency, after the wait for the mma still reading a reused fragment register, less
  the warp's own mma in between) and then the group's mma and its share of other issue hold the warp's SMSP; the
  warps on an SMSP queue for it, so other warps fill one warp's waits where they have work. Without ``groups`` a
  block's warps hold their SMSPs for their whole step at once, as above.
* copy phase (``copy_segments``, from :func:`copy_segments`): a warp's copy code -- the address arithmetic, branches
  and cp.async of the next stage, as compiled -- issued in order at measured instruction latencies: runs of issue,
  each holding the warp's SMSP (queueing behind the other warps' MMA groups and copy runs), separated by the chain's
  waits, which other warps on the SMSP fill. (Given only ``copy_chain_clk``: the warp holds its SMSP for its issue
  slots, ``copy_issue_clk``, then waits out what is left of the chain.) Where the warps' copy code is simulated this
  way (with ``groups``), a stage's copy leaves as that code issues it: its bytes cross the memory port from the start
  of the copy phase, and the stage is complete ``copy_latency_clk`` after the later of the port and the last warp's
  last cp.async -- so at S >= 2 the latency shows through when copy phase + latency > (S - 1) x step, and S = 1 runs
  copy code, latency, MMAs in that order. (Otherwise the copy leaves at the step's barrier.)
* one shared-memory (MIO) pipe: ``smem_clk`` cycles per block step (ldmatrix fragment reads and the copies'
  shared writes, one 128-byte wavefront per clock), running alongside the MMAs of the same step
  (double-buffered fragments) and queueing between blocks.
* one memory port: a step's copy first holds it for ``copy_clk`` cycles (its bytes at the SM's share of the
  L2 / DRAM bandwidth, or the SM's async-copy throughput, whichever is slower), then is in flight for
  ``copy_latency_clk`` (any number of copies wait at once: Little's law).
* loaded latency (``queues``): the latency a copy sees grows with the load on the servers it passes. Each
  station is ``(name, service_clk, multiplicity)``: the cycles one step's copy holds it (its bytes over the
  station's bandwidth) and how many SMs' copies share it (1 for the SM's own copy path, the active SMs for the
  chip's L2 or DRAM). With B resident blocks each copying once per step T, the station's utilisation is
  rho = multiplicity * B * service / T and a copy waits, on average, the Pollaczek-Khinchine M/D/1 time
  a * service / (2 (1 - a)) (random arrivals, deterministic service), with a = rho (n - 1) / n the load an
  arriving copy sees from the other n - 1 of the n = multiplicity * B blocks (the finite-population, arrival-
  theorem correction of Schweitzer's mean-value analysis: a lone block's copy never queues behind its own
  copy of the next step -- the simulation's port already orders those). The copy's latency is
  ``copy_latency_clk`` plus the waits of all stations, and T itself depends on that latency, so the two are
  solved together (:func:`pipeline_time` iterates to a fixed point). The deterministic simulation alone has no
  such wait: its blocks settle into a staggered order in which copies never collide.
* Little's law on the chip (``little``): where the port holds a copy at the SM's own path rate rather than at its
  average share of the chip, nothing in the SM limits it to the chip's capacity; the chip stations (multiplicity
  > 1) then do: when the step would ask more of one than it passes (multiplicity x B x service > T), the copies'
  round trip grows until it does not -- in a closed system at saturation the round trip is the bytes in flight
  over the capacity (:func:`pipeline_time`, bisection on the latency). An SM whose copies are few (S = 1, or few
  blocks) gets its copies through at its own rate while the chip is below its ceiling.

Program of one block (``kind``):

* ``multistage`` with S >= 2 (CUTLASS 2.x, cp.async): the prologue issues the copies of steps 0..S-2; step i
  waits for its copy (``cp.async.wait_group S-2``), passes a ``__syncthreads`` (``barrier_clk``: the exposed
  cost of the barrier and of the first shared-memory read after it), issues the copy of step i+S-1 into the
  buffer step i-1 freed, then computes. So S-1 copies are in flight while a step computes, and a step takes
  ``max(barrier + compute, (barrier + copy) / (S-1), transfer)`` (:meth:`StepCost.closed_form_step_clk`).
* ``multistage`` with S = 1: copy, wait, barrier, compute, barrier (the single buffer must be free before the
  next copy): every step exposes the whole copy latency unless another resident block fills the gap. Blocks sharing
  an SM do fill it: a block's step is the longer of its step alone and the blocks' step with nothing to wait for
  (:func:`_pipeline_time`; the H200's two S = 1 blocks take no longer than one alone, validation/h200/round33),
  where the simulation by itself would run identical blocks in step.
* ``warp_specialized`` (Hopper, TMA): a producer warp issues the copy of step i as soon as buffer
  ``i mod S`` is released by the consumers (after step i-S computed), so up to S copies are in flight; the
  consumers wait on the stage's mbarrier (``barrier_clk``), compute and release it. No block-wide barrier.

The result (:class:`PipelineTime`) gives cycles for the blocks to finish and a per-step breakdown per block:
``copy_wait`` (waiting for a stage's data: ncu's long-scoreboard / barrier-on-copy stalls), ``barrier``,
``mma`` (the step's MMAs at the full rate, or its instruction issue when that is longer), ``contention`` (compute phase beyond that: tensor pipes shared with
other blocks, the shared-memory pipe when it is slower than the MMAs: MIO throttle).
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field, replace

import numpy as np
import simpy

from gemmsim.errors import KernelError

#: Steps simulated before extrapolating to the whole K loop (enough for an 8-stage pipeline to settle).
SIM_STEPS = 24

KINDS = ("multistage", "warp_specialized")
#: Utilisation at which a queue's wait is evaluated when the demand reaches or passes its capacity.
RHO_MAX = 0.95
#: Fixed-point iterations of loaded latency <-> step time (each one simpy run pair), and the tolerance in cycles.
LOAD_ITERATIONS = 6
LOAD_TOL_CLK = 2.0
#: Little's law on the chip stations: bisection steps for the latency at which the step meets their capacity, and the
#: relative shortfall of the step below that demand that is accepted.
LITTLE_ITERATIONS = 10
LITTLE_TOL = 0.005
PARTS = ("copy_wait", "barrier", "mma", "contention")
#: S = 1 blocks sharing an SM fill each other's copy waits (:func:`_pipeline_time`, validation/h200/round33); False
#: restores the plain simulation (its blocks in step), so earlier predictions can be recomputed
ONE_STAGE_INTERLEAVE = True
#: A launch's blocks take slots as they free and share the chip's rate (:func:`dispatch_cycles`, validation/h200/round36);
#: False: lockstep rounds on the busiest SM, the model before round 36 (earlier predictions recompute as made)
DISPATCH = True
#: True: in the dispatch model a block's fill and drain (its prologue's copy latency, the epilogue: the pipeline's time
#: for k blocks less k's steady steps) is a wait that takes none of the chip's rate, so the SM's other blocks may use it.
#: Off: they are work at the block's rate (round 36). Round 37 tried it (validation/h200/round37): round 34's ends a
#: little closer (correlation 0.63, was 0.56), the sweeps moved 1.4 % at most, one more 64x64 S pair wrong -- both
#: within one realisation's jitter, so the default stays until the end is an expectation over realisations
DISPATCH_PROLOGUE = False
#: True: a favoured SM's blocks run at their step with the copies' queue wait divided by the share
#: (:func:`favoured_step_ratio`), so a block that waits for each copy gains less than one with copies in flight
#: throughout (validation/h200/round38: traced, mma.sync S = 1 0.89-0.91 of the others' time, S >= 2 0.72-0.83).
#: False: every favoured SM draws the share itself, up to its cap (round 36)
FAVOURED_AT_LOAD = True
#: The golden ratio's fraction: block i's work takes the i-th point of its low-discrepancy sequence (dispatch_cycles)
GOLDEN = 0.6180339887498949


@dataclass(frozen=True)
class StepCost:
    """What one k-step of one block costs (SM cycles) and how the block pipelines its copies."""

    steps: int  # k-steps of one tile (ceil(K / BK))
    stages: int  # S: shared-memory stage buffers
    warps: int  # math (consumer) warps of the block
    mma_clk: float  # the step's MMAs at the SM's whole tensor rate (all sub-partitions)
    copy_latency_clk: float  # round trip of a step's copy once it has crossed the port
    copy_clk: float = 0.0  # memory port busy per step: bytes / the SM's bandwidth share
    smem_clk: float = 0.0  # shared-memory wavefronts per step
    issue_clk: float = 0.0  # cycles a warp's instructions of one step hold its sub-partition's issue port
    copy_issue_clk: float = 0.0  # of a warp's step: its copy instructions (cp.async + their addresses), one clock each
    copy_chain_clk: float = 0.0  # shortest time a warp's copy phase takes alone (its in-order chain: copy_phase())
    copy_segments: tuple = ()  # the copy phase as runs of issue and waits (copy_segments()): simulated under load
    issue_with_mma: bool = False  # the SMSP holds a warp for its MMAs plus its other issue (else the longer of the two)
    warp_latency_clk: float = 0.0  # shortest time one warp's step takes alone (its dependent instruction chain)
    barrier_clk: float = 0.0  # exposed per barrier
    kind: str = "multistage"
    sub_partitions: int = 4
    epilogue_clk: float = 0.0  # once per tile, after the last step (C stores)
    queues: tuple = ()  # loaded latency: ((name, service_clk, multiplicity), ...) of the servers a copy passes (module doc)
    groups: tuple = ()  # a warp's step as fragment groups ((ldmatrix wavefronts, mma, stall_clk, needs), ...): fragment_groups()
    ldsm_latency_clk: float = 0.0  # with groups: an ldmatrix's registers are ready this long after it issued (unloaded)
    little: bool = False  # the port holds a copy at the SM's own path rate; the chip stations' capacity holds the copies
    # back through their round trip (Little's law, pipeline_time) instead of the port at the SM's average share

    def __post_init__(self):
        if self.kind not in KINDS:
            raise KernelError(f"pipeline kind must be one of {', '.join(KINDS)} (got {self.kind!r})")
        if self.steps < 1 or self.stages < 1 or self.warps < 1 or self.sub_partitions < 1:
            raise KernelError(f"steps, stages, warps and sub_partitions must be >= 1 (got {self.steps}, {self.stages}, "
                              f"{self.warps}, {self.sub_partitions})")
        for name in ("mma_clk", "copy_latency_clk", "copy_clk", "smem_clk", "issue_clk", "copy_issue_clk", "copy_chain_clk",
                     "warp_latency_clk",
                     "ldsm_latency_clk",
                     "barrier_clk", "epilogue_clk"):
            v = getattr(self, name)
            if not (v >= 0 and math.isfinite(v)):
                raise KernelError(f"{name} must be a finite number >= 0 (got {v!r})")
        for seg in self.copy_segments:
            if len(seg) != 2 or not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in seg):
                raise KernelError(f"copy_segments must be ((issue slots, wait), ...), numbers >= 0 (got {seg!r})")
        issued = 0
        for g in self.groups:
            ok = len(g) == 4 and all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in (*g[0], g[1], g[2]))
            issued += len(g[0]) if ok else 0
            if not ok or not all(isinstance(i, int) and 0 <= i < issued for i in g[3]):
                raise KernelError(f"groups must be ((wavefronts, ...), mma, stall_clk, (ldmatrix index, ...)), numbers >= 0, "
                                  f"indices of ldmatrix issued so far (got {g!r})")
        if self.groups and not sum(g[1] for g in self.groups):
            raise KernelError("groups hold no MMA")
        for q in self.queues:
            if len(q) != 3 or not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in q[1:]):
                raise KernelError(f"queues must be (name, service_clk >= 0, multiplicity >= 0) (got {q!r})")

    def queue_wait_clk(self, blocks: int, step_clk: float) -> tuple[float, tuple]:
        """Mean wait of one copy over all ``queues`` when ``blocks`` blocks per SM each copy once per ``step_clk``:
        (cycles, utilisation of each station). M/D/1 (Pollaczek-Khinchine) W = a s / (2 (1 - a)) with the load seen
        by an arrival a = rho (n - 1) / n, n = multiplicity x blocks (module doc); a station at or past saturation
        is held at RHO_MAX (the port / transfer terms already cap the throughput)."""
        if step_clk <= 0:
            return 0.0, tuple(0.0 for _ in self.queues)
        wait, rhos = 0.0, []
        for _, service, mult in self.queues:
            n = mult * blocks
            rho = min(n * service / step_clk, RHO_MAX)
            rhos.append(rho)
            a = rho * (n - 1) / n if n > 1 else 0.0
            wait += a * service / (2.0 * (1.0 - a))
        return wait, tuple(rhos)

    @property
    def copy_total_clk(self) -> float:
        """A lone copy from issue to data: transfer + latency."""
        return self.copy_clk + self.copy_latency_clk

    @property
    def compute_clk(self) -> float:
        """One block's compute phase alone on the SM: MMAs on its busiest sub-partition, or the shared pipe."""
        per_smsp = -(-self.warps // self.sub_partitions) if self.warps >= self.sub_partitions else 1
        return max(per_smsp * self.warp_clk, self.smem_clk, self.warp_latency_clk)

    @property
    def warp_clk(self) -> float:
        """One warp's step on its sub-partition: its MMAs at a quarter of the SM's rate and its instruction issue (copy
        issue included) -- their sum with ``issue_with_mma``, else the longer of the two."""
        mma = self.mma_clk * self.sub_partitions / self.warps
        issue = self.issue_clk + self.copy_issue_clk
        return mma + issue if self.issue_with_mma else max(mma, issue)

    def closed_form_step_clk(self) -> float:
        """Steady step time T of ONE block alone on an SM (nothing else to hide anything), worked by hand
        (b = barrier, c = compute, x = transfer, copy = x + latency):

        * multistage S = 1: copy + b + c + b (nothing overlaps);
        * multistage S >= 2: the copy of step i+S-1 leaves after step i's barrier and must land before step
          i+S-1 starts: (S-1) T >= b + copy; and a step is at least b + c, and the port passes one copy per x:
          T = max(b + c, (b + copy) / (S-1), x);
        * warp-specialised: the copy of step i+S leaves when step i has computed (its buffer is free) and must
          land before step i+S starts: S T >= b + c + copy, so T = max(b + c, (b + c + copy) / S, x).
        """
        b, c, x = self.barrier_clk, self.compute_clk, self.copy_clk
        copy = self.copy_total_clk
        S = self.stages
        if self.kind == "multistage":
            if S == 1:
                return copy + 2 * b + c
            return max(b + c, (b + copy) / (S - 1), x)
        return max(b + c, (b + c + copy) / S, x)


@dataclass(frozen=True)
class PipelineTime:
    """Blocks co-resident on one SM running their k-loops: time and where a step's time goes."""

    cycles: float  # until the last block has finished (start-up, steps, epilogue)
    blocks: int
    steps: int
    step_clk: float  # steady SM cycles between two steps of one block
    parts: dict = field(default_factory=dict)  # per block step: copy_wait, barrier, mma, contention (cycles)
    tensor_busy: float = 0.0  # fraction of the SM's tensor-pipe capacity used in steady state
    latency_clk: float = 0.0  # the copy latency the steady state ran with (unloaded + queue waits)
    queue_wait_clk: float = 0.0  # of which queueing (loaded latency)
    rho: tuple = ()  # utilisation of each of ``cost.queues`` in the steady state
    copy_phase_clk: float = 0.0  # with copy_segments: a warp's copy phase under load, mean cycles in the steady state
    phases: dict = field(default_factory=dict)  # multistage: block 0's step between its four `PHASES` marks, median cycles
    arrangement: dict = field(default_factory=dict)  # multistage, >= 2 blocks: how they sit (`block_arrangement`)

    @property
    def bound(self) -> str:
        """What dominates a step: the largest part, named as the pipeline sees it."""
        return max(self.parts, key=self.parts.get) if self.parts else "mma"


def fragment_groups(trace: str, ldsm_latency_clk: float, war_clk: float, mma_issue_clk: float) -> tuple:
    """A warp's k-step as fragment groups, from its ldmatrix / mma sequence (``trace``) and three measured times.

    ``trace``: the warp's ldmatrix and mma instructions of one k-step in issue order (the compiled k-loop's, e.g.
    from its SASS), space-separated tokens ``L<wf>:<reg>+<n>`` (an ldmatrix of ``wf`` shared-memory wavefronts
    writing registers reg..reg+n-1) and ``H:<reg>+<n>,<reg>+<n>`` (an mma reading those registers; its accumulator
    is not traced: every kernel here uses each accumulator once per group of 4-8 mma). One warp alone, in order:
    an ldmatrix issues when the mma that last read its destination registers issued ``war_clk`` before (the
    register is overwritten only after that mma has read it: a kernel that reuses one fragment register waits for
    it); its registers are ready ``ldsm_latency_clk`` after it issued; an mma issues ``mma_issue_clk`` after the
    warp's previous one, when its registers are ready. Every mma that has to wait for a register starts a group.

    Returns ``((wavefronts, mma, stall_clk, needs), ...)``: the wavefronts of each ldmatrix issued since the previous
    group started (they leave at this group's start), its mma count, how long its first mma waits beyond the end of
    the warp's previous mma slot (alone: the exposed part of the ldmatrix latency, max(0, WAR wait + latency - the
    warp's own mma issued in between)), and which ldmatrix (indices in issue order) its mma read first: under load
    they must also have crossed the shared pipe. Other warps on the sub-partition fill the stalls where
    they have work: :func:`pipeline_time` simulates the warps (``StepCost.groups``).
    """
    ready, lastread, writer = {}, {}, {}
    t = hnext = 0.0
    pending = []  # wavefronts of the ldmatrix issued since the current group started
    used = set()  # ldmatrix whose data some group already waited for
    groups = []
    n_ld = 0
    for tok in trace.split():
        kind, _, body = tok.partition(":")
        if kind.startswith("L"):
            wf = float(kind[1:])
            r0, n = (int(x) for x in body.split("+"))
            regs = range(r0, r0 + n)
            issue = max([t] + [lastread[r] + war_clk for r in regs if r in lastread])
            for r in regs:
                ready[r] = issue + ldsm_latency_clk
                writer[r] = n_ld
            pending.append(wf)
            n_ld += 1
            t = issue + 1.0
        elif kind == "H":
            srcs = set()
            for op in body.split(","):
                r0, n = (int(x) for x in op.split("+"))
                srcs.update(range(r0, r0 + n))
            rdy = max([0.0] + [ready[r] for r in srcs if r in ready])
            issue = max(t, hnext, rdy)
            if not groups or issue > hnext + 1e-9:  # waits beyond its mma slot: for data, or behind a blocked ldmatrix
                groups.append([tuple(pending), 0, issue - hnext, []])
                pending = []
            g = groups[-1]
            g[1] += 1
            for i in sorted({writer[r] for r in srcs if r in writer} - used):  # the data this group's mma read
                g[3].append(i)
                used.add(i)
            for r in srcs:
                lastread[r] = issue
            hnext = issue + mma_issue_clk
            t = issue + 1.0
        else:
            raise KernelError(f"fragment trace token {tok!r}: expected L<wf>:<reg>+<n> or H:<reg>+<n>,<reg>+<n>")
    if groups and pending:  # ldmatrix after the last mma (the next step's fragments): issued with the last group
        groups[-1][0] = groups[-1][0] + tuple(pending)
    return tuple((tuple(g[0]), float(g[1]), float(g[2]), tuple(g[3])) for g in groups)


#: copy_phase's instruction kinds: what each one's latency key is (issue to a dependent instruction's issue), and
#: which kinds delay the warp's next instruction beyond one issue slot (branches, cp.async)
COPY_KINDS = ("alu", "wide", "s2r", "s2ur", "ldc", "bra", "brat", "sync", "ldgsts", "slot")


def copy_phase(trace: str, latency: dict) -> tuple[float, float]:
    """(issue slots, cycles) of one warp's copy code alone: :func:`copy_segments` summed."""
    segs = copy_segments(trace, latency)
    return float(sum(n for n, _ in segs)), float(sum(n + w for n, w in segs))


def copy_segments(trace: str, latency: dict) -> tuple:
    """One warp's copy code issued alone, in order, as runs of issue and the waits between them.

    ``trace``: the instructions the warp executes in its copy phase of one k-step, in order (e.g. from the kernel's
    SASS and ncu's executed counts), space-separated tokens ``kind[/dst,...][<src,...]`` with register names (R12,
    P0, UR4 ...; a source ``@P0`` is the predicate guarding the instruction), kinds in :data:`COPY_KINDS`: ``alu``
    (integer ALU / IMAD: IADD3, LOP3, LEA, ISETP, IMAD ...), ``wide`` (IMAD.WIDE), ``s2r`` / ``s2ur`` (special-register
    reads), ``ldc`` (constant loads), ``bra`` / ``brat``
    (a conditional branch falling through / taken), ``sync`` (BSYNC: the warp's reconvergence point after a branch),
    ``ldgsts`` (cp.async), ``slot`` (one issue slot, no result: BSSY, LDGDEPBAR, predicated-off instructions).
    ``latency``: cycles, measured: for a kind with results, from its issue until a dependent instruction may issue
    (``pred``, where given: from an ``alu`` instruction to an instruction it guards -- a compare's predicate reaches a
    guard later than a carry reaches the next add);
    ``bra`` / ``brat`` / ``sync``: from its issue until the next instruction issues; ``ldgsts``: until the warp's next
    instruction issues (the cp.async issue interval). A register not written in the trace is ready at the start.
    An instruction issues one cycle after the previous one, once its sources are ready.

    Returns the copy phase as ``((issue slots, wait after them), ...)``: runs of back-to-back issue separated by the
    waits of the chain (for a source, behind a branch or a cp.async). Under load (:func:`pipeline_time`) each run
    holds the warp's SMSP and queues behind the other warps there; the waits leave it to them.
    """
    written = {}  # register -> (issue time, kind) of the instruction that last wrote it
    t = 0.0
    segs, run = [], 0

    def ready(r: str) -> float:
        guard = r.startswith("@")
        w = written.get(r.lstrip("@"))
        if w is None:
            return 0.0
        lat = latency["pred"] if guard and w[1] == "alu" and "pred" in latency else latency[w[1]]
        return w[0] + float(lat)

    for tok in trace.split():
        head, _, srcs = tok.partition("<")
        kind, _, dsts = head.partition("/")
        if kind not in COPY_KINDS:
            raise KernelError(f"copy trace token {tok!r}: kind must be one of {', '.join(COPY_KINDS)}")
        issue = max([t] + [ready(r) for r in srcs.split(",") if r])
        if issue > t:  # the chain stalls the warp: close the run of issue before it
            segs.append((run, issue - t))
            run = 0
        run += 1
        if kind in ("bra", "brat", "sync", "ldgsts"):
            step = latency.get(kind)
            if step is None:
                raise KernelError(f"copy trace: no latency for {kind!r}")
            t = issue + max(float(step), 1.0)
            if t > issue + 1.0:
                segs.append((run, t - issue - 1.0))
                run = 0
        else:
            t = issue + 1.0
        if dsts:
            if latency.get(kind) is None:
                raise KernelError(f"copy trace: no latency for {kind!r}")
            for r in dsts.split(","):
                written[r] = (issue, kind)
    if run:
        segs.append((run, 0.0))
    merged = []
    for n, w in segs:  # a run with no wait after it continues into the next; waits with no run between them add
        if merged and (merged[-1][1] == 0.0 or n == 0):
            merged[-1] = (merged[-1][0] + n, merged[-1][1] + w)
        elif n or w:
            merged.append((n, w))
    return tuple((float(n), float(w)) for n, w in merged)


# What lies between the four marks of a multistage step (and the next step's first), in the kernel's own order: the
# points where round 10b's H200 kernel (validation/h200/round10/mma_pipe10.patch) reads its clock in thread 0.
PHASES = {1: ("copy", "wait_barrier", "mma_barrier", "rest"), 2: ("wait_barrier", "copy", "mma", "rest")}


def step_phases(marks: list, first: int, last: int, stages: int) -> dict:
    """Median cycles of each `PHASES` interval of block 0 over steps ``first`` .. ``last`` - 1 (those with all four
    marks and the next step's first). ``marks``: (block, step, mark, time)."""
    at = {}
    for b, i, j, t in marks:
        if b == 0:
            at.setdefault(i, {})[j] = t
    ok = [i for i in range(first, last) if len(at.get(i, ())) == 4 and 0 in at.get(i + 1, ())]
    if not ok:
        return {}
    names = PHASES[1 if stages == 1 else 2]
    return {n: statistics.median((at[i][j + 1] if j < 3 else at[i + 1][0]) - at[i][j] for i in ok)
            for j, n in enumerate(names)}


def block_arrangement(marks: list, first: int, last: int, near: float = 0.15) -> dict:
    """How co-resident blocks sit against each other, as round 10b measures it on the H200: for each step start of
    one block within steps ``first`` .. ``last`` - 1, its position in each other block's step (0: together, 0.5: half
    a step apart); the shares within ``near`` of 0 ("together") and of 0.5 ("alternating"). An even spread gives
    2 ``near`` each. {} with fewer than two blocks."""
    starts = {}
    for b, i, j, t in marks:
        if j == 0:
            starts.setdefault(b, {})[i] = t
    if len(starts) < 2:
        return {}
    pos = []
    for a, sa in starts.items():
        ta = [sa[i] for i in sorted(sa)]
        for o, so in starts.items():
            if o == a:
                continue
            for i in range(first, last):
                x = so.get(i)
                if x is None:
                    continue
                k = next((k for k in range(len(ta) - 1, -1, -1) if ta[k] <= x), None)
                if k is not None and k + 1 < len(ta) and ta[k + 1] > ta[k]:
                    pos.append((x - ta[k]) / (ta[k + 1] - ta[k]))
    if not pos:
        return {}
    return {"together": sum(1 for p in pos if p < near or p > 1 - near) / len(pos),
            "alternating": sum(1 for p in pos if abs(p - 0.5) < near) / len(pos)}


def _no_mark(j: int) -> None:
    """Without ``marks`` nothing is recorded."""


def _simulate(cost: StepCost, blocks: int, steps: int, marks: list | None = None) -> tuple[float, dict]:
    """simpy run of ``blocks`` identical blocks for ``steps`` steps each; (end time, summed parts). With ``marks``, each
    block appends (block, step, mark, time) at the four points the H200 kernel of round 10b reads its clock (`PHASES`)."""
    env = simpy.Environment()
    P = cost.sub_partitions
    smsp = [simpy.Resource(env, capacity=1) for _ in range(P)]
    mio = simpy.Resource(env, capacity=1)
    port = simpy.Resource(env, capacity=1)
    t_warp = cost.warp_clk
    t_mma = cost.mma_clk * P / cost.warps
    parts = dict.fromkeys(PARTS, 0.0)
    copy_phase = [0.0, 0]  # summed durations of the warps' copy phases, and how many
    ends = []

    def hold(res, dt):
        with res.request() as req:
            yield req
            yield env.timeout(dt)

    def copy():
        if cost.copy_clk > 0:
            yield from hold(port, cost.copy_clk)
        yield env.timeout(cost.copy_latency_clk)

    groups = cost.groups
    n_mma = sum(g[1] for g in groups)
    if groups:  # a warp's MMAs (t_mma of the step), its other issue spread over its groups, its copy issue first
        t_one = t_mma / n_mma
        t_other = cost.issue_clk / len(groups)
        mio_block = max(cost.smem_clk - cost.warps * sum(sum(g[0]) for g in groups), 0.0)

    def ldsm(wf):
        yield from hold(mio, wf)  # its wavefronts on the shared pipe, behind every other warp's
        yield env.timeout(max(cost.ldsm_latency_clk - wf, 0.0))

    def warp(s, done=None, mma=True, copy=True):
        """One warp's step by fragment groups: its copy issue (then ``done`` fires: its last cp.async has issued), then,
        with ``mma``, per group: its ldmatrix leave for the shared pipe; its first mma waits until the end of its
        previous mma slot + the group's stall (the unloaded wait) and until the ldmatrix it reads have their data (their
        queue on the shared pipe included); then the group's MMAs and its share of other issue hold the warp's SMSP."""
        loads = []
        if copy and cost.copy_segments:  # its copy code run by run: each run of issue queues for the SMSP, the chain's waits free it
            t0 = env.now
            for n, w in cost.copy_segments:
                if n:
                    yield from hold(smsp[s], n)
                if w:
                    yield env.timeout(w)
            copy_phase[0] += env.now - t0
            copy_phase[1] += 1
        elif copy and (cost.copy_issue_clk or cost.copy_chain_clk):  # its copy issue slots, within its copy code's dependent chain
            t0 = env.now
            if cost.copy_issue_clk:
                yield from hold(smsp[s], cost.copy_issue_clk)
            if cost.copy_chain_clk > env.now - t0:
                yield env.timeout(cost.copy_chain_clk - (env.now - t0))
        if done is not None:
            done.succeed()
        if not mma:
            return
        for wfs, n, stall, needs in groups:
            t0 = env.now
            loads += [env.process(ldsm(wf)) for wf in wfs]
            if needs:
                yield env.all_of([loads[i] for i in needs])
            if stall > env.now - t0:
                yield env.timeout(stall - (env.now - t0))
            yield from hold(smsp[s], n * t_one + t_other)
        if loads:
            yield env.all_of(loads)

    def compute(b, done=None, phase="all", carry=None):
        """The block's compute phase (its warps' copy code, then their MMAs). ``done``: one event per warp, fired when
        its copy code has issued its last cp.async (where the warps are simulated one by one). ``phase``: "all", or
        "copy" (the copy code alone; its duration is added to ``carry``) and then "mma" (the rest, ``carry`` added to
        it): S = 1 waits for its data between the two."""
        per = [0] * P
        for w in range(cost.warps):
            per[(b * cost.warps + w) % P] += 1
        chain = cost.warp_latency_clk
        if groups:
            ws = (b * cost.warps + w for w in range(cost.warps))
            jobs = [env.process(warp(s % P, done[i] if done else None, mma=phase != "copy", copy=phase != "mma"))
                    for i, s in enumerate(ws)]
            if mio_block > 0 and phase != "copy":
                jobs.append(env.process(hold(mio, mio_block)))
            chain = {"all": chain, "copy": cost.copy_chain_clk, "mma": max(chain - cost.copy_chain_clk, 0.0)}[phase]
        else:
            jobs = [env.process(hold(smsp[s], n * t_warp)) for s, n in enumerate(per) if n and t_warp > 0]
        if cost.smem_clk > 0 and not groups:
            jobs.append(env.process(hold(mio, cost.smem_clk)))
        if chain > 0:  # a warp's own dependent chain: it cannot finish sooner, whatever is free
            jobs.append(env.timeout(chain))
        t0 = env.now
        if jobs:
            yield env.all_of(jobs)
        dt = env.now - t0
        if phase == "copy":
            carry[0] += dt
            return
        if carry:
            dt += carry[0]
        own = max(t_warp * max(per), cost.warp_latency_clk)  # the step alone on the SM: MMAs / issue / its chain
        parts["mma"] += min(dt, own)
        parts["contention"] += max(dt - own, 0.0)

    def wait(ev):
        t0 = env.now
        yield ev
        parts["copy_wait"] += env.now - t0

    def barrier():
        if cost.barrier_clk:
            yield env.timeout(cost.barrier_clk)
            parts["barrier"] += cost.barrier_clk

    staged = bool(groups) and bool(cost.copy_segments)  # the warps' copy code is simulated: copies leave as it issues

    def copy_issued(done):
        """A stage's copy when the warps' copy code issues it: its bytes cross the port from the start of the copy
        phase (each cp.async leaves as it issues), and the stage is complete a latency after the last warp's last
        cp.async has issued and the bytes have crossed -- whichever is later."""
        port_done = env.process(hold(port, cost.copy_clk)) if cost.copy_clk > 0 else None
        yield env.all_of([*done, *([port_done] if port_done else [])])
        yield env.timeout(cost.copy_latency_clk)

    def multistage(b):
        S = cost.stages
        loads = {i: env.process(copy()) for i in range(min(S - 1, steps))}
        for i in range(steps):
            mark = (lambda j, i=i: marks.append((b, i, j, env.now))) if marks is not None else _no_mark
            if S == 1:
                mark(0)
                if staged:  # copy code (cp.async leaving as it issues), wait for the data, barrier, MMAs, barrier
                    done, carry = [env.event() for _ in range(cost.warps)], [0.0]
                    load = env.process(copy_issued(done))
                    done[0].callbacks.append(lambda _: mark(1))  # warp 0's last cp.async has issued
                    yield from compute(b, done, "copy", carry)
                    yield from wait(load)
                    yield from barrier()
                    mark(2)
                    yield from compute(b, None, "mma", carry)
                else:
                    yield from wait(env.process(copy()))
                    yield from barrier()
                    yield from compute(b)
                yield from barrier()
                mark(3)
                continue
            mark(0)
            yield from wait(loads.pop(i))
            yield from barrier()
            mark(1)
            done = None
            if i + S - 1 < steps:
                if staged:  # issued by the warps' copy code at the start of this step's compute phase
                    done = [env.event() for _ in range(cost.warps)]
                    loads[i + S - 1] = env.process(copy_issued(done))
                    done[0].callbacks.append(lambda _: mark(2))  # warp 0's last cp.async has issued
                else:
                    loads[i + S - 1] = env.process(copy())
            yield from compute(b, done)
            mark(3)
        if cost.epilogue_clk:
            yield env.timeout(cost.epilogue_clk)
        ends.append(env.now)

    def warp_specialized(b):
        S = cost.stages
        freed = [env.event() for _ in range(steps)]
        issued = [env.event() for _ in range(steps)]

        def producer():
            for i in range(steps):
                if i >= S:
                    yield freed[i - S]  # the consumers released buffer i mod S
                issued[i].succeed(env.process(copy()))

        env.process(producer())
        for i in range(steps):
            t0 = env.now
            load = yield issued[i]
            parts["copy_wait"] += env.now - t0
            yield from wait(load)
            yield from barrier()
            yield from compute(b)
            freed[i].succeed()
        if cost.epilogue_clk:
            yield env.timeout(cost.epilogue_clk)
        ends.append(env.now)

    run = multistage if cost.kind == "multistage" else warp_specialized
    for b in range(blocks):
        env.process(run(b))
    env.run()
    return (max(ends) if ends else 0.0), {**parts, "_copy_phase": copy_phase[0], "_copy_n": copy_phase[1]}


def pipeline_time(cost: StepCost, blocks: int = 1) -> PipelineTime:
    """Simulate ``blocks`` co-resident blocks running all ``cost.steps`` steps of a tile.

    The steady step time is measured over a window of whole pipeline cycles (the difference between runs of
    n and n - window steps: start-up and epilogue cancel); long K loops are simulated for one and two
    windows and extrapolated.

    With ``cost.queues`` the copy latency is loaded: latency = ``copy_latency_clk`` + the stations' M/D/1 waits at
    the step time the pipeline runs at, iterated to a fixed point (the wait falls as the step grows, so the
    iteration L -> L0 + W(T(L)) converges from L0 upward).
    """
    if blocks < 1:
        raise KernelError(f"blocks must be >= 1 (got {blocks})")
    if not cost.queues:
        return _pipeline_time(cost, blocks)
    base = replace(cost, queues=())
    L0 = cost.copy_latency_clk
    res = _pipeline_time(base, blocks)
    wait = 0.0
    for it in range(LOAD_ITERATIONS):
        new, _ = cost.queue_wait_clk(blocks, res.step_clk)
        if abs(new - wait) <= LOAD_TOL_CLK:
            break
        wait = new if it == 0 else 0.5 * (wait + new)  # damped: the map is decreasing, plain iteration can oscillate
        res = _pipeline_time(replace(base, copy_latency_clk=L0 + wait), blocks)
    # Little's law on the chip's stations (multiplicity > 1: the L2, DRAM): the chip passes no more than its capacity,
    # so where the step the pipeline runs at would ask more of a station (the SM's port no longer holding each copy at
    # its average share of the chip), the copies' round trip grows until it does not: the closed system's bytes in
    # flight over the capacity. The smallest extra latency with the step at least the stations' demand, by bisection.
    need = max((mult * blocks * service for _, service, mult in cost.queues if mult > 1), default=0.0)
    if cost.little and need > 0 and res.step_clk < need * (1 - LITTLE_TOL):
        lo, hi = 0.0, need * max(cost.stages - 1, 1) + cost.copy_total_clk
        for _ in range(LITTLE_ITERATIONS):
            mid = 0.5 * (lo + hi)
            trial = _pipeline_time(replace(base, copy_latency_clk=L0 + wait + mid), blocks)
            if trial.step_clk >= need * (1 - LITTLE_TOL):
                hi, res = mid, trial
            else:
                lo = mid
        if res.step_clk < need * (1 - LITTLE_TOL):  # not reached within the bracket: take its upper end
            res = _pipeline_time(replace(base, copy_latency_clk=L0 + wait + hi), blocks)
        wait += hi
    _, rhos = cost.queue_wait_clk(blocks, res.step_clk)
    return replace(res, latency_clk=L0 + wait, queue_wait_clk=wait, rho=rhos)


def _pipeline_time(cost: StepCost, blocks: int) -> PipelineTime:
    """pipeline_time at the cost's own (fixed) latency.

    Single-stage blocks sharing an SM fill each other's copy waits: on the H200 two S = 1 blocks sit half a step apart
    and each takes about what it takes alone (round 32's lone blocks: 0.94-1.01x; round 10b: alternating), where
    the simulation's queues pull identical blocks into step, their MMA phases on the tensor pipes together. So for
    S = 1 a block's step is the longer of its step alone and the step of the blocks with nothing to wait for (copy
    latency 0: the SM's pipes are the limit), the blocks half a step apart."""
    if cost.kind != "multistage" or cost.stages != 1 or blocks == 1 or not ONE_STAGE_INTERLEAVE:
        return _simulated_time(cost, blocks)
    alone = _simulated_time(cost, 1)
    packed = _simulated_time(replace(cost, copy_latency_clk=0.0), blocks)
    if packed.step_clk > alone.step_clk:  # the pipes bind: the waits are hidden, but the first copy's latency is not
        return replace(packed, cycles=packed.cycles + cost.copy_latency_clk, latency_clk=cost.copy_latency_clk)
    step = alone.step_clk
    return replace(alone, blocks=blocks, cycles=alone.cycles + step * (blocks - 1) / blocks,
                   tensor_busy=min(blocks * cost.mma_clk / step, 1.0) if step > 0 else 0.0,
                   arrangement={"together": 0.0, "alternating": 1.0})


@functools.lru_cache(maxsize=1024)
def _simulated_time(cost: StepCost, blocks: int) -> PipelineTime:
    """The simpy simulation of ``blocks`` identical blocks from a common start, at the cost's own latency. Memoised:
    the simulation is deterministic, and the same step recurs (the S = 1 rule's latency-free run in every iteration
    of :func:`pipeline_time`'s loaded latency, the schedule rule's pull); callers must not change what it returns."""
    n = cost.steps
    S = cost.stages
    # a deep pipeline settles into a cycle of S(S-1) steps (S(S+1) warp-specialised), not of one step: measure over
    # whole cycles of at least SIM_STEPS steps
    w = S * (max(S - 1, 1) if cost.kind == "multistage" else S + 1)
    w *= -(-SIM_STEPS // w)
    marks = [] if cost.kind == "multistage" else None
    if n <= 2 * w:
        t, parts = _simulate(cost, blocks, n, marks)
        d = min(w, n // 2)  # the last d steps: steady when the loop is long enough, the best there is otherwise
        window = (n - max(d, 1), n)
        if d >= 1:
            t0, p0 = _simulate(cost, blocks, n - d)
            step, sim_steps = (t - t0) / d, d
            cp = (parts["_copy_phase"] - p0["_copy_phase"], parts["_copy_n"] - p0["_copy_n"])
            parts = {k: parts[k] - p0[k] for k in PARTS}
        else:
            step, sim_steps = t, 1
            cp = (parts["_copy_phase"], parts["_copy_n"])
    else:
        t1, p1 = _simulate(cost, blocks, w)
        t2, p2 = _simulate(cost, blocks, 2 * w, marks)
        window = (w, 2 * w)
        step = (t2 - t1) / w
        t = t2 + (n - 2 * w) * step
        parts = {k: p2[k] - p1[k] for k in PARTS}  # steady state: the second window only
        cp = (p2["_copy_phase"] - p1["_copy_phase"], p2["_copy_n"] - p1["_copy_n"])
        sim_steps = w
    per_block_step = {k: v / (blocks * sim_steps) for k, v in parts.items() if k in PARTS}
    busy = blocks * cost.mma_clk / step if step > 0 else 0.0
    return PipelineTime(cycles=t, blocks=blocks, steps=n, step_clk=step, parts=per_block_step, tensor_busy=min(busy, 1.0),
                        latency_clk=cost.copy_latency_clk, copy_phase_clk=cp[0] / cp[1] if cp[1] else 0.0,
                        phases=step_phases(marks, *window, S) if marks is not None else {},
                        arrangement=block_arrangement(marks, *window) if marks is not None else {})


@dataclass(frozen=True)
class SMSchedule:
    """The busiest SM over a whole launch."""

    cycles: float
    tiles_on_sm: int
    rounds: int
    resident: PipelineTime  # the full round of co-resident blocks (its parts describe the steady state)


def grid_cycles(cost: StepCost, grid: int, sms: int, blocks_per_sm: int, favoured: int = 0,
                share: float = 1.0, spread: float = 0.0, even_groups: int | None = None, ramp=None) -> SMSchedule:
    """Cycles of a grid of identical blocks, one block per tile (non-persistent).

    With ``DISPATCH`` (:func:`dispatch_cycles`) blocks take slots as they free and share the chip's rate; without it
    (the model before round 36) the busiest SM runs ceil(grid / sms) blocks in rounds of ``blocks_per_sm`` that start
    and finish together, the last round partial, and ``favoured`` / ``share`` / ``spread`` / ``even_groups`` /
    ``ramp`` are ignored.
    """
    if grid < 1 or sms < 1 or blocks_per_sm < 1:
        raise KernelError(f"grid, sms and blocks_per_sm must be positive (got {grid}, {sms}, {blocks_per_sm})")
    if DISPATCH:
        return dispatch_cycles(cost, grid, sms, blocks_per_sm, favoured, share, spread, even_groups, ramp)
    nb = -(-grid // sms)
    full, tail = divmod(nb, blocks_per_sm)
    first = pipeline_time(cost, min(blocks_per_sm, nb))
    cyc = full * (first.cycles if full else 0.0) + (pipeline_time(cost, tail).cycles if tail else 0.0)
    return SMSchedule(cyc, nb, full + (1 if tail else 0), first)


def unloaded(cost: StepCost) -> StepCost:
    """The cost with the chip otherwise idle: no queue at the chip's stations (multiplicity > 1: the L2, DRAM) and no
    Little's-law hold-back there, so only the SM's own path, pipes and latencies bound its blocks."""
    return replace(cost, queues=tuple(q for q in cost.queues if q[2] <= 1), little=False)


def water_fill(blocks: np.ndarray, cap: np.ndarray, weight: np.ndarray, rate: float) -> np.ndarray:
    """Per-block progress rate on each SM: ``rate`` (the chip's, in blocks per cycle) shared among the SMs' ``blocks``
    running blocks in proportion to ``weight``, no block above its SM's ``cap``; what a capped SM leaves goes to the
    others. Where the caps together are below ``rate`` every block runs at its cap."""
    live = blocks > 0
    out = np.zeros_like(cap)
    if not live.any():
        return out
    k, c, w = blocks[live], cap[live], weight[live]
    if float(np.dot(k, c)) <= rate:
        out[live] = c
        return out
    b = c / w  # the level at which each SM reaches its cap
    order = np.argsort(b)
    kc = np.concatenate(([0.0], np.cumsum((k * c)[order])))  # capped SMs' rate, the first i in order capped
    kw = np.concatenate((np.cumsum((k * w)[order][::-1])[::-1], [0.0]))  # the uncapped SMs' weight
    lam = (rate - kc[:-1]) / kw[:-1]
    i = int(np.argmax(lam <= b[order]))  # the first SM not capped at the level it sets
    out[live] = np.minimum(c, lam[i] * w)
    return out


def favoured_step_ratio(cost: StepCost, blocks: int, share: float) -> float:
    """A favoured SM's steady step over the others' with ``blocks`` blocks each: the L2 serves its copies ``share``
    times as fast when saturated (validation/h200/round35's copy benchmark), so they wait 1 / ``share`` as long in the
    chip's queues (the loaded wait :func:`pipeline_time` settles on: the stations' queueing and Little's hold-back);
    the rest of its step -- its own path, pipes, barriers -- is the others'. A copy-only SM gains the whole share; a
    block that waits for each copy between its MMAs (S = 1) gains only on the wait. 1 where nothing queues."""
    p = pipeline_time(cost, blocks)
    if p.queue_wait_clk <= 0 or p.step_clk <= 0 or share == 1:
        return 1.0
    fast = _pipeline_time(replace(cost, queues=(), copy_latency_clk=cost.copy_latency_clk + p.queue_wait_clk / share),
                          blocks)
    return fast.step_clk / p.step_clk


def copy_groups_outstanding(cost: StepCost, blocks: int) -> float:
    """Mean copy groups outstanding on an SM of ``blocks`` such blocks in the loaded steady state: a multistage block
    holds S - 1 after its commit and one more while it waits for its oldest (S = 1: one while it waits, none while it
    computes), so S - 1 + its copy wait's share of its step; a warp-specialised producer keeps S in flight."""
    if cost.kind == "warp_specialized":
        return float(blocks * cost.stages)
    p = pipeline_time(cost, blocks)
    waiting = min(p.parts.get("copy_wait", 0.0) / p.step_clk, 1.0) if p.step_clk > 0 else 1.0
    return blocks * (cost.stages - 1 + waiting)


def favoured_share_at_load(cost: StepCost, blocks: int, share: float, ramp) -> float:
    """The part of the saturated ``share`` a favoured SM draws with ``blocks`` such blocks on every SM: the L2 favours
    some SMs only when enough copies queue for it. ``ramp``: (copy groups outstanding per SM, fraction of the share's
    gain) points, linear between, held at the end values outside (validation/h200/round41: round 39's copy-only
    benchmark, one group a block -- no favour at 2-3 groups an SM, a third of it at 4, all of it from 6); the groups
    are :func:`copy_groups_outstanding`'s. None: the whole share at any load."""
    if not ramp or share == 1:
        return share
    xs, fs = zip(*ramp)
    return 1.0 + (share - 1.0) * float(np.interp(copy_groups_outstanding(cost, blocks), xs, fs))


def copy_groups_in_flight(cost: StepCost, blocks: int) -> int:
    """Copy groups in flight on an SM of ``blocks`` such blocks: S - 1 a block after its commit (at least the one
    it waits for at S = 1), S for the warp-specialised producer."""
    return blocks * (cost.stages if cost.kind == "warp_specialized" else max(cost.stages - 1, 1))


def dispatch_cycles(cost: StepCost, grid: int, sms: int, blocks_per_sm: int, favoured: int = 0,
                    share: float = 1.0, spread: float = 0.0, even_groups: int | None = None,
                    ramp=None) -> SMSchedule:
    """Cycles of a grid of identical blocks whose slots are refilled as blocks end (non-persistent), a fluid model.

    * The first wave fills the SMs breadth-first; a block that ends frees its slot for the next block at once, an SM's
      free slots filled before the next SM's (an SM's co-started blocks end together; the H200's last part-wave sits on
      few, full SMs where the blocks hold in step, validation/h200/round34).
    * A block is one unit of work. With every slot busy the chip finishes ``active x k / T`` blocks a cycle, ``T`` the
      pipeline's time for ``k`` blocks on an SM (:func:`pipeline_time`, the chip's stations loaded by all ``active``
      SMs): the launch's steady pace. With ``DISPATCH_PROLOGUE`` (round 37's variant) ``T`` is their steady steps
      only, and the rest, the fill and drain, is a wait before the block's work that takes no rate, at the load the
      block starts into (blocks in step wait together; a block that starts alone waits while the SM's others run).
      That rate is shared among the running blocks by :func:`water_fill`, no block faster than ``1 / T_alone(j)``
      with ``j`` running blocks on its SM and the chip otherwise idle (:func:`unloaded`; its steady steps likewise),
      so a launch's ends speed up where the chip had held its blocks back, and not where the SM is the limit.
    * ``favoured`` SMs (spread evenly over the ids) draw ``share`` times the others' part of the chip when it is
      shared (the H200's L2 under saturation: validation/h200/round35's copy benchmark), up to their cap: they finish
      more blocks, and the SMs' blocks fall out of step. With ``FAVOURED_AT_LOAD`` the share they draw is what their
      step gains at the chip's load, 1 / :func:`favoured_step_ratio` (at most ``share``). With ``ramp`` the share
      itself grows with the copies outstanding on an SM (:func:`favoured_share_at_load`): few, and no SM is favoured.
    * An SM with at most ``even_groups`` copy groups in flight (:func:`copy_groups_in_flight` at its full load) shares
      itself evenly among its blocks, so the blocks it takes at one instant end together (validation/h200/round39's
      copy-only benchmark: the span of their ends 0.004-0.052 of a block's time at <= 12 groups, 0.13 and more
      above). Such blocks share one work from the spread, and the SM's slots free and refill together: the last
      part-wave sits on few, full SMs (validation/h200/round40). Above it, or with ``even_groups`` None, each block
      draws its own work.
    Returns the last block's end; ``tiles_on_sm`` the most blocks one SM ran.
    """
    if grid < 1 or sms < 1 or blocks_per_sm < 1:
        raise KernelError(f"grid, sms and blocks_per_sm must be positive (got {grid}, {sms}, {blocks_per_sm})")
    if not (0 <= favoured <= sms) or not (share > 0 and math.isfinite(share)) or not (0 <= spread < 2):
        raise KernelError(f"favoured must be 0..sms, share a positive number and spread in [0, 2) (got {favoured}, "
                          f"{share}, {spread})")
    nb = -(-grid // sms)
    k0 = min(blocks_per_sm, nb)
    full = pipeline_time(cost, k0)
    active = min(grid, sms)
    free_cost = unloaded(cost)

    def busy(p: PipelineTime) -> float:  # a block's time at its rate: its steady steps, or everything (round 36)
        return cost.steps * p.step_clk if DISPATCH_PROLOGUE else p.cycles

    main = busy(full)
    prologue = max(full.cycles - main, 0.0)  # fill and drain: a wait, taking no rate (0 without DISPATCH_PROLOGUE)
    if prologue > 0:  # the same with the chip otherwise idle
        alone = pipeline_time(free_cost, k0)
        idle = min(max(alone.cycles - busy(alone), 0.0), prologue)
    else:
        idle = 0.0
    rate = active * k0 / main if main > 0 else math.inf
    # blocks' work: 1, or spread evenly over [1 - spread / 2, 1 + spread / 2] in a low-discrepancy order of the block ids
    work = 1.0 + spread * ((np.arange(grid) * GOLDEN) % 1.0 - 0.5) if spread else None
    # a block's rate with j blocks on its SM and the chip otherwise idle, at least the loaded rate at k0 blocks (the
    # chip's share never slows an SM below its loaded pace); simulated at 1, k0 and halfway, the SM's rate j x cap(j)
    # linear in between (each simulation costs up to seconds)
    known = sorted({1, (1 + k0) // 2, k0})
    sm_rate = [j * max(1.0 / busy(pipeline_time(free_cost, j)), 1.0 / main) for j in known]
    caps = {j: float(np.interp(j, known, sm_rate)) / j for j in range(1, k0 + 1)}
    cap = caps.__getitem__

    weight = np.ones(sms)
    if favoured:
        share = favoured_share_at_load(cost, k0, share, ramp)
        if FAVOURED_AT_LOAD:
            share = 1.0 / favoured_step_ratio(cost, k0, share)
        weight[(np.arange(favoured) * sms) // favoured] = share
    cohort = even_groups is not None and copy_groups_in_flight(cost, k0) <= even_groups
    t, ran = fluid_dispatch(grid, sms, blocks_per_sm, k0, cap, rate, weight, work, prologue, idle, cohort)
    return SMSchedule(t, int(ran.max()), -(-int(ran.max()) // blocks_per_sm), full)


def persistent_cycles(cost: StepCost, tiles: int, ctas: int, epilogue_overlap: bool = False) -> SMSchedule:
    """Cycles of the busiest CTA of a persistent kernel: ``ctas`` CTAs (one per SM, or per cluster slot) take
    tiles ``j, j + ctas, j + 2 ctas ...`` (CUTLASS's static persistent scheduler), so the busiest does
    ceil(tiles / ctas) tiles back to back. The producer runs ahead across tiles, so the copy latency is paid
    once; each tile adds its steady mainloop and its epilogue (hidden behind the other consumer's mainloop
    with ``epilogue_overlap``: the ping-pong schedule)."""
    if tiles < 1 or ctas < 1:
        raise KernelError(f"tiles and ctas must be positive (got {tiles}, {ctas})")
    per = -(-tiles // ctas)
    loop = pipeline_time(replace(cost, steps=per * cost.steps, epilogue_clk=0.0), 1)
    main = cost.steps * loop.step_clk
    epi = max(cost.epilogue_clk - main, 0.0) if epilogue_overlap else cost.epilogue_clk
    last = cost.epilogue_clk - epi  # the last tile's epilogue has nothing to hide behind
    return SMSchedule(loop.cycles + per * epi + last, per, per, loop)


def fluid_dispatch(grid: int, sms: int, blocks_per_sm: int, first: int, cap, rate: float, weight: np.ndarray,
                   work: np.ndarray | None = None, prologue: float = 0.0,
                   prologue_idle: float | None = None, cohort: bool = False) -> tuple[float, np.ndarray]:
    """(time the last block ends, blocks each SM ran) for ``grid`` blocks of ``work`` (default 1 each) on ``sms`` SMs
    of ``blocks_per_sm`` slots: ``first`` slots per SM filled breadth-first at the start, then each freed slot refilled
    at once, an SM's free slots before the next SM's; a block first waits holding its slot but taking no rate --
    ``prologue`` cycles with every slot of the chip taken when it starts, ``prologue_idle`` (default the same) with
    none, linear in the slots taken -- then progresses at :func:`water_fill`'s rates (``cap(j)``: a block's most with j
    running blocks on its SM; ``rate``: the chip's). ``cohort``: the blocks an SM takes at one instant all get the
    work of the first of them (SM s's first-wave blocks that of block s), so they end together."""
    work = np.ones(grid) if work is None else np.asarray(work, dtype=float)
    idle = prologue if prologue_idle is None else prologue_idle
    slots_all = min(sms, grid) * first
    rem = np.zeros((sms, blocks_per_sm))  # remaining work of each slot's block (0: empty)
    ready = np.zeros((sms, blocks_per_sm))  # when each slot's block ends its prologue
    ran = np.zeros(sms, dtype=int)
    nxt = 0
    for j in range(first):
        take = min(sms, grid - nxt)
        rem[:take, j] = work[:take] if cohort else work[nxt:nxt + take]
        ready[:take, j] = prologue
        ran[:take] += 1
        nxt += take
    t = 0.0
    eps = 1e-9
    while True:
        live = rem > eps
        if not live.any():
            return t, ran
        run = live & (ready <= t * (1 + eps) + eps)
        busy = run.sum(axis=1)
        c = np.array([cap(int(j)) if j else 0.0 for j in busy])
        r = water_fill(busy.astype(float), c, weight, rate)
        left = np.where(run, rem / np.where(r > 0, r, 1.0)[:, None], np.inf)
        dt = float(min(left.min(), np.where(live & ~run, ready - t, np.inf).min()))
        t += dt
        rem = np.where(run, rem - r[:, None] * dt, rem)
        rem[rem <= eps] = 0.0
        if nxt < grid:
            empty = rem == 0.0
            for s in np.flatnonzero(empty.any(axis=1)):
                slots = np.flatnonzero(rem[s] == 0.0)[: grid - nxt]
                rem[s, slots] = work[nxt] if cohort else work[nxt:nxt + len(slots)]
                ran[s] += len(slots)
                nxt += len(slots)
                if nxt >= grid:
                    break
            new = empty & (rem > 0.0)  # the blocks started now wait by the load they start into, themselves included
            taken = min(float((rem > 0.0).sum()) / slots_all, 1.0) if slots_all else 1.0
            ready[new] = t + idle + (prologue - idle) * taken
