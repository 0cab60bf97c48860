"""GPU timing: counters and the machine -> modelled time, and which bound it hit.

Three layers, each small enough to check by hand:

1. **Per-step costs of one block** (:class:`StepCosts`). A GEMM block runs ``steps`` k-steps; each step
   needs its loads (a round trip of ``latency_clk`` SM cycles: L1, L2 or DRAM latency weighted by where the
   sectors were found) and then occupies the SM's pipes for ``pipe_clk`` cycles, the largest of

   * ``compute``: FLOPs / the SM's FLOP per clock (tensor cores by input and accumulator dtype, scaled by
     ``mma_sync_fraction`` for warp-level MMA; CUDA cores otherwise);
   * ``smem``: shared-memory wavefronts (one per SM clock = 128 B/clk/SM, seed 001);
   * ``L1``: global sectors through L1TEX at 128 B/clk/SM;
   * ``issue``: warp instructions at one per clock per SM sub-partition.

2. **One SM over time** (:func:`sm_time`, simpy). ``blocks_per_sm`` resident blocks share the SM's pipe (a
   simpy Resource of capacity 1); each block keeps up to ``stages - 1`` loads in flight (S-stage cp.async
   pipelines, CUTLASS 2.x: once step i's data is in, the load for step i+S-1 is issued into the buffer step
   i-1 freed, then step i computes, so a step takes max(pipe, latency / (S-1)); S = 1 is the plain
   load / __syncthreads / compute loop). A load first holds the SM's memory port for ``transfer_clk`` (its
   bytes at the SM's share of the L2 and DRAM bandwidths, so deep pipelines cannot beat the bandwidth),
   then waits ``latency_clk`` (any number of loads wait at once: Little's law decides). A set of
   co-resident blocks is simulated for a few steps to get its start-up and per-step time, then extrapolated
   to the whole block and to the ``ceil(blocks / SMs)`` blocks of the busiest SM (breadth-first dispatch).
   This gives both regimes of the waves model (``gemmsim.models.waves``): blocks that mostly wait overlap
   fully (time = waves x block time: ``latency``), blocks that keep the pipe busy queue on it (time =
   blocks on the busiest SM x pipe time: the pipe's bound).

3. **Roofline per level** on the whole chip: DRAM bytes / DRAM bandwidth, L2 bytes / L2 bandwidth. The
   modelled time is the largest of the SM time and these; ``bound`` names the winner ('compute', 'smem',
   'L1', 'issue', 'latency', 'L2', 'dram'). Launch overhead (~6.6 us for an empty kernel on the H200) is
   not included.

Also here: the pipeline-depth model of seed 003, ``P(S) = P_inf * S / (S + kappa)`` and its two-point fit
(:func:`pipeline_efficiency`, :func:`fit_pipeline`), and :data:`SEED_003` with the paper's numbers. Seed 003's
occupancy ceiling gamma(S) is not here: calibrated on S = 4, it could only reproduce S = 4. Tensor-core kernels are
timed by the SM pipeline model instead (``gemmsim.models.sm_pipeline``, through ``gpu_time(..., sm=...)``), where
the stage effect comes out of the simulated copies, MMAs and barriers.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import simpy

from gemmsim.errors import KernelError

#: Bounds a modelled time can report.
BOUNDS = ("compute", "smem", "L1", "issue", "latency", "L2", "dram")

#: Steps simulated per block before extrapolating (enough to reach the steady state of an 8-stage pipeline).
_SIM_STEPS = 24


@dataclass(frozen=True)
class StepCosts:
    """What one k-step of one block costs (SM clock cycles), and how deep the block pipelines its loads."""

    steps: int  # k-steps per block
    stages: int  # loads in flight + 1 (S); 1 = load, wait, compute
    latency_clk: float  # round trip of one step's loads
    pipe: dict  # {'compute': clk, 'smem': clk, 'L1': clk, 'issue': clk} per step
    epilogue_clk: float = 0.0  # once per block after the last step (the C stores' latency)
    transfer_clk: float = 0.0  # the SM's memory port busy per step: bytes at the SM's share of L2/DRAM bandwidth

    @property
    def pipe_clk(self) -> float:
        """SM pipe time of one step: the largest of the pipe terms."""
        return max(self.pipe.values()) if self.pipe else 0.0

    @property
    def pipe_bound(self) -> str:
        """Which pipe term decides pipe_clk."""
        return max(self.pipe, key=self.pipe.get) if self.pipe else "latency"

    @property
    def kappa(self) -> float:
        """A step's load time (latency + transfer) in units of its pipe time (the kappa of S/(S+kappa))."""
        load = self.latency_clk + self.transfer_clk
        return load / self.pipe_clk if self.pipe_clk > 0 else math.inf


def _block_set_time(costs: StepCosts, blocks: int, steps: int) -> float:
    """Cycles for ``blocks`` co-resident blocks, all starting at 0, to run ``steps`` steps each (simpy)."""
    env = simpy.Environment()
    pipe = simpy.Resource(env, capacity=1)
    port = simpy.Resource(env, capacity=1)
    S, L, c, x = costs.stages, costs.latency_clk, costs.pipe_clk, costs.transfer_clk
    done = []

    def load(env):
        if x > 0:  # the bytes cross the SM's share of the memory bandwidth, one step's loads after the other
            with port.request() as req:
                yield req
                yield env.timeout(x)
        yield env.timeout(L)

    def block(env):
        loads = {}
        for i in range(min(S - 1, steps)):  # prologue: S-1 stages in flight
            loads[i] = env.process(load(env))
        for i in range(steps):
            if S == 1:
                yield env.process(load(env))
            else:
                yield loads.pop(i)  # cp.async.wait_group S-2 + __syncthreads: stage i is in, stage i-1 is free
                nxt = i + S - 1
                if nxt < steps:
                    loads[nxt] = env.process(load(env))
            if c > 0:
                with pipe.request() as req:
                    yield req
                    yield env.timeout(c)
        if costs.epilogue_clk:
            yield env.timeout(costs.epilogue_clk)
        done.append(env.now)

    for _ in range(blocks):
        env.process(block(env))
    env.run()
    return max(done) if done else 0.0


def block_set_time(costs: StepCosts, blocks: int) -> float:
    """Cycles for ``blocks`` co-resident blocks to run all their steps (start-up + steps x steady per-step time)."""
    if blocks < 1:
        return 0.0
    if costs.steps <= 2 * _SIM_STEPS:
        return _block_set_time(costs, blocks, costs.steps)
    t1 = _block_set_time(costs, blocks, _SIM_STEPS)
    t2 = _block_set_time(costs, blocks, 2 * _SIM_STEPS)
    per_step = (t2 - t1) / _SIM_STEPS
    return t2 + (costs.steps - 2 * _SIM_STEPS) * per_step


@dataclass(frozen=True)
class SMTime:
    """Time of the busiest SM: its blocks in rounds of ``blocks_per_sm`` co-resident blocks."""

    cycles: float
    blocks_on_sm: int
    rounds: int
    regime: str  # 'latency' (pipe idle most of the time) or the pipe bound ('compute', 'smem', 'L1', 'issue')
    pipe_busy: float  # fraction of the cycles the SM's pipe is busy


def sm_time(costs: StepCosts, grid: int, sms: int, blocks_per_sm: int) -> SMTime:
    """Cycles the busiest SM needs for its share of a grid of identical blocks.

    The block scheduler dispatches breadth-first, so the busiest SM runs ``ceil(grid / sms)`` blocks, in
    rounds of ``blocks_per_sm`` that start and finish together (identical blocks), the last one partial.
    """
    if grid < 1 or sms < 1 or blocks_per_sm < 1:
        raise KernelError(f"grid, sms and blocks_per_sm must be positive (got {grid}, {sms}, {blocks_per_sm})")
    nb = -(-grid // sms)
    full, tail = divmod(nb, blocks_per_sm)
    cyc = full * block_set_time(costs, blocks_per_sm) + (block_set_time(costs, tail) if tail else 0.0)
    busy = nb * costs.steps * costs.pipe_clk
    frac = busy / cyc if cyc > 0 else 0.0
    regime = costs.pipe_bound if frac >= 0.5 else "latency"
    return SMTime(cyc, nb, full + (1 if tail else 0), regime, frac)


@dataclass(frozen=True)
class GPUTime:
    """A modelled GPU time and everything behind it (seconds unless the name says otherwise)."""

    time_s: float
    bound: str
    t_sm_s: float  # busiest SM: latency-hiding pipeline over its blocks
    t_dram_s: float  # DRAM bytes / DRAM bandwidth
    t_l2_s: float  # L2 bytes / L2 bandwidth
    sm_regime: str  # 'latency' or the pipe bound of the SM time
    pipe_busy: float  # fraction of the SM time its pipe is busy
    pipe_clk_per_step: float
    latency_clk_per_step: float
    transfer_clk_per_step: float
    kappa: float  # latency / pipe time of one step
    blocks_on_busiest_sm: int
    clock_mhz: float
    terms: dict = field(default_factory=dict)  # per-step pipe terms, clk

    def columns(self) -> dict:
        """Result columns (flat)."""
        d = asdict(self)
        terms = d.pop("terms")
        d.update({f"pipe_{k}_clk_per_step": v for k, v in terms.items()})
        return d


def gpu_time(
    costs: StepCosts,
    grid: int,
    sms: int,
    blocks_per_sm: int,
    clock_mhz: float,
    dram_bytes: float,
    dram_bandwidth_gbps: float,
    l2_bytes: float = 0.0,
    l2_bandwidth_gbps: float | None = None,
    sm: SMTime | None = None,
) -> GPUTime:
    """Modelled time: the largest of the busiest SM's time and the DRAM and L2 rooflines, with its bound.

    ``sm``: the busiest SM's time when another model computed it (tensor-core kernels: ``models.sm_pipeline``);
    otherwise :func:`sm_time` of ``costs``."""
    smt = sm if sm is not None else sm_time(costs, grid, sms, blocks_per_sm)
    t_sm = smt.cycles / (clock_mhz * 1e6)
    t_dram = dram_bytes / (dram_bandwidth_gbps * 1e9) if dram_bandwidth_gbps else 0.0
    t_l2 = l2_bytes / (l2_bandwidth_gbps * 1e9) if l2_bandwidth_gbps else 0.0
    cands = {smt.regime: t_sm, "dram": t_dram, "L2": t_l2}
    bound = max(cands, key=cands.get)
    return GPUTime(
        time_s=cands[bound],
        bound=bound,
        t_sm_s=t_sm,
        t_dram_s=t_dram,
        t_l2_s=t_l2,
        sm_regime=smt.regime,
        pipe_busy=smt.pipe_busy,
        pipe_clk_per_step=costs.pipe_clk,
        latency_clk_per_step=costs.latency_clk,
        transfer_clk_per_step=costs.transfer_clk,
        kappa=costs.kappa,
        blocks_on_busiest_sm=smt.blocks_on_sm,
        clock_mhz=clock_mhz,
        terms=dict(costs.pipe),
    )


def load_latency_clk(machine, l1_hit_rate: float, l2_hit_rate: float, clock_mhz: float | None = None) -> float:
    """Average round trip of a global load, SM cycles: L1 hits at the L1 latency, L2 hits at the L2 latency,
    the rest at the L2 latency plus the DRAM latency (``dram.latency_ns`` at the SM clock)."""
    clk = clock_mhz or machine.clock_mhz_max
    l1, l2 = (0.0 if math.isnan(x) else x for x in (l1_hit_rate, l2_hit_rate))
    dram_clk = machine.dram.latency_ns * clk / 1e3
    beyond_l1 = machine.l2.hit_latency_cycles + (1 - l2) * dram_clk
    return l1 * machine.l1.hit_latency_cycles + (1 - l1) * beyond_l1


def pipe_terms(machine, flops: float, flops_per_clk: float, smem_wavefronts: float, l1_sectors: float,
               warp_instructions: float) -> dict:
    """Per-step SM pipe terms in cycles (see the module docstring)."""
    return {
        "compute": flops / flops_per_clk if flops_per_clk else 0.0,
        "smem": float(smem_wavefronts),  # one wavefront (128 B) per clock
        "L1": l1_sectors * machine.l1.sector_bytes / machine.smem.bytes_per_clk,
        "issue": warp_instructions / machine.limits.sub_partitions,
    }


def roofline(machine, flops: float, dram_bytes: float, peak_tflops: float) -> dict:
    """Plain DRAM roofline of a kernel: attainable TFLOP/s = min(peak, intensity x bandwidth)."""
    intensity = flops / dram_bytes if dram_bytes else math.inf
    att = min(peak_tflops, intensity * machine.dram.bandwidth_gbps / 1e3)
    return {"roofline_tflops": att, "roofline_bound": "compute" if att >= peak_tflops else "dram", "intensity": intensity}


# ---------------------------------------------------------------------------------------------------
# Seed 003: the pipeline-depth model
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Seed003:
    """Numbers of seed 003 (FP16 GEMM on an RTX 4060 with CUTLASS 256x128x32, M=N=K=8192, fp16 -> fp32)."""

    peak_tflops: float = 60.55  # the paper's 'theoretical peak' (the fp16-accumulate rate)
    measured_tflops: tuple = ((2, 25.6), (3, 31.9), (4, 31.1))  # (S, TFLOP/s)
    model_s4_tflops: float = 35.4  # what S/(S+kappa) predicted for S = 4
    model_s4_overestimate: float = 0.138
    gamma_model_error: float = 0.01  # 'within 1 %'
    smem_kib: tuple = ((3, 72), (4, 96))  # shared memory per block the paper gives
    blocks_claimed: tuple = ((3, 2), (4, 1))  # blocks per SM the paper claims
    regs_claimed: tuple = ((3, 64), (4, 72))  # registers per thread the paper claims (~)


SEED_003 = Seed003()


def pipeline_efficiency(stages: float, kappa: float) -> float:
    """Seed 003's pipeline efficiency S / (S + kappa): the fraction of the asymptotic rate S stages reach."""
    if stages <= 0 or kappa < 0:
        raise KernelError(f"stages must be > 0 and kappa >= 0 (got {stages}, {kappa})")
    return stages / (stages + kappa)


def fit_pipeline(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Fit ``P(S) = P_inf * S / (S + kappa)`` to (S, P) points; returns (P_inf, kappa).

    With two points the fit is exact: 1/P = 1/P_inf + (kappa/P_inf)(1/S) is a straight line in 1/S, so the
    fit is the line through the two points (least squares in 1/P with more points).
    """
    if len(points) < 2:
        raise KernelError("fit_pipeline needs at least two (stages, throughput) points")
    xs = [1.0 / s for s, _ in points]
    ys = [1.0 / p for _, p in points]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise KernelError("fit_pipeline needs points at two different stage counts")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    icpt = my - slope * mx
    if icpt <= 0:
        raise KernelError("these points do not follow S/(S+kappa) (the fitted asymptote is not positive)")
    p_inf = 1.0 / icpt
    return p_inf, slope * p_inf
