"""The labs in a real browser: headless Chromium (Debian's chromium + chromium-driver) driven by selenium.

Loads each lab from a live ``gemmsim lab`` server, sets controls as a student would (preset buttons, menus, the
player's buttons), and checks that the numbers the page shows equal the models' for the same inputs, computed here
by calling the models directly (not through the lab's API). The cache lab's step-through must reach the seed's
45.8 % (ijk) and 90.0 % (ikj). Screenshots of each lab go to $GEMMSIM_LAB_SHOTS when set (else a temporary folder).
Skipped when chromium, chromedriver or selenium is missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver")


@pytest.fixture(scope="module")
def lab_url():
    from gemmsim.lab.server import make_server, warm_up

    warm_up()
    srv = make_server(0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/"
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="gemmsim-lab-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def shots():
    d = Path(os.environ.get("GEMMSIM_LAB_SHOTS") or tempfile.mkdtemp(prefix="gemmsim-lab-shots-"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _ticket(drv, lab: str) -> int:
    return int(drv.execute_script(f"return document.getElementById('lab-{lab}').dataset.ready || '0'") or 0)


def _wait(drv, lab: str, after: int, timeout: float = 20.0) -> None:
    """Wait until the lab has rendered an answer newer than ticket ``after``; fail on an error message."""
    end = time.time() + timeout
    while time.time() < end:
        if _ticket(drv, lab) > after:
            err = drv.find_element("id", f"{lab}-error").text
            assert not err, f"{lab} lab shows an error: {err}"
            return
        time.sleep(0.05)
    raise AssertionError(f"{lab} lab did not answer within {timeout} s")


def _open(drv, url: str, lab: str) -> None:
    drv.get(url + "#" + lab)
    _wait(drv, lab, 0)


def _set(drv, lab: str, **values) -> None:
    """Set form controls and fire the form's change event (what picking a value does); wait for the answer."""
    before = _ticket(drv, lab)
    drv.execute_script(
        "const f = document.querySelector(`form[data-lab='${arguments[0]}']`);"
        "for (const [k, v] of Object.entries(arguments[1])) f.elements[k].value = String(v);"
        "f.dispatchEvent(new Event('change'));", lab, {k: str(v) for k, v in values.items()})
    _wait(drv, lab, before)


def _click(drv, lab: str, css: str) -> None:
    before = _ticket(drv, lab)
    drv.find_element("css selector", css).click()
    _wait(drv, lab, before)


def _value(drv, el_id: str) -> float:
    return float(drv.find_element("id", el_id).get_attribute("data-value"))


def _text(drv, el_id: str) -> str:
    return drv.find_element("id", el_id).text


def test_labs_in_chromium(browser, lab_url, shots):
    from gemmsim.machine import load_machine
    from gemmsim.models.banks import smem_wavefronts
    from gemmsim.models.waves import tile_quantization, waves
    from gemmsim.sim.cpu import simulate_cpu

    drv = browser
    # 1. cache: the seed preset walked to the end gives 45.8 % (ijk) and 90.0 % (ikj)
    _open(drv, lab_url, "cache")
    toy = load_machine("toy")
    for order, want in (("ikj", "90.0 %"), ("ijk", "45.8 %")):
        _click(drv, "cache", f"button[data-preset*='\"{order}\"']")
        assert _text(drv, "cache-stepno") == "1"
        for _ in range(3):
            drv.find_element("id", "cache-next").click()
        assert _text(drv, "cache-stepno") == "4"
        drv.find_element("id", "cache-last").click()
        row = simulate_cpu(toy, order, 8, 8, 8, "fp32")
        assert _value(drv, "cache-stepno") == row["L1_accesses"]
        assert _text(drv, "cache-running") == want == f"{100 * row['L1_hit_rate']:.1f} %"
        assert _value(drv, "cache-running") == pytest.approx(row["L1_hit_rate"], abs=1e-12)
        assert _value(drv, "cache-misses") == row["L1_misses"]
        assert _text(drv, "cache-total") == want
    drv.find_element("id", "cache-first").click()
    drv.find_element("id", "cache-play").click()  # play moves on by itself; pause stops it
    time.sleep(0.5)
    drv.find_element("id", "cache-play").click()
    played = int(_text(drv, "cache-stepno"))
    assert played > 1
    time.sleep(0.2)
    assert int(_text(drv, "cache-stepno")) == played
    drv.execute_script("const s = document.getElementById('cache-scrub'); s.value = 129; s.dispatchEvent(new Event('input'));")
    assert _text(drv, "cache-stepno") == "130"
    drv.save_screenshot(str(shots / "lab_cache.png"))

    # 2. blocking: the shown time, DRAM bytes and hit rates are simulate_cpu's
    drv.find_element("css selector", "button[data-tab=blocking]").click()
    _wait(drv, "blocking", 0)
    _set(drv, "blocking", machine="haswell", N=64, block=16, dtype="fp32")
    row = simulate_cpu(load_machine("haswell"), "blocked", 64, 64, 64, "fp32", BM=16, BN=16, BK=16)
    assert _value(drv, "blk-time") == pytest.approx(row["time_s"], rel=1e-12)
    assert _value(drv, "blk-dram") == row["dram_bytes"]
    assert _value(drv, "blk-ws") == row["working_set_bytes"]
    l1 = drv.find_element("css selector", "#blk-levels tr[data-level=L1] td:nth-child(4)")
    assert float(l1.get_attribute("data-value")) == pytest.approx(row["L1_hit_rate"], abs=1e-12)
    assert l1.text == f"{100 * row['L1_hit_rate']:.1f} %"
    for b in (2, 4, 8, 32, 64):  # the sweep's modelled times
        td = drv.find_element("css selector", f"#blk-sweep tr[data-block='{b}'] td:nth-child(5)")
        want = simulate_cpu(load_machine("haswell"), "blocked", 64, 64, 64, "fp32", BM=b, BN=b, BK=b)["time_s"]
        assert float(td.get_attribute("data-value")) == pytest.approx(want, rel=1e-12)
    drv.save_screenshot(str(shots / "lab_blocking.png"))

    # 3. roofline: the ridge is the file's peak over its bandwidth; every GEMM sits at min(peak, I x bandwidth)
    from gemmsim.analytic.workload import TransformerLayer

    drv.find_element("css selector", "button[data-tab=roofline]").click()
    _wait(drv, "roofline", 0)
    _set(drv, "roofline", machine="a100", dtype="bf16", batch=8)
    a100 = load_machine("a100")
    peak, bw = a100.peak_tflops("bf16") * 1e3, a100.dram.bandwidth_gbps
    assert _value(drv, "roof-ridge") == pytest.approx(peak / bw, rel=1e-12)
    for phase in ("prefill", "decode"):
        layer = TransformerLayer(d_model=4096, heads=32, seq_len=2048, kv_len=2048, batch=8, phase=phase, dtype="bf16")
        for op in layer.ops():
            tds = drv.find_elements("css selector", f"#roof-ops tr[data-op='{phase}/{op.name}'] td")
            inten = op.flops / op.min_bytes("bf16")
            assert float(tds[3].get_attribute("data-value")) == pytest.approx(inten, rel=1e-12)
            assert float(tds[4].get_attribute("data-value")) == pytest.approx(min(peak, inten * bw), rel=1e-12)
            assert tds[5].text == ("compute" if inten * bw >= peak else "dram")
    # the bandwidth slider halves the bandwidth: the ridge doubles
    _set(drv, "roofline", bw_s=-1)
    assert _value(drv, "roof-ridge") == pytest.approx(2 * peak / bw, rel=1e-12)
    drv.save_screenshot(str(shots / "lab_roofline.png"))

    # 4. banks: a column of [32][32] floats needs 32 wavefronts, of [32][33] one
    drv.find_element("css selector", "button[data-tab=bank]").click()
    _wait(drv, "bank", 0)
    h200 = load_machine("h200")
    for label, ld, want in (("[32][32]", 32, 32), ("[32][33]", 33, 1)):
        _click(drv, "bank", f"button[data-preset*='\"pad\":{ld - 32}']")
        model = smem_wavefronts(h200, [4 * ld * t for t in range(32)], 4)
        assert model == want
        assert _value(drv, "bank-wavefronts") == model
        assert _value(drv, "bank-conflicts") == model - 1
        if ld == 32:
            drv.save_screenshot(str(shots / "lab_bank.png"))
    _set(drv, "bank", width=8, pattern="row")
    assert _value(drv, "bank-wavefronts") == smem_wavefronts(h200, [8 * t for t in range(32)], 8)

    # 5. waves: NVIDIA's A100 example, 2304 x 1536 is one full wave, 2304 x 1664 two waves at 54 %
    drv.find_element("css selector", "button[data-tab=wave]").click()
    _wait(drv, "wave", 0)
    a100 = load_machine("a100")
    for n, want_waves in ((1536, 1), (1664, 2)):
        _click(drv, "wave", f"button[data-preset*='\"N\":{n}']")
        w = waves(a100, tile_quantization(2304, n, 256, 128).tiles, 1)
        assert w.waves == want_waves
        assert _value(drv, "wave-waves") == w.waves
        assert _value(drv, "wave-eff") == pytest.approx(w.wave_efficiency, rel=1e-12)
        assert _text(drv, "wave-eff") == f"{100 * w.wave_efficiency:.1f} %"
    drv.save_screenshot(str(shots / "lab_wave.png"))

    # a request the labs refuse shows the reason, not numbers
    before = _ticket(drv, "wave")
    drv.execute_script("const f = document.querySelector(`form[data-lab='wave']`); f.elements.BM.value = '4';"
                       "f.dispatchEvent(new Event('change'));")
    end = time.time() + 10
    while _ticket(drv, "wave") <= before and time.time() < end:
        time.sleep(0.05)
    assert "BM=4 is outside" in _text(drv, "wave-error")


def test_static_page_in_chromium(browser, tmp_path, monkeypatch):
    """`gemmsim lab --static`: the same front end reads the embedded grid from a file:// page, no server."""
    from gemmsim.lab import static_page

    grid = {
        "cache": (static_page.GRID["cache"][0], {"order": ["ijk", "ikj"]}),
        "wave": (static_page.GRID["wave"][0], {"N": ["1536", "1664"]}),
    }
    monkeypatch.setattr(static_page, "GRID", grid)
    out, n = static_page.write_static(tmp_path / "labs.html", quiet=True)
    assert n == 4
    drv = browser
    drv.get(out.resolve().as_uri() + "#cache")
    _wait(drv, "cache", 0)
    assert "static page" in _text(drv, "source")
    drv.find_element("id", "cache-last").click()
    assert _text(drv, "cache-running") == "45.8 %"
    _click(drv, "cache", "button[data-preset*='\"ikj\"']")
    drv.find_element("id", "cache-last").click()
    assert _text(drv, "cache-running") == "90.0 %"
    drv.find_element("css selector", "button[data-tab=wave]").click()
    _wait(drv, "wave", 0)
    _click(drv, "wave", "button[data-preset*='\"N\":1536']")
    assert _value(drv, "wave-waves") == 1
    before = _ticket(drv, "wave")
    drv.execute_script("const f = document.querySelector(`form[data-lab='wave']`); f.elements.N.value = '1600';"
                       "f.dispatchEvent(new Event('change'));")
    end = time.time() + 10
    while _ticket(drv, "wave") <= before and time.time() < end:
        time.sleep(0.05)
    assert "not in the page's precomputed grid" in _text(drv, "wave-error")
