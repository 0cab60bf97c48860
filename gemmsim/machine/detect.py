"""``machines detect``: a CPU machine file for this host, from what the kernel tells.

Read: cache levels (size, ways, line, sets, sharing) from /sys/devices/system/cpu/cpu0/cache, SIMD width and
FMA from the CPU flags, cores and clock from lscpu and /proc/cpuinfo. Not readable there, so estimated and listed
in the file's ``estimated`` field: latencies, bandwidths, FMA unit count, TLB geometry (except the L2 TLB size some
AMD kernels print), DRAM bandwidth and latency.

With ``measure=True`` (``machines detect --measure``) the microbenchmarks of ``gemmsim.machine.measure`` replace the
estimates of the clock, every cache level's latency and bandwidth, DRAM's bandwidth and latency, the FMA units,
the FMA latency and the miss parallelism; each measured field leaves ``estimated`` and gets a line in ``sources``
saying how it was measured. TLB geometry and penalties stay estimated.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

import yaml

from gemmsim.errors import MachineFileError

SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")

# Generic estimates for what the kernel does not report (typical of recent x86 and Arm server cores).
_LATENCY = {1: 4, 2: 14, 3: 45}
_BANDWIDTH = {1: 64, 2: 32, 3: 16}


def _read(p: Path) -> str:
    try:
        return p.read_text().strip()
    except OSError:
        return ""


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text)
    if not m:
        return 0
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def read_sys_caches(root: Path = SYS_CACHE) -> list[dict]:
    """Data/unified cache levels of cpu0 from sysfs, L1 first."""
    levels = []
    for d in sorted(root.glob("index*")):
        if _read(d / "type") not in ("Data", "Unified"):
            continue
        level = int(_read(d / "level") or 0)
        size = _size(_read(d / "size"))
        ways = int(_read(d / "ways_of_associativity") or 0)
        line = int(_read(d / "coherency_line_size") or 64)
        sets = int(_read(d / "number_of_sets") or 0)
        shared = _read(d / "shared_cpu_list")
        if not (level and size and line):
            continue
        if ways <= 0 and sets:
            ways = size // (sets * line)
        if ways <= 0 or size % (ways * line):
            ways = max(1, size // (line * max(1, sets))) if sets else 1
        levels.append({"level": level, "size": size, "ways": ways, "line": line, "shared": ("-" in shared or "," in shared)})
    return sorted(levels, key=lambda x: x["level"])


def _lscpu() -> dict[str, str]:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    info = {}
    for line in out.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            info[k.strip()] = v.strip()
    return info


def _cpuinfo() -> dict[str, str]:
    info: dict[str, str] = {}
    for line in _read(Path("/proc/cpuinfo")).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            info.setdefault(k.strip(), v.strip())
    return info


def detect_dict(measure: bool = False, quick: bool = False) -> dict:
    """The detected machine as a plain dict (a valid CPU machine file); ``measure``: run the microbenchmarks
    (``apply_measured``), ``quick`` makes them short (tests)."""
    d = _detect()
    if measure:
        from gemmsim.machine.measure import measure_host

        d = apply_measured(d, measure_host([c["size"] for c in d["caches"]], d["caches"][0]["line_bytes"], clock_fallback=d["clock_ghz"], quick=quick))
    return d


def _set_path(d: dict, path: str, value) -> None:
    """Set ``caches[1].latency_cycles``-style field paths in a plain dict."""
    obj = d
    parts = path.split(".")
    for i, part in enumerate(parts):
        m = re.fullmatch(r"(\w+)((?:\[\d+\])*)", part)
        key, idx = m.group(1), [int(x) for x in re.findall(r"\[(\d+)\]", m.group(2))]
        last = i == len(parts) - 1
        if last and not idx:
            obj[key] = value
            return
        obj = obj[key]
        for j, k in enumerate(idx):
            if last and j == len(idx) - 1:
                obj[k] = value
                return
            obj = obj[k]


def apply_measured(d: dict, m) -> dict:
    """A copy of the detected dict with the measured fields of ``m`` (a ``measure.Measured``) written in, taken out of
    ``estimated`` and each named in ``sources`` with its method; the staircase is kept under ``_measured``."""
    import copy

    out = copy.deepcopy(d)
    for path, value in m.fields.items():
        _set_path(out, path, value)
    out["estimated"] = [e for e in out["estimated"] if e not in m.fields]
    out["sources"] = list(out["sources"]) + [
        f"measured on this host by gemmsim machines detect --measure ({m.seconds:.0f} s): {path} = {m.fields[path]} by {m.methods[path]}"
        for path in m.fields
    ]
    out["_measured"] = m
    return out


def _detect() -> dict:
    """The detected machine, every field not read from the system estimated."""
    ls, ci = _lscpu(), _cpuinfo()
    flags = set((ls.get("Flags") or ci.get("flags") or ci.get("Features") or "").split())
    estimated = []
    if "avx512f" in flags:
        simd = 512
    elif "avx2" in flags or "avx" in flags:
        simd = 256
    else:
        simd = 128  # SSE or NEON/ASIMD
    vregs = 32 if simd == 512 or platform.machine() in ("aarch64", "arm64") else 16
    vendor = ls.get("Vendor ID", ci.get("vendor_id", ""))
    # AMD Zen 4 executes AVX-512 on two 256-bit pipes: one 512-bit FMA per cycle.
    fma = 1 if (vendor == "AuthenticAMD" and simd == 512) else 2
    estimated.append("fma_units")
    mhz = 0.0
    for key in ("CPU max MHz", "CPU MHz"):
        try:
            mhz = float(ls.get(key, "0"))
        except ValueError:
            mhz = 0.0
        if mhz:
            break
    if not mhz:
        try:
            mhz = float(ci.get("cpu MHz", "0"))
        except ValueError:
            mhz = 0.0
    if not mhz:
        mhz = 2500.0
        estimated.append("clock_ghz")
    cores = os.cpu_count() or 1
    try:
        cores = int(ls["Core(s) per socket"]) * int(ls.get("Socket(s)", "1"))
    except (KeyError, ValueError):
        pass
    caches = []
    for i, lv in enumerate(read_sys_caches()):
        n = lv["level"]
        caches.append(
            {
                "name": f"L{n}",
                "size": lv["size"],
                "ways": lv["ways"],
                "line_bytes": lv["line"],
                "latency_cycles": _LATENCY.get(n, 60),
                "bandwidth_bytes_per_cycle": _BANDWIDTH.get(n, 8),
                "shared": lv["shared"],
            }
        )
        estimated += [f"caches[{i}].latency_cycles", f"caches[{i}].bandwidth_bytes_per_cycle"]
    if not caches:
        raise MachineFileError("cannot detect this host's caches: /sys/devices/system/cpu/cpu0/cache is missing or empty")
    stlb = 1536
    m = re.match(r"(\d+)", ci.get("TLB size", ""))
    if m:
        stlb = int(m.group(1))
    stlb -= stlb % 8
    tlbs = [
        {"name": "DTLB", "entries": 64, "ways": 4, "page": 4096, "miss_penalty_cycles": 8},
        {"name": "STLB", "entries": stlb, "ways": 8, "page": 4096, "miss_penalty_cycles": 30},
    ]
    estimated += ["tlbs[0]", "tlbs[1].ways", "tlbs[1].miss_penalty_cycles"] + ([] if m else ["tlbs[1].entries"])
    estimated += ["dram.bandwidth_gbps", "dram.latency_ns", "miss_parallelism"]
    return {
        "schema_version": 1,
        "kind": "cpu",
        "name": "host",
        "description": f"this host: {ls.get('Model name', ci.get('model name', platform.processor() or 'unknown CPU'))} (detected)",
        "sources": ["/sys/devices/system/cpu/cpu0/cache", "lscpu", "/proc/cpuinfo"],
        "estimated": estimated,
        "clock_ghz": round(mhz / 1000, 3),
        "cores": cores,
        "simd_bits": simd,
        "vector_registers": vregs,
        "fma_units": fma,
        "loads_per_cycle": 2,
        "stores_per_cycle": 1,
        "miss_parallelism": 12,
        "simd_dtypes": ["fp64", "fp32"],
        "caches": caches,
        "tlbs": tlbs,
        "dram": {"bandwidth_gbps": 20.0, "latency_ns": 90.0},
    }


def machine_yaml(machine, measured=None) -> str:
    """YAML text of a machine, with a header saying which fields are estimates (and, when ``measured`` is given,
    the latency staircase and bandwidths it measured, as comments)."""
    head = [
        "# Machine file written by `gemmsim machines detect` for this host.",
        "# Read from /sys/devices/system/cpu/cpu0/cache, lscpu and /proc/cpuinfo; the fields listed in",
        "# `estimated` could not be read there and hold generic values: measure them and edit.",
    ]
    if measured is not None:
        head[0] = "# Machine file written by `gemmsim machines detect --measure` for this host."
        head[1] = "# Read from /sys/devices/system/cpu/cpu0/cache, lscpu and /proc/cpuinfo, then measured: the fields"
        head[2] = "# named in `sources` as measured come from gemmsim.machine.measure; `estimated` lists the rest."
        head.append(f"# measured clock: {measured.clock_ghz:.3f} GHz")
        head.append("# latency staircase (working set bytes, ns per dependent load):")
        head += [f"#   staircase: {s} {ns:.2f}" for s, ns in measured.staircase]
        head.append("# streaming bandwidth (working set bytes, read B/cycle, write B/cycle):")
        head += [f"#   bandwidth: {s} {rd:.2f} {wr:.2f}" for s, rd, wr in measured.bandwidth]
    return "\n".join(head) + "\n" + yaml.safe_dump(machine.model_dump(mode="json"), sort_keys=False)


def read_measured_comments(text: str) -> dict:
    """The staircase and bandwidth lines ``machine_yaml`` wrote as comments, back as lists (empty when absent)."""
    stair = [(int(a), float(b)) for a, b in re.findall(r"^#\s+staircase: (\d+) ([\d.eE+-]+)$", text, re.M)]
    bw = [(int(a), float(b), float(c)) for a, b, c in re.findall(r"^#\s+bandwidth: (\d+) ([\d.eE+-]+) ([\d.eE+-]+)$", text, re.M)]
    clk = re.search(r"^# measured clock: ([\d.]+) GHz$", text, re.M)
    return {"staircase": stair, "bandwidth": bw, "clock_ghz": float(clk.group(1)) if clk else None}
