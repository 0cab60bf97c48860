"""BLIS-style analytic parameters: the microkernel shape from the vector registers, KC, MC, NC from the caches.

A Goto/BLIS GEMM (seed 000, sections 4.1 and 5) has five loops around a microkernel that keeps an MR x NR tile
of C in registers. Convention here (row-major C, as in the seed's AVX2 kernel): vectors run along N, so
``NR = nv x lanes`` (nv vector registers per row of the tile) and each k step broadcasts MR elements of A.

**Microkernel shape** (``microkernel_shape``). Registers needed for an MR x NR tile:
``MR * nv`` accumulators + ``nv`` for the row of B + the registers that hold A (1 for a broadcast ISA, AVX2 and
AVX-512, whose FMAs take a broadcast from memory; ``MR / lanes`` for NEON, whose FMLA-by-element reads A's lanes
from whole vectors). Among the shapes that fit, the rule keeps those that

1. hide the FMA latency: at least ``fma_latency x fma_units`` independent accumulators (Low et al. 2016, eq. 1);
2. do not saturate the load ports: loads per k step (A broadcasts or vectors + nv) at most
   ``loads_per_cycle / fma_units`` per FMA;

and picks the one that moves the fewest bytes per FLOP from the packed panels, i.e. the largest
``MR * NR / (MR + NR)`` (Goto and van de Geijn 2008, section 6), ties broken by more accumulators, then larger MR.
This gives 6x16 fp32 and 6x8 fp64 on AVX2 (BLIS haswell), 14x16 fp64 on AVX-512 (BLIS skx's 16x14, transposed)
and 12x8 fp32 / 8x6 fp64 on NEON (BLIS armv8a's 8x12 / 6x8, which are column-oriented, transposed).
A shape given by hand that needs more registers than exist *spills*: the compiler keeps the excess accumulators
on the stack, and every k step reloads and stores them (the trace shows that traffic, see
``gemmsim.kernels.cpu_packed``).

**Cache blocking** (``analytic_blocking``): the analytical model of Low, Igual, Smith and Quintana-Orti,
"Analytical Modeling Is Enough for High-Performance BLIS", ACM TOMS 43(2), 2016 (FLAME Working Note #74):

- KC from L1: the B micro-panel (KC x NR) stays while A micro-panels (MR x KC) stream through; each takes whole
  ways of every set, one way is left for C: ``C_Ar = floor((W1 - 1) / (1 + NR/MR))`` ways for A,
  ``KC = C_Ar * N1 * L1line / (MR * s)`` (eq. 4); with ``C_Ar = 0`` (a 2-way L1) ``KC = N1 * L1line / (2 MR s)``
  (eq. 6).
- MC from L2, one level out: the packed A block (MC x KC) is resident, B micro-panels stream,
  one way for C: ``C_Ac = W2 - 1 - ceil(KC NR s / way2)``, ``MC = C_Ac * way2 / (KC s)`` rounded down to a
  multiple of MR. The paper says only that MC is derived "in a similar manner"; this is the reading that
  reproduces its Table III (SandyBridge 96, Kaveri 1792, TI C6678 128; tests/test_blis.py).
- NC from L3, one level out again: the packed B panel (KC x NC) is resident, A blocks stream (one per thread when
  the L3 is shared), one way for C; NC rounded down to a multiple of NR. No L3: NC is left open (None: all of N).

``BLIS_SHIPPED`` holds what BLIS actually ships for three machines, for comparison. On Haswell the model agrees
with BLIS's DGEMM KC = 256, but for SGEMM 6x16 it gives KC = 170 (one way for A's micro-panel), where BLIS ships
KC = 256 (A's micro-panel in 1.5 ways, B's in 4: half of L1, as seed 000 section 4.1 says) and MC = 144
(a 144 KiB A block, 56 % of L2). ``panel_footprints`` gives the share of each level each panel uses, for any
parameters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from gemmsim.errors import KernelError
from gemmsim.units import dtype_bytes

#: FMA latency in cycles by vector width when the machine file does not say (``fma_latency_cycles``):
#: 128-bit NEON (Neoverse N1 FMLA: 4, Arm Neoverse N1 Software Optimization Guide), 256-bit AVX2 (Haswell
#: VFMADD: 5, Intel Optimization Reference Manual section 2.3), 512-bit AVX-512 (Skylake-SP: 4, same manual 2.2).
DEFAULT_FMA_LATENCY = {128: 4, 256: 5, 512: 4}


@dataclass(frozen=True)
class IsaTraits:
    """What the shape rule needs to know about a core beyond the machine file's required fields."""

    lanes: int  # elements of the dtype per vector register (1 for scalar code)
    registers: int  # architectural vector (or FP) registers
    fma_units: int  # FMA pipes
    fma_latency: int  # cycles from an FMA's issue to its result
    loads_per_cycle: int  # load ports
    a_by_lane: bool  # True: A is loaded as vectors and used lane by lane (NEON FMLA by element); False: broadcast


def isa_traits(machine, dtype: str, simd: bool = True) -> IsaTraits:
    """The core's register and port facts for a dtype.

    ``fma_latency_cycles`` and ``a_by_lane`` are read from the machine when it has such fields, else taken from
    ``DEFAULT_FMA_LATENCY`` and from the vector width (128-bit with 32 registers: NEON-like, by lane). Scalar
    code (``simd=False``) has one lane and broadcasts nothing.
    """
    lat = machine.fma_latency_cycles or DEFAULT_FMA_LATENCY.get(machine.simd_bits, 4)
    by_lane = machine.a_by_lane
    if by_lane is None:
        by_lane = machine.simd_bits == 128 and machine.vector_registers >= 32
    return IsaTraits(
        lanes=machine.lanes(dtype) if simd else 1,
        registers=machine.vector_registers,
        fma_units=machine.fma_units,
        fma_latency=int(lat),
        loads_per_cycle=machine.loads_per_cycle,
        a_by_lane=bool(by_lane) and simd,
    )


@dataclass(frozen=True)
class MicroShape:
    """A microkernel shape and its register budget (counts are registers unless named otherwise)."""

    MR: int
    NR: int
    lanes: int  # elements per vector register (accumulators per register)
    vectors_per_row: int  # nv = ceil(NR / lanes)
    accumulators: int  # MR * nv registers holding C
    b_registers: int  # nv registers holding one row of the B micro-panel
    a_registers: int  # registers holding A (1 broadcast, or ceil(MR / lanes) vectors)
    registers_used: int  # accumulators + b_registers + a_registers
    registers_available: int
    spilled: int  # registers that do not fit: kept on the stack, reloaded and stored every k step
    loads_per_k: int  # load instructions per k step (A + B, without spills)
    fmas_per_k: int  # vector FMAs per k step (= accumulators)
    bytes_per_flop: float  # bytes read from the packed panels per FLOP: s (MR + NR) / (2 MR NR)
    latency_hidden: bool  # accumulators >= fma_latency x fma_units

    def as_dict(self) -> dict:
        """Plain dict (for result rows)."""
        return asdict(self)


def register_budget(MR: int, NR: int, traits: IsaTraits, elem: int = 4) -> MicroShape:
    """Register usage of an MR x NR tile on a core (see the module docstring for the count)."""
    if MR < 1 or NR < 1:
        raise KernelError(f"a microkernel needs MR, NR >= 1; got {MR} x {NR}")
    nv = -(-NR // traits.lanes)
    acc = MR * nv
    a_regs = -(-MR // traits.lanes) if traits.a_by_lane else 1
    used = acc + nv + a_regs
    return MicroShape(
        MR=MR,
        NR=NR,
        lanes=traits.lanes,
        vectors_per_row=nv,
        accumulators=acc,
        b_registers=nv,
        a_registers=a_regs,
        registers_used=used,
        registers_available=traits.registers,
        spilled=max(0, used - traits.registers),
        loads_per_k=(a_regs if traits.a_by_lane else MR) + nv,
        fmas_per_k=acc,
        bytes_per_flop=elem * (MR + NR) / (2.0 * MR * NR),
        latency_hidden=acc >= traits.fma_latency * traits.fma_units,
    )


def candidate_shapes(traits: IsaTraits, elem: int = 4) -> list[MicroShape]:
    """Every MR x (nv x lanes) shape that fits the registers without spilling (MR a multiple of lanes when A is
    used by lane), best first by the rule of the module docstring (feasible ones first)."""
    out = []
    L = traits.lanes
    for nv in range(1, traits.registers):
        step = L if traits.a_by_lane else 1
        for MR in range(step, traits.registers * max(L, 1) + 1, step):
            s = register_budget(MR, nv * L, traits, elem)
            if s.spilled:
                break
            out.append(s)

    def key(s: MicroShape):
        feasible = s.latency_hidden and s.loads_per_k * traits.fma_units <= traits.loads_per_cycle * s.fmas_per_k
        return (feasible, Fraction(s.MR * s.NR, s.MR + s.NR), s.accumulators, s.MR)

    return sorted(out, key=key, reverse=True)


def microkernel_shape(machine, dtype: str = "fp32", simd: bool = True) -> MicroShape:
    """The MR x NR shape the register rule picks for a machine and dtype (scalar code with ``simd=False``).

    Haswell: 6x16 fp32, 6x8 fp64 (seed 000 section 4.1); scalar code on Haswell: 4x3.
    """
    traits = isa_traits(machine, dtype, simd)
    shapes = candidate_shapes(traits, dtype_bytes(dtype))
    if not shapes:
        raise KernelError(f"{machine.name}: no microkernel shape fits {traits.registers} registers")
    return shapes[0]


@dataclass(frozen=True)
class Blocking:
    """Cache blocking of the five loops: KC (L1), MC (L2), NC (L3); None where the machine has no such level."""

    MR: int
    NR: int
    KC: int
    MC: int | None
    NC: int | None
    ways: dict  # level name -> {panel: ways it takes in every set}, as the model counted them
    method: str = "low2016"

    def as_dict(self) -> dict:
        """Plain dict (for result rows and reports)."""
        return asdict(self)


def _way_bytes(level) -> int:
    return level.sets * level.line_bytes


def analytic_blocking(machine, dtype: str, MR: int, NR: int, threads: int = 1) -> Blocking:
    """KC, MC, NC for an MR x NR microkernel by the analytical model of Low et al. (2016), module docstring.

    ``threads`` matters only for a shared L3: each thread's packed A block is charged against it.
    """
    if MR < 1 or NR < 1:
        raise KernelError(f"blocking needs MR, NR >= 1; got {MR} x {NR}")
    s = dtype_bytes(dtype)
    caches = machine.caches
    l1 = caches[0]
    way1 = _way_bytes(l1)
    a, b = MR * s, NR * s
    c_ar = (l1.ways - 1) * a // (a + b)  # = floor((W1 - 1) / (1 + NR/MR)), eq. 4
    if c_ar:
        kc = c_ar * way1 // a
    else:
        kc = way1 // (2 * a)  # eq. 6: a 2-way L1 splits each set between A_r and B_r
    kc = max(1, kc)
    ways = {l1.name: {"A_r": c_ar, "B_r": -(-kc * b // way1), "C": 1}}
    mc = nc = None
    if len(caches) > 1:
        l2 = caches[1]
        way2 = _way_bytes(l2)
        c_bc = max(1, -(-kc * b // way2))
        c_ac = max(1, l2.ways - 1 - c_bc)
        mc = max(MR, (c_ac * way2 // (kc * s)) // MR * MR)
        ways[l2.name] = {"A_c": c_ac, "B_r": c_bc, "C": 1}
    if len(caches) > 2 and mc is not None:
        l3 = caches[2]
        way3 = _way_bytes(l3)
        sharers = max(1, threads) if l3.shared else 1
        c_ac3 = max(1, -(-sharers * mc * kc * s // way3))
        c_bc3 = max(1, l3.ways - 1 - c_ac3)
        nc = max(NR, (c_bc3 * way3 // (kc * s)) // NR * NR)
        ways[l3.name] = {"B_c": c_bc3, "A_c": c_ac3, "C": 1}
    return Blocking(MR=MR, NR=NR, KC=kc, MC=mc, NC=nc, ways=ways)


def panel_footprints(machine, dtype: str, MR: int, NR: int, KC: int, MC: int, NC: int, threads: int = 1) -> dict:
    """Bytes of each packed panel and the share of each cache level it takes (seed 000 section 4.1).

    Panels: ``A_r`` (MR x KC micro-panel of A), ``B_r`` (KC x NR micro-panel of B), ``A_c`` (MC x KC packed block
    of A, one per thread), ``B_c`` (KC x NC packed panel of B), ``C_r`` (the MR x NR tile). Returns
    ``{"<panel>_bytes": .., "<panel>_frac_<level>": bytes / level size, "<panel>_ways_<level>": bytes / way}``;
    for a shared level, ``A_c`` counts every thread's block.
    """
    s = dtype_bytes(dtype)
    panels = {"A_r": MR * KC * s, "B_r": KC * NR * s, "A_c": MC * KC * s, "B_c": KC * NC * s, "C_r": MR * NR * s}
    row: dict = {f"{p}_bytes": v for p, v in panels.items()}
    for lv in machine.caches:
        for p, v in panels.items():
            v_here = v * threads if (p == "A_c" and lv.shared) else v
            row[f"{p}_frac_{lv.name}"] = v_here / lv.size
            row[f"{p}_ways_{lv.name}"] = v_here / _way_bytes(lv)
    return row


@dataclass(frozen=True)
class ShippedBlocking:
    """Blocking parameters a BLIS configuration ships (BLIS's own MR/NR orientation)."""

    config: str
    dtype: str
    MR: int
    NR: int
    MC: int
    KC: int
    NC: int
    row_preferential: bool  # True: vectors along NR (as here); False: along MR (transpose to compare)
    source: str

    def row_major_shape(self) -> tuple[int, int]:
        """(MR, NR) in this module's orientation (vectors along NR)."""
        return (self.MR, self.NR) if self.row_preferential else (self.NR, self.MR)


_BLIS = "https://github.com/flame/blis/blob/master/config/{0}/bli_cntx_init_{0}.c"

#: What BLIS ships, by gemmsim machine name and dtype (bli_blksz_init_easy lines of each config).
BLIS_SHIPPED: dict[str, dict[str, ShippedBlocking]] = {
    "haswell": {
        "fp32": ShippedBlocking("haswell", "fp32", 6, 16, 144, 256, 4080, True, _BLIS.format("haswell")),
        "fp64": ShippedBlocking("haswell", "fp64", 6, 8, 72, 256, 4080, True, _BLIS.format("haswell")),
    },
    "skylake_avx512": {
        "fp32": ShippedBlocking("skx", "fp32", 32, 12, 480, 384, 3072, False, _BLIS.format("skx")),
        "fp64": ShippedBlocking("skx", "fp64", 16, 14, 240, 256, 3752, False, _BLIS.format("skx")),
    },
    "neoverse_n1": {
        "fp32": ShippedBlocking("altra", "fp32", 8, 12, 192, 640, 12288, False, _BLIS.format("altra")),
        "fp64": ShippedBlocking("altra", "fp64", 6, 8, 120, 480, 8192, False, _BLIS.format("altra")),
    },
}


def blis_report(machine, dtype: str = "fp32", threads: int = 1) -> dict:
    """Shape and blocking the rules pick for a machine, beside what BLIS ships for it (when known).

    Keys: ``shape`` (MicroShape dict), ``analytic`` (Blocking dict), ``analytic_footprints``, and, when
    ``BLIS_SHIPPED`` knows the machine, ``shipped`` and ``shipped_footprints``.
    """
    shape = microkernel_shape(machine, dtype)
    blk = analytic_blocking(machine, dtype, shape.MR, shape.NR, threads)
    big = 1 << 20
    out = {
        "machine": machine.name,
        "dtype": dtype,
        "shape": shape.as_dict(),
        "analytic": blk.as_dict(),
        "analytic_footprints": panel_footprints(
            machine, dtype, blk.MR, blk.NR, blk.KC, blk.MC or big, blk.NC or big, threads
        ),
    }
    shipped = BLIS_SHIPPED.get(machine.name, {}).get(dtype)
    if shipped is not None:
        out["shipped"] = asdict(shipped)
        # Panel sizes do not depend on which of MR, NR the vectors run along: BLIS's own MR, NR.
        out["shipped_footprints"] = panel_footprints(
            machine, dtype, shipped.MR, shipped.NR, shipped.KC, shipped.MC, shipped.NC, threads
        )
    return out
