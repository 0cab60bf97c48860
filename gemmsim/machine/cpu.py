"""CPU machine files: cache levels, TLBs, DRAM, cores and SIMD units (``kind: cpu``).

Derived figures (sets per level, peak FLOP/s per dtype, ridge point) are properties computed from the fields,
never second numbers in the file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gemmsim.machine.schema import MachineHeader
from gemmsim.schema import Bytes, Strict
from gemmsim.units import DTYPE_BYTES, dtype_bytes, is_power_of_two

SCHEMA_VERSION = 1

class CacheLevel(Strict):
    """One level of a CPU cache hierarchy (a data or unified cache)."""

    name: str = Field(description="Level name, unique in the machine (L1, L2, L3).")
    size: Bytes = Field(description="Capacity in bytes ('32KiB'); must equal sets x ways x line_bytes.")
    ways: int = Field(gt=0, description="Associativity; ways = size / line_bytes makes it fully associative.")
    line_bytes: int = Field(gt=0, description="Line (block) size in bytes; a power of two.")
    latency_cycles: float = Field(ge=0, description="Load-to-use latency of a hit at this level, in core cycles.")
    bandwidth_bytes_per_cycle: float = Field(
        gt=0, description="Sustained bandwidth from this level to the one above it, bytes per core cycle (per core)."
    )
    shared: bool = Field(False, description="True when all cores share this level (an LLC); False when private per core.")
    replacement: Literal["lru", "fifo", "random"] = Field("lru", description="Replacement policy.")
    write_back: bool = Field(True, description="Write-back (True) or write-through (False).")
    write_allocate: bool = Field(True, description="Allocate a line on a store miss (True) or write around it (False).")

    @property
    def sets(self) -> int:
        """Number of sets: size / (ways x line_bytes)."""
        return self.size // (self.ways * self.line_bytes)

    @model_validator(mode="after")
    def _geometry(self) -> "CacheLevel":
        problems = []
        if not is_power_of_two(self.line_bytes):
            problems.append(f"line_bytes {self.line_bytes} is not a power of two")
        if self.size % (self.ways * self.line_bytes) or self.size == 0:
            problems.append(
                f"size {self.size} B is not sets x ways x line_bytes "
                f"(ways {self.ways} x line {self.line_bytes} B = {self.ways * self.line_bytes} B does not divide it)"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self


class TLBLevel(Strict):
    """One level of a data TLB for one page size."""

    name: str = Field(description="Level name, unique in the machine (DTLB, STLB).")
    entries: int = Field(gt=0, description="Number of translations held.")
    ways: int = Field(gt=0, description="Associativity; ways = entries makes it fully associative.")
    page: Bytes = Field(description="Page size this level translates ('4KiB', '2MiB').")
    miss_penalty_cycles: float = Field(
        ge=0, description="Cycles added by a miss at this level (to the next TLB level or, for the last, a page walk)."
    )

    @property
    def sets(self) -> int:
        """Number of sets: entries / ways."""
        return self.entries // self.ways

    @model_validator(mode="after")
    def _geometry(self) -> "TLBLevel":
        problems = []
        if self.entries % self.ways:
            problems.append(f"entries {self.entries} is not a multiple of ways {self.ways}")
        if not is_power_of_two(self.page):
            problems.append(f"page {self.page} B is not a power of two")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class DRAM(Strict):
    """Main memory as the whole socket sees it."""

    bandwidth_gbps: float = Field(gt=0, description="Sustained bandwidth, GB/s (1e9 bytes per second).")
    latency_ns: float = Field(gt=0, description="Load latency of a DRAM access, nanoseconds.")


class CPUMachine(MachineHeader):
    """A multicore CPU: cores with SIMD FMA units, a cache hierarchy, TLBs and DRAM."""

    kind: Literal["cpu"] = Field(description="Machine type.")
    clock_ghz: float = Field(gt=0, description="Sustained core clock under vector load, GHz.")
    cores: int = Field(gt=0, description="Physical cores.")
    simd_bits: int = Field(gt=0, description="Width of one vector register in bits (128 NEON/SSE, 256 AVX2, 512 AVX-512).")
    vector_registers: int = Field(gt=0, description="Architectural vector registers (16 for AVX2, 32 for AVX-512 and NEON).")
    fma_units: int = Field(gt=0, description="Vector FMA pipes per core (each does one FMA per lane per cycle).")
    loads_per_cycle: int = Field(2, gt=0, description="Load instructions the core can issue per cycle (load ports).")
    stores_per_cycle: int = Field(1, gt=0, description="Store instructions the core can issue per cycle (store ports).")
    miss_parallelism: int = Field(
        10, gt=0, description="L1 misses that can be outstanding at once (line fill buffers); bounds latency overlap."
    )
    fma_latency_cycles: int | None = Field(
        None, gt=0, description="Cycles from an FMA's issue to its result (None: a default by vector width, see gemmsim.analytic.blis)."
    )
    a_by_lane: bool | None = Field(
        None, description="FMA by vector element (NEON FMLA by lane) instead of a broadcast of A (None: by vector width)."
    )
    simd_dtypes: list[str] = Field(
        default_factory=lambda: ["fp64", "fp32"],
        description="Dtypes the FMA units handle at native lane width; others run at the fp32 rate after conversion.",
    )
    caches: list[CacheLevel] = Field(min_length=1, description="Data cache levels, closest to the core first.")
    tlbs: list[TLBLevel] = Field(default_factory=list, description="Data TLB levels, first level first.")
    dram: DRAM = Field(description="Main memory.")

    @model_validator(mode="after")
    def _consistency(self) -> "CPUMachine":
        problems = []
        names = [c.name for c in self.caches] + [t.name for t in self.tlbs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            problems.append(f"duplicate level names: {', '.join(dup)}")
        for d in self.simd_dtypes:
            if d not in DTYPE_BYTES:
                problems.append(f"simd_dtypes: unknown dtype {d!r}")
        if self.simd_bits % 64:
            problems.append(f"simd_bits {self.simd_bits} is not a multiple of 64")
        for upper, lower in zip(self.caches, self.caches[1:]):
            if lower.line_bytes < upper.line_bytes:
                problems.append(f"{lower.name} line ({lower.line_bytes} B) is smaller than {upper.name}'s ({upper.line_bytes} B)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def lanes(self, dtype: str) -> int:
        """SIMD lanes per vector for a dtype (dtypes not in simd_dtypes count at the fp32 width)."""
        eff = dtype if dtype in self.simd_dtypes else "fp32"
        return self.simd_bits // (8 * dtype_bytes(eff))

    def flops_per_cycle(self, dtype: str) -> int:
        """Peak FLOP per cycle per core: FMA units x lanes x 2 (an FMA is two FLOPs)."""
        return self.fma_units * self.lanes(dtype) * 2

    def peak_gflops(self, dtype: str, cores: int = 1) -> float:
        """Peak GFLOP/s of ``cores`` cores for a dtype (seed 000 1.1: 2 FMA x 8 fp32 x 2 x 3 GHz = 96)."""
        return self.flops_per_cycle(dtype) * self.clock_ghz * cores

    def ridge_point(self, dtype: str, cores: int | None = None) -> float:
        """Arithmetic intensity (FLOP/B of DRAM traffic) above which the roofline is compute bound."""
        n = self.cores if cores is None else cores
        return self.peak_gflops(dtype, n) / self.dram.bandwidth_gbps

    def derived(self) -> dict:
        """Every derived figure, for ``machines show``."""
        return {
            "sets": {c.name: c.sets for c in self.caches},
            "tlb_sets": {t.name: t.sets for t in self.tlbs},
            "tlb_reach_bytes": {t.name: t.entries * t.page for t in self.tlbs},
            "peak_gflops_per_core": {d: self.peak_gflops(d) for d in ("fp64", "fp32", "fp16", "bf16", "int8")},
            "peak_gflops_all_cores": {d: self.peak_gflops(d, self.cores) for d in ("fp64", "fp32")},
            "ridge_point_flop_per_byte": {d: self.ridge_point(d) for d in ("fp64", "fp32")},
            "dram_bytes_per_cycle": self.dram.bandwidth_gbps / self.clock_ghz,
        }
