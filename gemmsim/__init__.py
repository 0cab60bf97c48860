"""gemmsim: a cycle-approximate simulator of memory hierarchies and matrix accelerators.

It shows, with numbers and pictures, why the same GEMM runs at 1% or 80% of a machine's peak. The public
names below are imported lazily, so ``import gemmsim`` stays fast and a notebook pays only for what it uses.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    # machines and errors
    "load_machine": "gemmsim.machine",
    "GemmsimError": "gemmsim.errors",
    "MachineFileError": "gemmsim.errors",
    "ExperimentError": "gemmsim.errors",
    "TraceFormatError": "gemmsim.errors",
    "LaunchError": "gemmsim.errors",
    "KernelError": "gemmsim.errors",
    "ResultsError": "gemmsim.errors",
    "OutputError": "gemmsim.errors",
    "SizeLimitError": "gemmsim.guards",
    "set_limits": "gemmsim.guards",
    "Layout": "gemmsim.trace",
    # CPU side
    "Cache": "gemmsim.models.cache",
    "TLB": "gemmsim.models.tlb",
    "Hierarchy": "gemmsim.models.hierarchy",
    "cpu_trace": "gemmsim.kernels.cpu",
    "simulate_cpu": "gemmsim.sim.cpu",
    "load_experiment": "gemmsim.run.experiment",
    "run_experiment": "gemmsim.run.runner",
    # GPU side
    "occupancy": "gemmsim.models.occupancy",
    "smem_wavefronts": "gemmsim.models.banks",
    "global_sectors": "gemmsim.models.coalesce",
    "waves": "gemmsim.models.waves",
    "simulate_gpu": "gemmsim.sim.gpu",
    # systolic
    "simulate_systolic": "gemmsim.models.systolic",
    # reports and workloads
    "explain_case": "gemmsim.report.explain",
    "read_results": "gemmsim.report.tables",
    "TransformerLayer": "gemmsim.analytic.workload",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'gemmsim' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)
