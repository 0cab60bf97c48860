"""Compare gemmsim's convention="scalesim" with SCALE-Sim's stored reports; print Markdown tables (README.md).

    python validation/scalesim/compare.py > /tmp/tables.md

Runs in gemmsim's environment (SCALE-Sim not needed): reads outputs.json written by run_scalesim.py.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from gemmsim import load_machine, simulate_systolic

HERE = Path(__file__).resolve().parent
FIELDS = ("total_cycles", "stall_cycles", "sram_A_reads", "sram_B_reads", "sram_C_writes", "dram_A_reads", "dram_B_reads",
          "dram_C_writes", "mapping_eff_pct", "compute_util_pct", "overall_util_pct")


def pair(rec, machine):
    """SCALE-Sim's numbers and gemmsim's for one stored layer, field by field."""
    r = simulate_systolic(machine, M=rec["M"], N=rec["N"], K=rec["K"], dataflow=rec["dataflow"], convention="scalesim",
                          rows=rec["rows"], cols=rec["cols"], ifmap_sram=rec["ifmap_kib"] * 1024,
                          filter_sram=rec["filter_kib"] * 1024, ofmap_sram=rec["ofmap_kib"] * 1024)
    w = r.extras["dram_words"]
    ours = dict(total_cycles=r.total_cycles, stall_cycles=r.stall_cycles, sram_A_reads=r.sram_reads["A"], sram_B_reads=r.sram_reads["B"],
                sram_C_writes=r.extras["scalesim_ofmap_writes_reported"], dram_A_reads=w["A"], dram_B_reads=w["B"], dram_C_writes=w["C"],
                mapping_eff_pct=100 * r.mapping_efficiency, compute_util_pct=100 * r.extras["scalesim_compute_util"],
                overall_util_pct=100 * r.extras["scalesim_overall_util"], compute_cycles=r.compute_cycles, sram_C_true=r.sram_writes["C"])
    theirs = dict(total_cycles=rec["total_cycles"], stall_cycles=rec["stall_cycles"], sram_A_reads=rec["sram_ifmap_reads"],
                  sram_B_reads=rec["sram_filter_reads"], sram_C_writes=rec["sram_ofmap_writes"], dram_A_reads=rec["dram_ifmap_reads"],
                  dram_B_reads=rec["dram_filter_reads"], dram_C_writes=rec["dram_ofmap_writes"], mapping_eff_pct=rec["mapping_efficiency_pct"],
                  compute_util_pct=rec["compute_util_pct"], overall_util_pct=rec["overall_util_pct"])
    return ours, theirs


def same(a, b) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def main() -> int:
    records = json.loads((HERE / "outputs.json").read_text())["records"]
    machine = load_machine("systolic_4")
    groups = defaultdict(lambda: [0, defaultdict(int)])
    detail, user = [], []
    for rec in records:
        ours, theirs = pair(rec, machine)
        key = (rec["mode"], f"{rec['rows']}x{rec['cols']}", rec["dataflow"])
        groups[key][0] += 1
        for f in FIELDS:
            if not same(ours[f], theirs[f]):
                groups[key][1][f] += 1
        if rec["mode"] == "CALC" and (rec["rows"] == 256 or (rec["rows"], rec["M"]) in ((4, 64), (32, 512))):
            detail.append((rec, ours, theirs))
        if rec["mode"] == "USER" and rec["M"] in (64, 100):
            user.append((rec, ours, theirs))

    print("| mode | array | dataflow | layers | fields equal (of 11) | fields that differ (layers) |")
    print("|---|---|---|---|---|---|")
    for (mode, arr, df), (n, bad) in sorted(groups.items()):
        diff = ", ".join(f"{f} ({c})" for f, c in sorted(bad.items())) or "-"
        print(f"| {mode} | {arr} | {df} | {n} | {len(FIELDS) - len(bad)} | {diff} |")
    print()
    print("| array | df | SRAM KiB | M x N x K | total cycles (SCALE-Sim = gemmsim) | SRAM reads A / B, writes C | DRAM A / B / C words | overall util % |")
    print("|---|---|---|---|---|---|---|---|")
    for rec, o, t in detail:
        ok = all(same(o[f], t[f]) for f in FIELDS)
        print(f"| {rec['rows']}x{rec['cols']} | {rec['dataflow']} | {rec['ifmap_kib']}/{rec['filter_kib']}/{rec['ofmap_kib']} | "
              f"{rec['M']}x{rec['N']}x{rec['K']} | {int(t['total_cycles'])} {'=' if ok else '!='} {o['total_cycles']} | "
              f"{int(t['sram_A_reads'])} / {int(t['sram_B_reads'])}, {int(t['sram_C_writes'])} | "
              f"{int(t['dram_A_reads'])} / {int(t['dram_B_reads'])} / {int(t['dram_C_writes'])} | {t['overall_util_pct']:.2f} |")
    print()
    print("| USER mode, 8x8 | df | SRAM KiB | M x N x K | SCALE-Sim total | its stalls | total - stalls | gemmsim compute cycles | DRAM A reads theirs / ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rec, o, t in user:
        print(f"| | {rec['dataflow']} | {rec['ifmap_kib']} | {rec['M']}x{rec['N']}x{rec['K']} | {int(t['total_cycles'])} | "
              f"{int(t['stall_cycles'])} | {int(t['total_cycles'] - t['stall_cycles'])} | {o['compute_cycles']} | "
              f"{int(t['dram_A_reads'])} / {o['dram_A_reads']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
