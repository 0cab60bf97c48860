"""The command line, in process: every verb, every shipped experiment in quick mode, and bad input."""

import json
from pathlib import Path

import pytest

from gemmsim.cli.main import main
from gemmsim.numerics.lab import is_numerics_file

ROOT = Path(__file__).resolve().parents[2]
# kind: numerics files are not machines x kernels; tests/numerics/test_numerics_lab.py runs them
EXPERIMENTS = sorted(p for p in (ROOT / "experiments").glob("*.yaml") if not is_numerics_file(p))


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_machines_list_show_validate(capsys):
    code, out, _ = run(capsys, "machines")
    assert code == 0 and "haswell" in out and "toy" in out
    code, out, _ = run(capsys, "machines", "show", "haswell", "--json")
    d = json.loads(out)
    assert d["derived"]["sets"] == {"L1": 64, "L2": 512, "L3": 32768}
    code, out, _ = run(capsys, "machines", "validate", ROOT / "machines" / "haswell.yaml")
    assert code == 0 and "valid cpu machine 'haswell'" in out


def test_machines_detect_writes_a_valid_file(capsys, tmp_path):
    f = tmp_path / "host.yaml"
    code, out, _ = run(capsys, "machines", "detect", "--out", f)
    assert code == 0 and f.is_file()
    assert run(capsys, "machines", "validate", f)[0] == 0


def test_bad_machine_file_is_one_clear_message(capsys, tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("schema_version: 1\nkind: cpu\nname: x\ncaches: 3\n")
    code, out, err = run(capsys, "machines", "validate", f)
    assert code == 2 and str(f) in err and "Traceback" not in err and "caches" in err


def test_trace_then_simulate_reproduces_the_seed_lab(capsys, tmp_path):
    f = tmp_path / "ijk.din"
    assert run(capsys, "trace", "ijk", "--N", 8, "--out", f, "--format", "din")[0] == 0
    code, out, _ = run(capsys, "simulate", "--trace", f, "--format", "din", "--cache", "1:8:16", "--json")
    assert code == 0
    d = json.loads(out)
    (l1,) = d["levels"]
    assert l1["loads"] + l1["stores"] == 1152 and l1["load_misses"] + l1["store_misses"] == 624
    assert set(d) == {"levels", "memory", "tlbs", "miss_classes"}
    # one set of 8 ways is fully associative: no miss can be a conflict miss
    (mc,) = d["miss_classes"]
    assert mc["total"]["misses"] == 624 and mc["total"]["conflict"] == 0
    assert set(l1) >= {"name", "loads", "stores", "load_hits", "load_misses", "store_hits", "store_misses", "writebacks", "evictions", "dirty_at_end"}


def test_simulate_with_a_machine_and_lackey(capsys, tmp_path):
    f = tmp_path / "t.lackey"
    f.write_text("I  04000000,3\n L 00001000,4\n S 00001000,4\n M 00002000,8\n")
    code, out, _ = run(capsys, "simulate", "--trace", f, "--format", "lackey", "--machine", "haswell", "--json")
    assert code == 0
    l1 = json.loads(out)["levels"][0]
    assert (l1["loads"], l1["stores"], l1["load_misses"]) == (2, 2, 2)


def test_malformed_trace_names_the_line(capsys, tmp_path):
    f = tmp_path / "bad.din"
    f.write_text("0 1000\n1 2000\n0 zz\n")
    code, _, err = run(capsys, "simulate", "--trace", f, "--cache", "64:8:64")
    assert code == 2 and f"{f}" in err and "3" in err and "Traceback" not in err


def test_bad_cache_spec_and_unknown_kernel(capsys, tmp_path):
    f = tmp_path / "t.din"
    f.write_text("0 1000\n")
    code, _, err = run(capsys, "simulate", "--trace", f, "--cache", "64:8")
    assert code == 2 and "--cache" in err
    code, _, err = run(capsys, "trace", "nosuch", "--out", tmp_path / "x.din")
    assert code == 2 and "unknown kernel 'nosuch'" in err


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_experiment_runs_quick(capsys, tmp_path, path):
    out_dir = tmp_path / "res"
    code, out, err = run(capsys, "run", path, "--quick", "--out", out_dir, "--jobs", "1", "--quiet")
    assert code == 0, err
    for f in ("experiment.yaml", "results.csv", "results.json"):
        assert (out_dir / f).is_file()
    rows = json.loads((out_dir / "results.json").read_text())["rows"]
    assert rows and all("time_s" in r and "bound" in r for r in rows)
    assert list((out_dir / "figures").glob("*.png"))


def test_run_with_bad_experiment_writes_nothing(capsys, tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("schema_version: 1\nname: e\nmachines: [haswell]\nkernels: [nosuch]\n")
    out_dir = tmp_path / "res"
    code, _, err = run(capsys, "run", f, "--out", out_dir)
    assert code == 2 and "nosuch" in err and str(f) in err
    assert not out_dir.exists() and not list(tmp_path.glob("res*"))
