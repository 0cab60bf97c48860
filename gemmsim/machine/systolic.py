"""Systolic-array machine schema (``kind: systolic``): a rows x cols grid of MAC processing elements.

The array computes C (M x N) = A (M x K) @ B (K x N). Its operand buffers, as in the TPU v1 (Jouppi et al.,
ISCA 2017): a *unified buffer* holding the streamed operand (activations) and the outputs; a *weight FIFO*
staging the stationary operand from DRAM, ``weight_fifo_tiles`` tiles of rows x cols deep; a shadow copy of
the stationary tile in every PE (``double_buffered_stationary``) so the next tile shifts in while the current
one computes; and *accumulators* under the array (``accumulator_entries`` rows of ``cols`` partial sums of
``accumulator_bits``) where partial sums over the K folds add up on chip. Derived figures (peak MAC/s, TOPS,
ridge point) are properties, never fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gemmsim.machine.schema import MachineHeader
from gemmsim.schema import Bytes
from gemmsim.units import DTYPE_BYTES, dtype_bytes

#: The three dataflows: what stays in the PEs while the other operands stream past.
DATAFLOWS = ("ws", "os", "is")
DATAFLOW_NAMES = {"ws": "weight stationary", "os": "output stationary", "is": "input stationary"}


class SystolicMachine(MachineHeader):
    """A systolic array of MAC processing elements with operand buffers and DRAM."""

    kind: Literal["systolic"] = Field(description="Machine type.")
    rows: int = Field(gt=0, description="PE rows of the array (the K dimension in weight stationary).")
    cols: int = Field(gt=0, description="PE columns of the array (the N dimension in weight stationary).")
    clock_ghz: float = Field(gt=0, description="Array clock, GHz.")
    mac_dtypes: dict[str, float] = Field(
        min_length=1,
        description=(
            "Operand dtypes the MACs take -> MACs per PE per cycle (1.0 full rate, 0.25 quarter rate); "
            "the first entry is the array's native dtype, used for cases in a dtype it lacks."
        ),
    )
    output_dtype: str = Field("int32", description="Dtype of the results written back (C), as they leave the accumulators.")
    dataflows: list[Literal["ws", "os", "is"]] = Field(
        default_factory=lambda: ["ws"],
        description="Dataflows the hardware implements; others can still be simulated as what-ifs (flagged in results).",
    )
    unified_buffer: Bytes = Field(description="On-chip SRAM for the streamed operand and the outputs ('24MiB').")
    weight_fifo_tiles: int = Field(
        ge=1, description="Depth of the staging FIFO of the stationary operand, in rows x cols tiles (prefetch distance)."
    )
    double_buffered_stationary: bool = Field(
        True, description="PEs hold a second stationary tile, so the next one shifts in while the current one computes."
    )
    accumulator_entries: int = Field(gt=0, description="Rows of the accumulator memory (each rows holds cols partial sums).")
    accumulator_width: int = Field(gt=0, description="Partial sums per accumulator entry; equals cols (one per PE column).")
    accumulator_bits: int = Field(gt=0, description="Width of one partial sum, bits.")
    double_buffered_accumulators: bool = Field(
        True, description="Half the accumulators fill while the other half drains (usable rows per output tile = entries / 2)."
    )
    dram_bandwidth_gbps: float = Field(gt=0, description="Off-chip memory bandwidth, GB/s (1e9 bytes per second).")
    dram_capacity: Bytes = Field(0, description="Off-chip memory capacity ('8GiB'); 0 when not modelled.")

    @model_validator(mode="after")
    def _consistency(self) -> "SystolicMachine":
        problems = []
        for d, rate in self.mac_dtypes.items():
            if d not in DTYPE_BYTES:
                problems.append(f"mac_dtypes: unknown dtype {d!r}; known: {', '.join(DTYPE_BYTES)}")
            if not 0 < rate <= 1:
                problems.append(f"mac_dtypes.{d}: rate {rate} must be in (0, 1]")
            elif abs(1 / rate - round(1 / rate)) > 1e-9:
                problems.append(f"mac_dtypes.{d}: rate {rate} must be 1/n (a PE takes n cycles per MAC)")
        if self.output_dtype not in DTYPE_BYTES:
            problems.append(f"output_dtype: unknown dtype {self.output_dtype!r}")
        if self.accumulator_width != self.cols:
            problems.append(f"accumulator_width {self.accumulator_width} must equal cols {self.cols} (one partial sum per PE column)")
        if self.accumulator_entries < (2 if self.double_buffered_accumulators else 1):
            problems.append("accumulator_entries must be at least 2 with double_buffered_accumulators")
        if len(set(self.dataflows)) != len(self.dataflows) or not self.dataflows:
            problems.append("dataflows: list each dataflow once, at least one")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    # ---- derived figures -------------------------------------------------------------------------------
    @property
    def pes(self) -> int:
        """Processing elements: rows x cols."""
        return self.rows * self.cols

    @property
    def native_dtype(self) -> str:
        """The array's own operand dtype (the first of mac_dtypes)."""
        return next(iter(self.mac_dtypes))

    def compute_dtype(self, dtype: str) -> str:
        """The dtype the array computes a case of ``dtype`` in: itself if the MACs take it, else the native one."""
        return dtype if dtype in self.mac_dtypes else self.native_dtype

    def peak_macs_per_s(self, dtype: str | None = None) -> float:
        """Peak MACs per second: rows x cols x rate x clock (TPU v1: 65,536 x 0.7 GHz = 45.9 T)."""
        d = self.compute_dtype(dtype or self.native_dtype)
        return self.pes * self.mac_dtypes[d] * self.clock_ghz * 1e9

    def peak_tops(self, dtype: str | None = None) -> float:
        """Peak tera-operations per second, a MAC counting as 2 (TPU v1: 91.75 TOPS, the paper's 92)."""
        return 2 * self.peak_macs_per_s(dtype) / 1e12

    @property
    def dram_bytes_per_cycle(self) -> float:
        """DRAM bytes per array clock."""
        return self.dram_bandwidth_gbps / self.clock_ghz

    def ridge_point(self, dtype: str | None = None) -> float:
        """Ops (2 per MAC) per DRAM byte above which the roofline is compute bound (TPU v1: 91.75 T / 34 GB/s = 2699).

        Jouppi et al. quote ~1350 'operations per byte', which is this figure counting a MAC as one operation.
        """
        return 2 * self.peak_macs_per_s(dtype) / (self.dram_bandwidth_gbps * 1e9)

    @property
    def stationary_tile_bytes(self) -> int:
        """Bytes of one rows x cols tile of the native dtype (TPU v1: 64 KiB)."""
        return self.pes * dtype_bytes(self.native_dtype)

    @property
    def accumulator_bytes(self) -> int:
        """Accumulator memory, bytes (TPU v1: 4096 x 256 x 32 bit = 4 MiB)."""
        return self.accumulator_entries * self.accumulator_width * self.accumulator_bits // 8

    def derived(self) -> dict:
        """Every derived figure, for ``machines show``."""
        return {
            "pes": self.pes,
            "native_dtype": self.native_dtype,
            "peak_macs_per_cycle": {d: self.pes * r for d, r in self.mac_dtypes.items()},
            "peak_tmacs_per_s": {d: self.peak_macs_per_s(d) / 1e12 for d in self.mac_dtypes},
            "peak_tops": {d: self.peak_tops(d) for d in self.mac_dtypes},
            "dram_bytes_per_cycle": self.dram_bytes_per_cycle,
            "ridge_point_ops_per_byte": {d: self.ridge_point(d) for d in self.mac_dtypes},
            "ridge_point_macs_per_byte": {d: self.ridge_point(d) / 2 for d in self.mac_dtypes},
            "stationary_tile_bytes": self.stationary_tile_bytes,
            "weight_fifo_bytes": self.weight_fifo_tiles * self.stationary_tile_bytes,
            "stationary_tile_load_cycles": self.rows,
            "accumulator_bytes": self.accumulator_bytes,
            "accumulator_rows_per_output_tile": self.accumulator_entries // (2 if self.double_buffered_accumulators else 1),
        }
