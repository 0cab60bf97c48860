"""Every report page renders in a real browser: a headless Chromium screenshot of each, no console errors, every
embedded figure decodes, and the page leads with the lesson (issue 10)."""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gemmsim.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

#: quick runs of a few seconds each, one per figure family the report leads with
EXPERIMENTS = ("bank_conflicts", "coalescing", "wave_quantization", "systolic", "threads")

# appended to a copy of the page: after load, record how many images there are and how many decoded
PROBE = (
    "<script>window.addEventListener('load',function(){var im=document.images,ok=0;"
    "for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}"
    "var d=document.createElement('div');d.id='gemmsim-probe';d.textContent='images='+im.length+' decoded='+ok;"
    "document.body.appendChild(d);});</script>"
)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run_chromium(*args: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="chromium-")
    cmd = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0", *args,
    ]  # fmt: skip
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": profile})
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    base = tmp_path_factory.mktemp("reports")
    out = {}
    for name in EXPERIMENTS:
        folder = base / name
        assert main(["run", str(ROOT / "experiments" / f"{name}.yaml"), "--quick", "--quiet", "--no-host", "--no-cache", "--out", str(folder)]) == 0
        out[name] = folder
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_each_report_leads_with_its_lesson(reports, name):
    page = (reports[name] / "report.html").read_text()
    body = page[page.index("<body>"):]
    lesson = body.index("class=\"lesson\"")
    assert lesson < body.index("<figure") < body.index("<h2>Verdict</h2>") < body.index("<h2>Headline numbers</h2>")
    # the full tables are collapsed; the regenerate command names the real folder, not NAME.partial
    assert "<details><summary>Full table" in body and ".partial" not in body
    assert f"gemmsim report {reports[name]}" in body or f"gemmsim report {reports[name].name}" in body
    # readings are short: at most three sentences each
    for cap in re.findall(r"<figcaption><b>.*?</b><span>(.*?)</span>", body):
        assert len(re.findall(r"[.!?](?:\s|$)", cap)) <= 3, cap


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_each_report_renders_in_headless_chromium(reports, name, tmp_path):
    page = (reports[name] / "report.html").read_text()
    shot = tmp_path / f"{name}.png"
    res = _run_chromium(f"--screenshot={shot}", "--window-size=1400,4000", (reports[name] / "report.html").as_uri())
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", res.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[1] == 1400 and img[..., :3].std() > 0.05  # a page with content, not a blank screen
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    res = _run_chromium("--dump-dom", probe.as_uri())
    m = re.search(r'id="gemmsim-probe">images=(\d+) decoded=(\d+)<', res.stdout)
    assert m, f"no probe in the dumped DOM (exit {res.returncode}): {res.stderr[-2000:]}"
    n_img = page.count("<img ")
    assert int(m.group(1)) == n_img > 0 and int(m.group(2)) == n_img
    assert [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln] == []
