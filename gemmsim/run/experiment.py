"""Experiment files: which machines, kernels, shapes, dtypes and sweeps to run, validated up front.

An experiment is checked in two passes, and every problem of both passes is reported at once with the file
name and the field path: the schema (unknown keys, wrong types), then the meaning (machines that do not
load, kernels no listed machine can run, parameters a kernel does not have, unknown dtypes).

Besides plain shapes, an experiment can list ``workloads``: Transformer layers (gemmsim.analytic.workload) whose GEMMs
become cases of every listed kernel on every machine, each tagged with its workload, op and count so the
runner can add them up per workload. A workload's ``batch`` and ``phase`` may be lists (a batch sweep).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PositiveInt, ValidationError, field_validator, model_validator

from gemmsim.errors import ExperimentError, GemmsimError
from gemmsim.machine import load_machine, read_yaml, validation_problems
from gemmsim.schema import Strict
from gemmsim.report.figures.lines import Plot
from gemmsim.report.headline import Headline
from gemmsim.sim.dispatch import Case, kernels_for
from gemmsim.trace import LayoutSpec
from gemmsim.units import DTYPE_BYTES
from gemmsim.analytic.workload import OP_NAMES, TransformerLayer


class Shape(Strict):
    """A GEMM shape: C (M x N) += A (M x K) @ B (K x N)."""

    M: int = Field(gt=0, description="Rows of A and C.")
    N: int = Field(gt=0, description="Columns of B and C.")
    K: int = Field(gt=0, description="Columns of A, rows of B (the reduction).")


class KernelEntry(Strict):
    """A kernel by name, with parameters (the kernel's defaults fill the rest)."""

    name: str = Field(description="Kernel name (ijk, blocked, tiled_smem, gemm ...).")
    params: dict[str, Any] = Field(default_factory=dict, description="Kernel parameters.")
    label: str | None = Field(None, description="Name shown in tables and figures (default: the kernel name).")
    layout: LayoutSpec | None = Field(
        None, description="Layout fields for this entry only (pad, order, trans_a ...), over the experiment's layout."
    )

    def layout_for(self, exp_layout: LayoutSpec) -> dict:
        """The experiment's layout with this entry's fields (the ones it sets) laid over it, as a plain dict."""
        over = self.layout.model_dump(mode="json", exclude_unset=True) if self.layout is not None else {}
        return {**exp_layout.model_dump(mode="json"), **over}


Phase = Literal["prefill", "decode"]

#: Kernel parameters that receive a workload's accumulator dtype when a kernel has one (and the entry does not set it).
ACC_PARAM_NAMES = ("acc_dtype", "acc")


def _as_list(v: Any) -> Any:
    """A scalar becomes a one-element list, so a field can be written as one value or a sweep."""
    return v if isinstance(v, list) else [v]


class WorkloadEntry(Strict):
    """A Transformer layer to decompose into GEMM cases (seed 000 sections 13-14); batch and phase may be swept."""

    kind: Literal["transformer"] = Field("transformer", description="Workload type (only Transformer layers so far).")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Short name, shown in the results' 'workload' column.")
    d_model: int = Field(gt=0, description="Model width d.")
    heads: int = Field(1, gt=0, description="Attention heads; d_model must be a multiple of heads.")
    d_ff: int | None = Field(None, gt=0, description="FFN hidden width (default 4 * d_model).")
    seq_len: int = Field(gt=0, description="Prefill: tokens per sequence L; decode: KV-cache length unless kv_len is set.")
    kv_len: int | None = Field(None, gt=0, description="Decode: tokens already in the KV cache (default seq_len).")
    layers: int = Field(1, gt=0, description="Identical layers; multiplies every op's count.")
    batch: Annotated[list[PositiveInt], BeforeValidator(_as_list)] = Field(
        default_factory=lambda: [1], min_length=1, description="Batch B, or a list of batches to sweep (decode slides along the roof)."
    )
    phase: Annotated[list[Phase], BeforeValidator(_as_list)] = Field(
        default_factory=lambda: ["prefill"], min_length=1, description="prefill, decode, or both as a list."
    )
    dtypes: list[str] | None = Field(None, description="Storage dtypes to run (default: the experiment's dtypes).")
    acc_dtype: str | None = Field(None, description="Accumulator dtype (default int32 for integer storage, fp32 otherwise).")
    ops: list[str] | None = Field(None, description=f"Only these ops (default all: {', '.join(OP_NAMES)}).")

    @field_validator("ops")
    @classmethod
    def _ops(cls, v: list[str] | None) -> list[str] | None:
        bad = [o for o in v or [] if o not in OP_NAMES]
        if bad:
            raise ValueError(f"unknown op(s) {', '.join(bad)}; known: {', '.join(OP_NAMES)}")
        return v

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: list[str] | None) -> list[str] | None:
        bad = [d for d in v or [] if d not in DTYPE_BYTES]
        if bad:
            raise ValueError(f"unknown dtype(s) {', '.join(bad)}; known: {', '.join(DTYPE_BYTES)}")
        return v

    @model_validator(mode="after")
    def _layer(self) -> "WorkloadEntry":
        self.layer_points(self.dtypes or ["fp32"])  # raises ValueError for sizes no layer can have
        return self

    def layer_points(self, dtypes: list[str]) -> list[TransformerLayer]:
        """One TransformerLayer per (phase, batch, dtype) point, in that nesting order."""
        common = self.model_dump(include={"name", "d_model", "heads", "d_ff", "seq_len", "kv_len", "layers", "acc_dtype"})
        try:
            return [TransformerLayer(**common, phase=ph, batch=b, dtype=dt) for ph in self.phase for b in self.batch for dt in (self.dtypes or dtypes)]
        except ValidationError as err:
            raise ValueError("; ".join(e["msg"].removeprefix("Value error, ") for e in err.errors())) from None


class HostSpec(Strict):
    """Running the CPU kernels for real on this host, beside the model of the detected host machine."""

    enabled: bool = Field(True, description="Run the host cross-check when a machine named 'host' is listed.")
    warmup: int = Field(1, ge=0, description="Untimed runs first (numba compiles there).")
    repeats: int = Field(5, ge=1, description="Timed runs; the median is reported.")
    max_flops: float = Field(2.2e9, gt=0, description="Skip host runs of cases with more FLOPs than this (pure-loop kernels are slow).")


class Quick(Strict):
    """Overrides applied with --quick: small enough that every experiment runs in seconds (tests use it)."""

    machines: list[str] | None = Field(None, description="Machines to use instead.")
    kernels: list[str | KernelEntry] | None = Field(None, description="Kernels to use instead.")
    shapes: list[Shape] | None = Field(None, description="Shapes to use instead.")
    sizes: list[PositiveInt] | None = Field(None, description="Square sizes to use instead.")
    dtypes: list[str] | None = Field(None, description="Dtypes to use instead.")
    sweep: dict[str, list[Any]] | None = Field(None, description="Sweep to use instead.")
    workloads: list[WorkloadEntry] | None = Field(None, description="Workloads to use instead.")


class Experiment(Strict):
    """A whole experiment file."""

    schema_version: Literal[1] = Field(description="Version of the experiment-file schema.")
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", description="Short name; names the results folder.")
    description: str = Field("", description="What the experiment shows and which seed section it reproduces.")
    machines: list[str] = Field(min_length=1, description="Machine names or paths ('host' = this computer, detected).")
    kernels: list[str | KernelEntry] = Field(min_length=1, description="Kernels, by name or with parameters.")
    shapes: list[Shape] | None = Field(None, description="GEMM shapes.")
    sizes: list[PositiveInt] | None = Field(None, description="Square sizes N (M = N = K = N); combined with shapes.")
    workloads: list[WorkloadEntry] | None = Field(None, description="Transformer layers whose GEMMs become cases, beside any shapes.")
    dtypes: list[str] = Field(default_factory=lambda: ["fp32"], description="Element types of A, B, C.")
    sweep: dict[str, list[Any]] = Field(default_factory=dict, description="Kernel parameter -> values; cartesian product.")
    layout: LayoutSpec = Field(default_factory=LayoutSpec, description="Placement of A, B, C in memory.")
    host: HostSpec = Field(default_factory=HostSpec, description="Host cross-check settings.")
    plots: list[Plot] = Field(default_factory=list, description="Extra line plots.")
    analyses: list[Literal["miss_classes"]] = Field(
        default_factory=list,
        description="Extra analyses per case: 'miss_classes' splits each CPU cache level's misses by operand (A, B, C) "
        "and by cause (compulsory, capacity, conflict) -- a second pass over the trace.",
    )
    headline: Headline | None = Field(None, description="The lesson: columns the table shows first, figures and verdict the report leads with.")
    quick: Quick | None = Field(None, description="Overrides for --quick.")

    @field_validator("dtypes")
    @classmethod
    def _dtypes(cls, v: list[str]) -> list[str]:
        bad = [d for d in v if d not in DTYPE_BYTES]
        if bad:
            raise ValueError(f"unknown dtype(s) {', '.join(bad)}; known: {', '.join(DTYPE_BYTES)}")
        return v

    @field_validator("workloads")
    @classmethod
    def _workload_names(cls, v: list[WorkloadEntry] | None) -> list[WorkloadEntry] | None:
        names = [w.name for w in v or []]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate workload name(s) {', '.join(dup)}")
        return v

    def kernel_entries(self) -> list[KernelEntry]:
        """Kernels as entries (a bare name becomes an entry without parameters)."""
        return [k if isinstance(k, KernelEntry) else KernelEntry(name=k) for k in self.kernels]

    def shape_list(self) -> list[Shape | None]:
        """Shapes, then square sizes; [None] when the experiment has neither (pattern kernels)."""
        out: list[Shape | None] = list(self.shapes or [])
        out += [Shape(M=n, N=n, K=n) for n in self.sizes or []]
        return out or [None]

    def quickened(self) -> "Experiment":
        """The experiment with its quick overrides applied."""
        if self.quick is None:
            return self
        upd = {k: v for k, v in self.quick.model_dump(exclude_none=True).items()}
        if "sizes" in upd and "shapes" not in upd:
            upd["shapes"] = None
        if "shapes" in upd and "sizes" not in upd:
            upd["sizes"] = None
        data = self.model_dump(exclude={"quick"})
        data.update(upd)
        return Experiment.model_validate(data)


@dataclass
class Plan:
    """A validated experiment: the file, its loaded machines, and the cases to run."""

    experiment: Experiment
    source: str
    machines: dict[str, Any]
    cases: list[Case]
    skipped: list[str]


def load_experiment(path: str | os.PathLike) -> Experiment:
    """Read and schema-check an experiment file (ExperimentError names the file and every bad field)."""
    p = Path(path)
    if not p.is_file():
        raise ExperimentError(f"no such experiment file: {p}")
    data = read_yaml(p, ExperimentError)
    if not isinstance(data, dict):
        raise ExperimentError("an experiment file must be a mapping of fields", source=str(p))
    try:
        return Experiment.model_validate(data)
    except ValidationError as err:
        raise ExperimentError("invalid experiment file", source=str(p), problems=validation_problems(err)) from None


def _sweep_points(sweep: dict[str, list[Any]], fields: set[str]) -> list[dict[str, Any]]:
    keys = [k for k in sweep if k in fields]
    return [dict(zip(keys, vals)) for vals in itertools.product(*(sweep[k] for k in keys))]


def plan(exp: Experiment, source: str = "<experiment>", quick: bool = False, machines: dict | None = None) -> Plan:
    """Check an experiment's meaning and expand it into cases; every problem is reported at once."""
    if quick:
        exp = exp.quickened()
    problems: list[str] = []
    loaded: dict[str, Any] = dict(machines or {})
    for i, name in enumerate(exp.machines):
        if name in loaded:
            continue
        try:
            loaded[name] = load_machine(name)
        except GemmsimError as err:
            problems.append(f"machines[{i}]: {err.render()}")
    kinds = {name: m.kind for name, m in loaded.items() if name in exp.machines}
    entries = exp.kernel_entries()
    all_params: set[str] = set()
    bad_kinds: dict[tuple[int, str], str] = {}
    for i, entry in enumerate(entries):
        takers = [kind for kind in sorted(set(kinds.values())) if entry.name in kernels_for(kind)]
        if kinds and not takers:
            offered = sorted({k for kind in set(kinds.values()) for k in kernels_for(kind)})
            problems.append(
                f"kernels[{i}]: no listed machine can run kernel {entry.name!r} "
                f"(kernels for {', '.join(sorted(set(kinds.values())))}: {', '.join(offered) or 'none'})"
            )
        # a name several kinds offer (blocked on CPU and GPU) may take parameters only some of them have: the
        # entry runs where its parameters are valid and is skipped elsewhere; none valid is an error
        rejected: list[str] = []
        for kind in takers:
            model = kernels_for(kind)[entry.name]
            all_params |= set(model.model_fields)
            # with the sweep's first point: an entry may hold what only the swept values complete (a copy_trace per
            # stage count of the sweep); every point is validated when the cases are made
            first = (_sweep_points(exp.sweep, set(model.model_fields)) or [{}])[0]
            try:
                model(**{**entry.params, **first})
            except ValidationError as err:
                rejected += [f"kernels[{i}] ({entry.name} on {kind}).params.{p}" for p in validation_problems(err)]
                bad_kinds[(i, kind)] = "; ".join(validation_problems(err))
        if takers and all((i, kind) in bad_kinds for kind in takers):
            problems += rejected
    for key in exp.sweep:
        if key not in all_params:
            problems.append(f"sweep.{key}: no listed kernel has a parameter {key!r} (parameters: {', '.join(sorted(all_params)) or 'none'})")
    if problems:
        raise ExperimentError("experiment cannot run", source=source, problems=problems)

    cases: list[Case] = []
    skipped: list[str] = []
    for name in exp.machines:
        kind = kinds[name]
        table = kernels_for(kind)
        for i, entry in enumerate(entries):
            if entry.name not in table:
                skipped.append(f"{entry.name} on {name} ({kind}: no such kernel)")
                continue
            if (i, kind) in bad_kinds:
                skipped.append(f"{entry.label or entry.name} on {name} ({kind}: the parameters do not apply: {bad_kinds[(i, kind)]})")
                continue
            model = table[entry.name]
            for point in _sweep_points(exp.sweep, set(model.model_fields)):
                try:
                    params = model(**{**entry.params, **point}).model_dump(mode="json")
                except ValidationError as err:
                    raise ExperimentError(
                        f"sweep point {point} is invalid for kernel {entry.name!r}",
                        source=source,
                        problems=validation_problems(err),
                    ) from None
                shapes = exp.shape_list() if (exp.shapes or exp.sizes or not exp.workloads) else []
                for shape in shapes:
                    for dtype in exp.dtypes:
                        cases.append(
                            Case(
                                experiment=exp.name,
                                machine=name,
                                kernel=entry.name,
                                params=params,
                                M=shape.M if shape else None,
                                N=shape.N if shape else None,
                                K=shape.K if shape else None,
                                dtype=dtype,
                                layout=entry.layout_for(exp.layout),
                                quick=quick,
                                label=entry.label or "",
                                analyses=tuple(exp.analyses),
                            )
                        )
                cases += workload_cases(exp, name, entry, params, set(model.model_fields), quick)
    return Plan(exp, source, loaded, cases, skipped)


def workload_cases(exp: Experiment, machine: str, entry: KernelEntry, params: dict, fields: set[str], quick: bool = False) -> list[Case]:
    """The cases of every workload of ``exp`` for one machine and one kernel configuration.

    Each op of each (phase, batch, dtype) point becomes one Case with the op's M, N, K and the point's storage
    dtype; ``tags`` carry workload, op, count and the layer's sizes into the result row. A kernel with an
    accumulator parameter (``acc_dtype`` or ``acc``) gets the workload's accumulator unless the entry sets it.
    """
    out: list[Case] = []
    for w in exp.workloads or []:
        for layer in w.layer_points(exp.dtypes):
            p = dict(params)
            for acc_name in ACC_PARAM_NAMES:
                if acc_name in fields and acc_name not in entry.params:
                    p[acc_name] = layer.accumulate
                    break
            for op in layer.ops():
                if w.ops and op.name not in w.ops:
                    continue
                tags = {
                    "workload": w.name,
                    "phase": layer.phase,
                    "batch": layer.batch,
                    "seq_len": layer.seq_len,
                    "kv_len": layer.kv if layer.phase == "decode" else None,
                    "d_model": layer.d_model,
                    "heads": layer.heads,
                    "d_ff": layer.ffn,
                    "acc_dtype": layer.accumulate,
                    "op": op.name,
                    "count": op.count,
                    "ideal_intensity_flop_per_byte": op.ideal_intensity(layer.dtype),
                }
                out.append(
                    Case(
                        experiment=exp.name,
                        machine=machine,
                        kernel=entry.name,
                        params=p,
                        M=op.M,
                        N=op.N,
                        K=op.K,
                        dtype=layer.dtype,
                        layout=entry.layout_for(exp.layout),
                        quick=quick,
                        label=entry.label or "",
                        tags=tags,
                        analyses=tuple(exp.analyses),
                    )
                )
    return out
