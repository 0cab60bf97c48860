"""Speed of light, in Nsight Compute's vocabulary: how busy each unit would be over the modelled time.

Nsight Compute's "GPU Speed Of Light Throughput" section reports, per unit, the achieved throughput as a percentage
of its peak over the kernel's elapsed time (Nsight Compute Kernel Profiling Guide, "Sections and Rules: Speed Of
Light" and the throughput metrics ``*.pct_of_peak_sustained_elapsed``). gemmsim's GPU rows carry the counters and the
time to do the same arithmetic: each ``sol_*_pct`` is the time the unit alone needs for the case's work at its peak
rate, divided by the modelled time. The unit that binds the modelled time is at 100 %; a unit well below it is idle
much of the time.

``NCU_METRICS`` names the ncu metric each column stands beside, so a student can hold a real profile next to the
model (the definitions differ in detail: ncu measures sub-unit throughputs, gemmsim counts the work its models count).
"""

from __future__ import annotations

import math

#: gemmsim column -> (what it is, the Nsight Compute metric it corresponds to)
NCU_METRICS = {
    "sol_compute_pct": ("FLOPs / (peak FLOP/s x time)", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    "sol_smem_pct": ("shared-memory wavefronts / (1 per SM per cycle x time)",
                     "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed"),
    "sol_l1_pct": ("L1 data-stage cycles of global accesses / (SMs x cycles)", "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
    "sol_l2_pct": ("L2 bytes / (L2 bandwidth x time)", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    "sol_dram_pct": ("DRAM bytes / (DRAM bandwidth x time)", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "sol_memory_pct": ("the busiest of shared memory, L1, L2 and DRAM",
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
}  # fmt: skip


def _pct(part: float | None, total: float) -> float:
    if part is None or not isinstance(part, (int, float)) or not math.isfinite(part) or not total > 0:
        return float("nan")
    return float(100.0 * part / total)


def _per(count, rate: float) -> float | None:
    return count / rate if isinstance(count, (int, float)) and rate > 0 else None


def sol_columns(row: dict, machine) -> dict:
    """``sol_*_pct`` columns of a GPU GEMM row (see ``NCU_METRICS``); NaN where the row lacks the counter."""
    t = row.get("time_s")
    if not isinstance(t, (int, float)) or not t > 0:
        return {}
    clock_hz = float(row.get("clock_mhz") or 0) * 1e6
    sm_cycles = machine.sms * clock_hz  # SM cycles per second over the whole GPU
    out = {
        "sol_compute_pct": _pct(row.get("time_compute_s"), t),
        "sol_smem_pct": _pct(_per(row.get("smem_wavefronts"), sm_cycles), t),
        "sol_l1_pct": _pct(_per(row.get("l1_data_cycles"), sm_cycles), t),
        "sol_l2_pct": _pct(row.get("t_l2_s"), t),
        "sol_dram_pct": _pct(row.get("t_dram_s"), t),
    }
    mem = [out[k] for k in ("sol_smem_pct", "sol_l1_pct", "sol_l2_pct", "sol_dram_pct") if math.isfinite(out[k])]
    out["sol_memory_pct"] = max(mem) if mem else float("nan")
    return out


def sol_summary(row: dict) -> str:
    """One case as ncu prints its Speed Of Light section: one line per unit, gemmsim's number beside ncu's metric."""
    lines = [f"{'unit':<16} {'% of peak':>9}  ncu metric"]
    for col, (what, metric) in NCU_METRICS.items():
        v = row.get(col)
        shown = f"{v:9.1f}" if isinstance(v, (int, float)) and math.isfinite(v) else f"{'-':>9}"
        lines.append(f"{col[4:-4]:<16} {shown}  {metric}")
    return "\n".join(lines)
