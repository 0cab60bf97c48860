"""Systolic cases: fold schedule -> fold timing and traffic (``gemmsim.models.systolic``) -> result columns.

``KERNELS`` maps kernel names to their parameter models: ``gemm`` (the default every machine kind offers, with
the dataflow and convention as parameters) and the aliases ``ws``, ``os``, ``is`` (one dataflow each).
``run_case`` is what the runner calls; it returns the common columns of ``gemmsim.sim.dispatch`` plus the systolic
counters (per-operand dicts flattened as ``sram_reads_A`` ...).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gemmsim.errors import KernelError
from gemmsim.models.systolic import simulate_systolic
from gemmsim.schema import Bytes, Strict


class _Overrides(Strict):
    """Machine overrides a sweep can vary (None: the machine file's value)."""

    convention: Literal["machine", "scalesim"] = Field(
        "machine", description="'machine': the machine file's hardware; 'scalesim': SCALE-Sim v3's conventions and numbers."
    )
    array: int | None = Field(None, gt=0, description="Square array size (rows = cols = array), overriding the machine's.")
    rows: int | None = Field(None, gt=0, description="PE rows, overriding the machine's (and array).")
    cols: int | None = Field(None, gt=0, description="PE columns, overriding the machine's (and array).")
    unified_buffer: Bytes | None = Field(None, description="Unified buffer size ('1MiB'), overriding the machine's.")
    weight_fifo_tiles: int | None = Field(None, ge=1, description="Weight FIFO depth in tiles, overriding the machine's.")
    dram_bandwidth_gbps: float | None = Field(None, gt=0, description="DRAM bandwidth in GB/s, overriding the machine's.")


class GemmParams(_Overrides):
    """C = A @ B on a systolic array in one of the three dataflows."""

    dataflow: Literal["ws", "os", "is"] = Field("ws", description="ws (weight stationary), os (output stationary), is (input stationary).")


class WSParams(_Overrides):
    """Weight stationary: B tiles stay in the PEs, A streams from the left, partial sums flow down."""


class OSParams(_Overrides):
    """Output stationary: each PE accumulates one C element while A and B stream past."""


class ISParams(_Overrides):
    """Input stationary: A tiles stay in the PEs, B streams from the left, partial sums flow down."""


KERNELS = {"gemm": GemmParams, "ws": WSParams, "os": OSParams, "is": ISParams}

#: systolic counters added to the common columns
COLUMNS = (
    "dataflow", "convention", "native_dataflow", "array_rows", "array_cols", "array_dtype", "dtype_note", "macs",
    "total_cycles", "compute_cycles", "stall_cycles", "folds", "fold_grid", "utilization", "mapping_efficiency",
    "sram_reads_A", "sram_reads_B", "sram_reads_C", "sram_writes_A", "sram_writes_B", "sram_writes_C",
    "dram_bytes_A", "dram_bytes_B", "dram_bytes_C",
)


def _bound(res) -> str:
    """'dram' when moving the DRAM bytes at the (overridden) bandwidth takes longer than the array's own cycles."""
    bw = res.extras.get("dram_time_cycles")
    return "dram" if bw is not None and bw > res.compute_cycles else "compute"


def run_case(machine, case) -> dict:
    """Simulate one case on a systolic machine: the common columns plus every systolic counter.

    The array computes in its own dtype when the case's dtype is not one its MACs take (``array_dtype`` says
    which, ``dtype_note`` why); bytes are counted in the dtype the array computed in.
    """
    if case.M is None or case.N is None or case.K is None:
        raise KernelError(f"kernel {case.kernel!r} on {machine.name}: a systolic GEMM needs M, N and K")
    params = dict(case.params)
    dataflow = params.pop("dataflow", None) or (case.kernel if case.kernel in ("ws", "os", "is") else "ws")
    convention = params.pop("convention", "machine")
    array = params.pop("array", None)
    over = {k: v for k, v in params.items() if v is not None}
    if array is not None:
        over.setdefault("rows", array)
        over.setdefault("cols", array)
    res = simulate_systolic(machine, M=case.M, N=case.N, K=case.K, dataflow=dataflow, convention=convention, dtype=case.dtype, **over)
    flops = 2 * res.macs
    time_s = res.time_s
    gflops = flops / time_s / 1e9 if time_s else 0.0
    row = {
        "flops": flops,
        "dram_bytes": res.dram_bytes,
        "intensity_flop_per_byte": flops / res.dram_bytes if res.dram_bytes else float("inf"),
        "time_s": time_s,
        "gflops": gflops,
        "peak_fraction": res.utilization,
        "bound": _bound(res),
        "dataflow": res.dataflow,
        "convention": res.convention,
        "native_dataflow": res.native_dataflow,
        "array_rows": res.rows,
        "array_cols": res.cols,
        "array_dtype": res.dtype,
        "dtype_note": res.extras.get("compute_dtype_note", ""),
        "macs": res.macs,
        "total_cycles": res.total_cycles,
        "compute_cycles": res.compute_cycles,
        "stall_cycles": res.stall_cycles,
        "folds": res.folds,
        "fold_grid": "x".join(str(g) for g in res.fold_grid),
        "utilization": res.utilization,
        "mapping_efficiency": res.mapping_efficiency,
    }
    for op in ("A", "B", "C"):
        row[f"sram_reads_{op}"] = res.sram_reads[op]
        row[f"sram_writes_{op}"] = res.sram_writes[op]
        row[f"dram_bytes_{op}"] = res.dram_bytes_by_operand[op]
    return row
