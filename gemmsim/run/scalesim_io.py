"""SCALE-Sim's own input files in, its report files out.

SCALE-Sim (Samajdar et al., "A Systematic Methodology for Characterizing Scalability of DNN Accelerators using
SCALE-Sim", ISPASS 2020; github.com/scalesim-project/scale-sim-v2) reads an architecture ``.cfg`` (INI sections
``[general]``, ``[architecture_presets]``, ``[run_presets]``) and a topology ``.csv`` (one layer per line), and writes
``COMPUTE_REPORT.csv``, ``BANDWIDTH_REPORT.csv`` and ``DETAILED_ACCESS_REPORT.csv``. ``run_scalesim_files`` does the
same with gemmsim's systolic model in its ``scalesim`` convention, which equals SCALE-Sim's CALC interface-bandwidth
mode in every number of the compute and access reports (validation/scalesim/README.md, 276 layers).

Topologies: the GEMM form (``Layer, M, N, K,``) and the convolution form (``Layer name, IFMAP Height, IFMAP Width,
Filter Height, Filter Width, Channels, Num Filter, Strides,``), a convolution becoming SCALE-Sim's GEMM: M = output
pixels ((H - Fh) // S + 1) x ((W - Fw) // S + 1), K = Fh x Fw x Channels, N = filters.

Differences, stated in the reports' README.txt: the DRAM columns of BANDWIDTH_REPORT are words per cycle over the
layer's total cycles (SCALE-Sim divides by each operand's own DRAM start-to-stop window, which gemmsim does not
model); DETAILED_ACCESS_REPORT carries the counts (SRAM and DRAM reads and writes) but no start and stop cycles;
USER bandwidth mode is simulated as CALC (gemmsim has no model of SCALE-Sim's read-buffer prefetch stalls).
"""

from __future__ import annotations

import configparser
import csv
from dataclasses import dataclass
from pathlib import Path

from gemmsim.errors import GemmsimError

_ARCH_FIELDS = {  # cfg key (case-insensitive) -> (our name, type)
    "arrayheight": ("rows", int),
    "arraywidth": ("cols", int),
    "ifmapsramszkb": ("ifmap_kib", int),
    "filtersramszkb": ("filter_kib", int),
    "ofmapsramszkb": ("ofmap_kib", int),
    "dataflow": ("dataflow", str),
}


@dataclass(frozen=True)
class ScaleSimConfig:
    """The parts of a SCALE-Sim architecture file gemmsim uses."""

    run_name: str
    rows: int
    cols: int
    ifmap_kib: int
    filter_kib: int
    ofmap_kib: int
    dataflow: str
    mode: str


@dataclass(frozen=True)
class Layer:
    """One topology line as a GEMM."""

    name: str
    M: int
    N: int
    K: int


def read_config(path: str | Path) -> ScaleSimConfig:
    """Read a SCALE-Sim ``.cfg``; every problem names the file, section and key."""
    p = Path(path)
    cp = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    try:
        with open(p, encoding="utf-8") as f:
            cp.read_file(f)
    except OSError as exc:
        raise GemmsimError(f"{p}: cannot read the SCALE-Sim configuration ({exc.strerror or exc})") from None
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise GemmsimError(f"{p}: not a SCALE-Sim configuration file ({str(exc).splitlines()[0]})") from None
    if "architecture_presets" not in cp:
        raise GemmsimError(f"{p}: no [architecture_presets] section")
    arch = {k.lower().replace(" ", ""): v for k, v in cp["architecture_presets"].items()}
    got: dict = {}
    for key, (name, typ) in _ARCH_FIELDS.items():
        if key not in arch:
            raise GemmsimError(f"{p}: [architecture_presets] has no {key} (SCALE-Sim spells it e.g. ArrayHeight)")
        raw = arch[key].strip()
        try:
            got[name] = typ(raw)
        except ValueError:
            raise GemmsimError(f"{p}: [architecture_presets] {key} = {raw!r} is not an integer") from None
        if typ is int and got[name] < 1:
            raise GemmsimError(f"{p}: [architecture_presets] {key} must be at least 1, got {got[name]}")
    got["dataflow"] = got["dataflow"].lower()
    if got["dataflow"] not in ("ws", "os", "is"):
        raise GemmsimError(f"{p}: [architecture_presets] Dataflow must be ws, os or is, got {got['dataflow']!r}")
    run = cp["run_presets"] if "run_presets" in cp else {}
    mode = str(run.get("InterfaceBandwidth", run.get("interfacebandwidth", "CALC"))).strip().upper()
    if mode not in ("CALC", "USER"):
        raise GemmsimError(f"{p}: [run_presets] InterfaceBandwidth must be CALC or USER, got {mode!r}")
    name = cp["general"].get("run_name", p.stem).strip() if "general" in cp else p.stem
    return ScaleSimConfig(run_name=name or p.stem, mode=mode, **got)


def read_topology(path: str | Path) -> list[Layer]:
    """Read a SCALE-Sim topology ``.csv`` (GEMM or convolution form) as GEMMs; errors name the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise GemmsimError(f"{p}: cannot read the topology ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise GemmsimError(f"{p}: not UTF-8 text (byte {exc.start})") from None
    rows = [[c.strip() for c in r] for r in csv.reader(text.splitlines())]
    rows = [(i + 1, [c for c in r if c != ""]) for i, r in enumerate(rows)]
    rows = [(n, r) for n, r in rows if r]
    if not rows:
        raise GemmsimError(f"{p}: empty topology")
    (hline, header), body = rows[0], rows[1:]
    gemm = len(header) == 4
    if not gemm and len(header) < 8:
        raise GemmsimError(f"{p}:{hline}: header has {len(header)} columns; expected 'Layer, M, N, K' or the 8-column convolution form")
    layers = []
    for n, r in body:
        need = 4 if gemm else 8
        if len(r) < need:
            raise GemmsimError(f"{p}:{n}: {len(r)} fields, expected {need}")
        try:
            v = [int(x) for x in r[1:need]]
        except ValueError:
            raise GemmsimError(f"{p}:{n}: fields after the name must be integers: {', '.join(r[1:need])}") from None
        if min(v) < 1:
            raise GemmsimError(f"{p}:{n}: every size must be at least 1")
        if gemm:
            M, N, K = v
        else:
            h, w, fh, fw, ch, nf, s = v
            if fh > h or fw > w:
                raise GemmsimError(f"{p}:{n}: the filter ({fh}x{fw}) is larger than the input ({h}x{w})")
            M, K, N = ((h - fh) // s + 1) * ((w - fw) // s + 1), fh * fw * ch, nf
        layers.append(Layer(r[0], M, N, K))
    if not layers:
        raise GemmsimError(f"{p}: no layers after the header")
    return layers


COMPUTE_HEADER = "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,"
BANDWIDTH_HEADER = ("LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, "
                    "Avg FILTER DRAM BW, Avg OFMAP DRAM BW,")  # fmt: skip
DETAIL_HEADER = ("LayerID, SRAM IFMAP Reads, SRAM Filter Reads, SRAM OFMAP Writes, DRAM IFMAP Reads, "
                 "DRAM Filter Reads, DRAM OFMAP Writes,")  # fmt: skip

_README = """These reports were written by gemmsim's systolic model in its 'scalesim' convention, from SCALE-Sim's own
input files ({cfg}, {topo}). COMPUTE_REPORT.csv has SCALE-Sim's columns and, in CALC mode, its numbers. Differences:
- BANDWIDTH_REPORT.csv: the SRAM columns are SCALE-Sim's (accesses / total cycles); the DRAM columns are words per
  cycle over the layer's total cycles (SCALE-Sim divides by each operand's own DRAM start-to-stop window, not modelled).
- DETAILED_ACCESS_REPORT.csv: the access counts only, without start and stop cycles.
- os dataflow: 'SRAM OFMAP Writes' is SCALE-Sim's reported count (it adds rows + columns per fold); the true count is
  that minus folds x (rows + cols).
{mode_note}"""


def run_scalesim_files(cfg_path: str | Path, topo_path: str | Path, out_dir: str | Path, machine) -> list[dict]:
    """Simulate every layer of the topology on the configured array; write SCALE-Sim's three reports (and a
    README.txt of the differences) into ``out_dir``; return one dict per layer."""
    from gemmsim.models.systolic import simulate_systolic

    cfg, layers = read_config(cfg_path), read_topology(topo_path)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GemmsimError(f"--out {out}: cannot create the folder ({exc.strerror or exc})") from None
    results = []
    for i, L in enumerate(layers):
        r = simulate_systolic(
            machine, M=L.M, N=L.N, K=L.K, dataflow=cfg.dataflow, convention="scalesim", rows=cfg.rows, cols=cfg.cols,
            ifmap_sram=cfg.ifmap_kib * 1024, filter_sram=cfg.filter_kib * 1024, ofmap_sram=cfg.ofmap_kib * 1024,
        )  # fmt: skip
        total = r.total_cycles
        words = r.extras["dram_words"]
        ofmap_sram = r.extras.get("scalesim_ofmap_writes_reported", r.sram_writes["C"])
        results.append({
            "layer": i, "name": L.name, "M": L.M, "N": L.N, "K": L.K, "total_cycles": total, "stall_cycles": r.stall_cycles,
            "overall_util_pct": 100 * r.extras["scalesim_overall_util"], "mapping_efficiency_pct": 100 * r.mapping_efficiency,
            "compute_util_pct": 100 * r.extras["scalesim_compute_util"], "sram_ifmap_reads": r.sram_reads["A"],
            "sram_filter_reads": r.sram_reads["B"], "sram_ofmap_writes": ofmap_sram, "dram_ifmap_reads": words["A"],
            "dram_filter_reads": words["B"], "dram_ofmap_writes": words["C"],
        })  # fmt: skip

    def write(name: str, header: str, keys: list[str], per_cycle: bool = False) -> None:
        lines = [header]
        for res in results:
            vals = [res[k] / res["total_cycles"] if per_cycle else res[k] for k in keys]
            lines.append(", ".join([str(res["layer"]), *(f"{v}" for v in vals)]) + ",")
        (out / name).write_text("\n".join(lines) + "\n")

    write("COMPUTE_REPORT.csv", COMPUTE_HEADER, ["total_cycles", "stall_cycles", "overall_util_pct", "mapping_efficiency_pct", "compute_util_pct"])
    write("BANDWIDTH_REPORT.csv", BANDWIDTH_HEADER, ["sram_ifmap_reads", "sram_filter_reads", "sram_ofmap_writes",
                                                     "dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes"], per_cycle=True)  # fmt: skip
    write("DETAILED_ACCESS_REPORT.csv", DETAIL_HEADER, ["sram_ifmap_reads", "sram_filter_reads", "sram_ofmap_writes",
                                                        "dram_ifmap_reads", "dram_filter_reads", "dram_ofmap_writes"])  # fmt: skip
    note = ("- This configuration asks for USER interface bandwidth; it was simulated as CALC (no read-buffer stalls).\n"
            if cfg.mode == "USER" else "")  # fmt: skip
    (out / "README.txt").write_text(_README.format(cfg=cfg_path, topo=topo_path, mode_note=note))
    return results
