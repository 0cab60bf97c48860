"""`gemmsim simulate`: the readable summary with the 3C split, --by-array from the ranges `trace` saves, --json."""

from __future__ import annotations

import json
import subprocess
import sys


def _gemmsim(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gemmsim", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_trace_saves_operand_ranges_and_simulate_splits_misses_by_array_and_cause(tmp_path):
    t = _gemmsim("trace", "jki", "--N", "32", "--out", "t.xdin", cwd=tmp_path)
    assert t.returncode == 0, t.stderr
    side = json.loads((tmp_path / "t.xdin.operands.json").read_text())
    assert [o["name"] for o in side["operands"]] == ["A", "B", "C"]
    assert side["operands"][1]["start"] == 32 * 32 * 4  # B follows A

    r = _gemmsim("simulate", "--trace", "t.xdin", "--cache", "16:2:64", "--by-array", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["level", "accesses", "misses", "miss"] and "conflict" in lines[0]
    ops = [ln.split()[0] for ln in lines if ln.startswith("  ")]
    assert ops == ["A", "B", "C"]

    j = _gemmsim("simulate", "--trace", "t.xdin", "--cache", "16:2:64", "--json", cwd=tmp_path)
    data = json.loads(j.stdout)
    lv, mc = data["levels"][0], data["miss_classes"][0]
    misses = lv["load_misses"] + lv["store_misses"]
    assert mc["total"]["misses"] == misses == mc["total"]["compulsory"] + mc["total"]["capacity"] + mc["total"]["conflict"]
    assert sum(c["misses"] for c in mc["by_operand"].values()) == misses


def test_by_array_without_ranges_is_a_clear_error(tmp_path):
    (tmp_path / "t.din").write_text("0 100\n1 200\n")
    r = _gemmsim("simulate", "--trace", "t.din", "--cache", "16:2:64", "--by-array", cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" not in r.stderr and "--operand" in r.stderr
    ok = _gemmsim("simulate", "--trace", "t.din", "--cache", "16:2:64", "--by-array", "--operand", "X=0x0:0x180", cwd=tmp_path)  # din addresses are hexadecimal
    assert ok.returncode == 0 and "  X " in ok.stdout and "  other" in ok.stdout
    bad = _gemmsim("simulate", "--trace", "t.din", "--cache", "16:2:64", "--operand", "X=zz:1", cwd=tmp_path)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "X=zz:1" in bad.stderr


def test_no_split_for_a_policy_it_cannot_classify(tmp_path):
    (tmp_path / "t.din").write_text("0 100\n0 200\n")
    r = _gemmsim("simulate", "--trace", "t.din", "--cache", "16:2:64:fifo", cwd=tmp_path)
    assert r.returncode == 0 and "no 3C split" in r.stdout
