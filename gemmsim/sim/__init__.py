"""One case -> one result row. ``dispatch`` (``Case``, ``COMMON_COLUMNS``, ``run_case`` by machine kind) and one module per
kind: ``cpu``, ``gpu``, ``systolic``, each with ``KERNELS`` and ``run_case``, wiring kernels (traces) through models
(counters) to timing (time and bound). May import: kernels, models, timing, analytic, machine and the base modules.
"""

from gemmsim.sim.dispatch import COMMON_COLUMNS, KIND_MODULES, Case, kernels_for, run_case

__all__ = ["COMMON_COLUMNS", "KIND_MODULES", "Case", "kernels_for", "run_case"]
