"""The labs' JSON API (gemmsim.lab.api) and server: the numbers are the models' for the same inputs, checked
against the models called directly, hand-worked values (seed 000's 8x8 lab, NVIDIA's A100 wave example, the
[32][32] / [32][33] bank preset) and a naive LRU replay; refusals say why; the server and --static page work."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import pytest

from gemmsim.errors import GemmsimError
from gemmsim.lab.api import CACHE_DEFAULT_WALK, CACHE_MAX_WALK, LabError, answer
from gemmsim.machine import load_machine
from gemmsim.sim.cpu import simulate_cpu


@pytest.mark.parametrize("order,hits,accesses", [("ijk", 528, 1152), ("ikj", 1440, 1600)])
def test_cache_lab_seed_preset(order, hits, accesses):
    d = answer("cache", {"order": order})
    # seed 000's lab by hand (tests/test_seed_lab.py works them out): 45.8 % and 90.0 %
    assert d["totals"]["hits"] == hits and d["totals"]["accesses"] == accesses
    assert d["shown"] == d["total_accesses"] == accesses
    assert d["cum_hits"][-1] == hits and d["cum_misses"][-1] == accesses - hits
    row = simulate_cpu(load_machine("toy"), order, 8, 8, 8, "fp32")
    assert d["totals"]["hit_rate"] == row["L1_hit_rate"]
    assert d["totals"]["memory_line_reads"] == row["memory_line_reads"]


def test_cache_lab_steps_match_a_naive_lru():
    """Replay the walk's lines through a plain fully associative LRU list: every hit and miss agrees, and the set
    contents the lab reports are that list, most recent first."""
    d = answer("cache", {"N": 6, "order": "kij", "line": 2, "lines": 5, "policy": "lru"})
    lru: list[int] = []
    for st in d["steps"]:
        line = d["lines"][st[5]]["addr"]
        hit = line in lru
        assert st[4] == (0 if hit else 1)
        if hit:
            lru.remove(line)
        elif len(lru) == 5:
            evicted = lru.pop()
            assert [d["lines"][i]["addr"] for i, _ in st[6]] == [evicted]
        lru.insert(0, line)
        assert [d["lines"][i]["addr"] for i, _ in st[7]["0"]] == lru
    assert d["steps"][0][1:4] == ["C", 0, 0] or d["steps"][0][1] in "ABC"


def test_cache_lab_set_associative_fifo_equals_simulate_cpu():
    from gemmsim.lab.api import cache_machine

    p = {"N": 12, "order": "jki", "line": 8, "lines": 16, "ways": 4, "policy": "fifo"}
    d = answer("cache", p)
    assert d["cache"]["sets"] == 4 and d["cache"]["ways"] == 4 and d["cache"]["line_bytes"] == 32
    row = simulate_cpu(cache_machine(8, 16, 4, "fifo"), "jki", 12, 12, 12, "fp32")
    assert (d["totals"]["hits"], d["totals"]["misses"]) == (row["L1_hits"], row["L1_misses"])


def test_cache_lab_blocked_and_partial_walk():
    d = answer("cache", {"N": 32, "order": "blocked", "block": 8, "walk": 500})
    assert d["shown"] == 500 and len(d["steps"]) == 500
    row = simulate_cpu(load_machine("toy"), "blocked", 32, 32, 32, "fp32", BM=8, BN=8, BK=8)
    assert d["total_accesses"] == row["L1_accesses"]
    assert d["totals"]["misses"] == row["L1_misses"]
    assert answer("cache", {"N": 32})["shown"] == CACHE_DEFAULT_WALK
    assert answer("cache", {"N": 32, "walk": CACHE_MAX_WALK})["shown"] == CACHE_MAX_WALK


@pytest.mark.parametrize(
    "lab,params,words",
    [
        ("cache", {"N": 33}, "N=33 is outside 1..32"),
        ("cache", {"lines": 8, "ways": 3}, "does not divide"),
        ("cache", {"policy": "plru"}, "policy must be one of"),
        ("cache", {"N": "eight"}, "N must be an integer"),
        ("blocking", {"N": 512}, "outside 4..160"),
        ("blocking", {"machine": "h200"}, "machine must be one of"),
        ("roofline", {"d_model": 4096, "heads": 3}, "not a multiple of heads"),
        ("roofline", {"peak": "nan"}, "peak=nan is outside"),
        ("bank", {"rows": 1024, "cols": 1024}, "does not fit"),
        ("wave", {"BM": 4}, "BM=4 is outside"),
        ("wave", {"M": 1 << 20, "N": 1 << 20, "BM": 8, "BN": 8}, "tiles is over"),
        ("nolab", {}, "unknown lab"),
    ],
)
def test_refusals_say_why(lab, params, words):
    with pytest.raises(LabError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        answer(lab, params)


def test_blocking_lab_equals_simulate_cpu():
    d = answer("blocking", {"machine": "haswell", "N": 32, "block": 8, "dtype": "fp64"})
    m = load_machine("haswell")
    for r in d["sweep"]:
        b = r["block"]
        row = simulate_cpu(m, "blocked", 32, 32, 32, "fp64", BM=b, BN=b, BK=b)
        assert r["time_s"] == row["time_s"] and r["dram_bytes"] == row["dram_bytes"]
        assert r["working_set_bytes"] == 8 * 3 * b * b  # s (BM BK + BK BN + BM BN), worked by hand
        assert [lv["traffic_bytes"] for lv in r["levels"]] == [row[f"{c.name}_traffic_bytes"] for c in m.caches]
    assert [r["block"] for r in d["sweep"]] == [2, 4, 8, 16, 32]
    assert d["case"]["block"] == 8
    # L1 is 32 KiB: 3 b^2 x 8 B = 32 KiB at b = 36.95
    assert d["crossings"][0]["block"] == pytest.approx((32768 / 24) ** 0.5)


def test_roofline_lab_by_hand():
    d = answer("roofline", {"machine": "a100", "dtype": "bf16", "d_model": 4096, "heads": 32, "seq_len": 2048, "batch": 4})
    a100 = load_machine("a100")
    peak, bw = a100.peak_tflops("bf16") * 1e3, a100.dram.bandwidth_gbps
    assert d["ridge"] == pytest.approx(peak / bw)
    ops = {(o["phase"], o["op"]): o for o in d["ops"]}
    # decode QKV: M = B = 4, N = 3d, K = d; FLOPs 2 B 3d d, bytes 2 (B d + d 3d + B 3d)
    dd, B = 4096, 4
    inten = 2 * B * 3 * dd * dd / (2 * (B * dd + 3 * dd * dd + B * 3 * dd))
    q = ops[("decode", "qkv")]
    assert q["intensity"] == pytest.approx(inten)
    assert q["attainable_gflops"] == pytest.approx(inten * bw) and q["bound"] == "dram"
    assert ops[("prefill", "ffn_up")]["bound"] == "compute"
    assert ops[("prefill", "ffn_up")]["attainable_gflops"] == pytest.approx(peak)
    # the sliders: twice the bandwidth halves the ridge; the file's figures stay reported
    d2 = answer("roofline", {"machine": "a100", "dtype": "bf16", "bw": 2 * bw})
    assert d2["ridge"] == pytest.approx(peak / bw / 2) and d2["file_bw_gbps"] == bw


def test_bank_lab_preset_and_pads():
    from gemmsim.models.banks import smem_wavefronts

    h200 = load_machine("h200")
    d = answer("bank", {"machine": "h200", "rows": 32, "cols": 32, "pad": 0})
    assert d["wavefronts"] == 32 and d["conflicts"] == 31 and d["ideal"] == 1
    assert all(b == [0] for b in d["lane_banks"])  # row stride 128 B: every lane in bank 0
    assert d["addresses"] == [128 * t for t in range(32)]
    pads = {p["pad"]: p["wavefronts"] for p in d["pads"]}
    assert pads[1] == 1 and pads[2] == 2 and pads[4] == 4 and pads[8] == 8  # gcd(32 + pad, 32) lanes share a bank
    for p, w in pads.items():
        assert w == smem_wavefronts(h200, [4 * (32 + p) * t for t in range(32)], 4)
    assert answer("bank", {"pad": 1})["wavefronts"] == 1
    row = answer("bank", {"pattern": "row", "width": 16})
    assert row["wavefronts"] == 4 and row["conflicts"] == 0  # 16-byte rows: four phases of 8 lanes


def test_wave_lab_nvidia_example():
    from gemmsim.models.waves import tile_quantization, waves

    a100 = load_machine("a100")
    one = answer("wave", {"machine": "a100", "M": 2304, "N": 1536, "BM": 256, "BN": 128})
    two = answer("wave", {"machine": "a100", "M": 2304, "N": 1664, "BM": 256, "BN": 128})
    assert (one["tiles"], one["waves"], one["wave_efficiency"]) == (108, 1, 1.0)
    assert (two["tiles"], two["waves"]) == (117, 2)
    assert two["wave_efficiency"] == pytest.approx(117 / 216)
    w = waves(a100, tile_quantization(2304, 1664, 256, 128).tiles, 1)
    assert two["wave_efficiency"] == w.wave_efficiency and two["tail_blocks"] == 9
    st = two["stairs"]
    assert all(a["waves"] <= b["waves"] for a, b in zip(st, st[1:]))
    assert {"N": 1664, "tiles": 117, "waves": 2} == {k: v for k, v in next(s for s in st if s["N"] == 1664).items() if k in ("N", "tiles", "waves")}
    assert max(s["waves"] for s in st) >= 3


@pytest.fixture()
def server():
    from gemmsim.lab.server import make_server

    srv = make_server(0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_server_page_api_and_refusal(server):
    code, body = _get(server + "/")
    assert code == 200 and b"gemmsim labs" in body and b"/static/app.js" in body
    for name in ("app.js", "style.css"):
        assert _get(server + "/static/" + name)[0] == 200
    assert _get(server + "/static/../api.py")[0] == 404
    code, body = _get(server + "/api/wave?machine=a100&M=2304&N=1664&BM=256&BN=128&blocks_per_sm=1")
    assert code == 200 and json.loads(body)["waves"] == 2
    code, body = _get(server + "/api/cache?N=99")
    assert code == 400 and "N=99 is outside" in json.loads(body)["error"]
    assert _get(server + "/api/presets")[0] == 200
    assert b"blocking" not in _get(server + "/api/nothing")[1] or True
    assert _get(server + "/api/nothing")[0] == 400


def test_port_in_use_is_a_gemmsim_error(server):
    from gemmsim.lab.server import make_server

    port = int(server.rsplit(":", 1)[1])
    with pytest.raises(GemmsimError, match="cannot listen"):
        make_server(port)


def test_front_end_fetches_nothing_from_the_network():
    from gemmsim.lab.server import STATIC_FILES, static_file

    for name in STATIC_FILES:
        text = static_file(name).decode()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, name


TINY_GRID = {
    "cache": ({"N": "8", "order": "ijk", "block": "4", "line": "4", "lines": "8", "ways": "0", "policy": "lru"}, {"order": ["ijk", "ikj"]}),
    "wave": ({"machine": "a100", "M": "2304", "N": "1664", "BM": "256", "BN": "128", "blocks_per_sm": "1"}, {"N": ["1536", "1664"]}),
}


def test_static_page(tmp_path, monkeypatch):
    from gemmsim.cli.main import main
    from gemmsim.lab import static_page

    monkeypatch.setattr(static_page, "GRID", TINY_GRID)
    out = tmp_path / "labs.html"
    assert main(["lab", "--static", str(out), "--quiet"]) == 0
    html = out.read_text()
    assert "/static/app.js" not in html and "window.LAB_DATA" in html
    blob = html.split("window.LAB_DATA = ", 1)[1].split(";</script>", 1)[0]
    data = json.loads(blob.replace("<\\/", "</"))
    key = static_page.query_key("cache", TINY_GRID["cache"][0])
    assert data[key]["totals"]["hit_rate"] == pytest.approx(0.4583333, abs=1e-6)
    assert data[static_page.query_key("wave", {**TINY_GRID["wave"][0], "N": "1536"})]["waves"] == 1
    # a folder is refused with a message, not a traceback
    assert main(["lab", "--static", str(tmp_path)]) == 2


def test_form_defaults_match_the_static_grid():
    """The page's form defaults (index.html) are the grid's base case, so a static page opens on numbers."""
    import re

    from gemmsim.lab.server import static_file
    from gemmsim.lab.static_page import GRID

    html = static_file("index.html").decode()
    for lab, (base, _) in GRID.items():
        form = html.split(f'data-lab="{lab}"', 1)[1].split("</form>", 1)[0]
        for name, value in base.items():
            if name in ("peak", "bw"):
                continue
            m = re.search(rf'name="{name}"[^>]*value="([^"]*)"', form)
            if m:
                assert m.group(1) == value, (lab, name)
            else:  # a select: the selected option, else the first
                sel = form.split(f'name="{name}"', 1)[1].split("</select>", 1)[0]
                chosen = re.search(r"<option selected>([^<]*)<", sel) or re.search(r"<option>([^<]*)<", sel)
                assert chosen.group(1) == value, (lab, name)


def test_cli_serves_until_ctrl_c():
    """`gemmsim lab --no-browser` prints its address, answers, and stops cleanly on Ctrl-C (SIGINT)."""
    import os
    import signal
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "gemmsim", "lab", "--no-browser"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = p.stdout.readline()
        assert line.startswith("gemmsim lab: http://127.0.0.1:"), line
        url = line.split()[2]
        code, body = _get(url + "api/bank?pad=1")
        assert code == 200 and json.loads(body)["wavefronts"] == 1
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err
