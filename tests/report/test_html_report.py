"""report.html: written by every run, rebuilt by `gemmsim report`, rendered by a real browser, refused on bad input."""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gemmsim.report import figures
from gemmsim.cli.main import main
from gemmsim.report.html import claim_notes, seed_sections, write_html_report

ROOT = Path(__file__).resolve().parents[2]

# Appended to a copy of the page: after load, write how many images there are and how many decoded.
CHECK = (
    "<script>window.addEventListener('load',function(){var im=document.images,ok=0;"
    "for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}"
    "var d=document.createElement('div');d.id='gemmsim-check';d.textContent='images='+im.length+' decoded='+ok;"
    "document.body.appendChild(d);});</script>"
)


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "lab"
    assert main(["run", str(ROOT / "experiments" / "seed_lab.yaml"), "--quick", "--quiet", "--out", str(out)]) == 0
    return out


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_run_writes_a_self_contained_report(lab_run):
    page = (lab_run / "report.html").read_text()
    pngs = sorted(p.name for p in (lab_run / "figures").glob("*.png"))
    assert pngs and page.count("<img ") == len(pngs) == page.count("src='data:image/png;base64,")
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", page)  # nothing fetched from anywhere
    assert "<script" not in page
    assert "Seed 000 section 3" in page and "<details>" in page
    assert "seed 000, section 3" in page  # the seed section the description names
    # every figure has its reading under it
    for m in re.finditer(r"<figcaption><b>[^<]+</b><span>([^<]*)</span>", page):
        assert len(m.group(1)) > 40
    assert len(re.findall("<figcaption>", page)) == len(pngs)


def test_report_verb_regenerates_from_the_files_alone(lab_run, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(lab_run, copy)
    shutil.rmtree(copy / "figures")
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 0
    assert (copy / "report.html").is_file()
    assert sorted(p.name for p in (copy / "figures").glob("*.png")) == sorted(p.name for p in (lab_run / "figures").glob("*.png"))
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("remove", ["experiment.yaml", "results.json", "machines/toy.yaml"])
def test_missing_files_one_message_nothing_overwritten(lab_run, tmp_path, capsys, remove):
    copy = tmp_path / "broken"
    shutil.copytree(lab_run, copy)
    (copy / remove).unlink()
    before = snapshot(copy)
    assert main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert remove in err and "Traceback" not in err and err.count("gemmsim: error") == 1
    assert snapshot(copy) == before


def test_no_such_folder(capsys, tmp_path):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such results folder" in capsys.readouterr().err


def test_a_figure_that_failed_is_listed_in_the_notes(lab_run, tmp_path, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(lab_run, copy)

    def boom(rows, machines):
        raise ValueError("unexpected column")

    monkeypatch.setattr(figures, "_rooflines", boom)
    main(["report", str(copy)])
    page = (copy / "report.html").read_text()
    assert "could not be drawn: ValueError: unexpected column" in page


def test_claims_of_the_description_are_checked():
    rows = [
        {"label": "ikj", "L1_hit_rate": 0.9, "p_promotion": "hoisted"},
        {"label": "ijk", "L1_hit_rate": 0.458333, "p_promotion": "hoisted"},
        {"label": "ijk", "L1_hit_rate": 0.727, "p_promotion": "none"},
    ]
    notes = claim_notes("With register promotion ikj hits 90.0 % and ijk 52.8 %. The 6.25 % of a line is unused.", rows)
    assert notes[0].startswith("Claim checked") and "ikj hits 90.0 %" in notes[0]
    assert notes[1].startswith("Claim does not hold") and "45.8 % (promotion=hoisted)" in notes[1] and "72.7 % (promotion=none)" in notes[1]
    assert len(notes) == 2


def test_seed_sections():
    assert seed_sections("Seed 000 sections 2 and 2.1: the six loop orders; see seed 001.") == ["seed 000, sections 2 and 2.1", "seed 001"]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")
def test_report_renders_its_figures_in_headless_chromium(lab_run, tmp_path):
    write_html_report(lab_run)
    page = (lab_run / "report.html").read_text()
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", CHECK + "</body>"))
    profile = tempfile.mkdtemp(prefix="chromium-")
    cmd = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0", "--dump-dom", probe.as_uri(),
    ]  # fmt: skip
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env={**os.environ, "HOME": profile})
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    m = re.search(r"id=\"gemmsim-check\">images=(\d+) decoded=(\d+)<", res.stdout)
    assert m, f"no marker in the dumped DOM (exit {res.returncode}): {res.stderr[-2000:]}"
    n_img = page.count("<img ")
    assert int(m.group(1)) == n_img > 0 and int(m.group(2)) == n_img
    console = [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
