"""Figures: which ones are drawn for which rows, and that their readings say what the rows say.

Readings are checked against numbers computed here from the rows or the machine files (ridge point = peak /
bandwidth, the wave size = SMs x blocks per SM, the wavefronts of a stride worked out by hand), never against
text copied from a previous run.
"""

import json

import pytest
import yaml

from gemmsim.report import figures
from gemmsim.report.figures import common as fig_common
from gemmsim.report.figures import cpu as fig_cpu
from gemmsim.run.experiment import Plot
from gemmsim.machine import load_machine
from gemmsim.sim.cpu import simulate_cpu
from gemmsim.sim.dispatch import Case

PNG = b"\x89PNG\r\n\x1a\n"


def cpu_row(machine: str, kernel: str, n: int, **params) -> dict:
    case = Case("t", machine, kernel, params, n, n, n, "fp32")
    return {**case.columns(), **simulate_cpu(load_machine(machine), kernel, n, n, n, "fp32", **params)}


def save_machines(folder, *names):
    (folder / "machines").mkdir(exist_ok=True)
    for n in names:
        (folder / "machines" / f"{n}.yaml").write_text(yaml.safe_dump(load_machine(n).model_dump(mode="json")))


@pytest.fixture(scope="module")
def lab_rows():
    return [cpu_row("toy", k, 8, promotion=p) for k in ("ijk", "ikj") for p in ("hoisted", "none")]


def test_cpu_rows_get_hit_rates_bytes_time_heatmaps_and_roofline(lab_rows):
    toy = load_machine("toy")
    drawn = {d.name: d for d in figures.build_figures(lab_rows, None, {"toy": toy})}
    assert set(drawn) == {"hit_rates", "bytes_per_level", "modelled_time", "misses_toy", "roofline_toy"}
    assert all(d.error is None and d.reading for d in drawn.values())
    # same-label rows are told apart by the parameter that differs
    assert "ijk promotion=hoisted" in drawn["hit_rates"].reading
    ijk = lab_rows[0]
    assert f"of {ijk['L1_misses']:,} L1 misses" in drawn["misses_toy"].reading
    ridge = toy.peak_gflops("fp32") / toy.dram.bandwidth_gbps
    assert f"ridge point {fig_common._g(ridge)} FLOP/B" in drawn["roofline_toy"].reading
    fast = min(lab_rows, key=lambda r: r["time_s"])
    slow = max(lab_rows, key=lambda r: r["time_s"])
    assert f"{slow['time_s'] / fast['time_s']:.1f}x apart" in drawn["modelled_time"].reading


def test_heatmaps_skip_large_and_multithreaded_cases():
    big = {"machine": "haswell", "kernel": "ijk", "M": 128, "N": 128, "K": 128, "threads": 1, "L1_misses": 5}
    par = {"machine": "haswell", "kernel": "ijk", "M": 8, "N": 8, "K": 8, "threads": 4, "L1_misses": 5}
    assert fig_cpu._heatmap_cases([big, par], {"haswell": load_machine("haswell")}) == []


def test_draw_all_writes_pngs_and_an_index(tmp_path, lab_rows):
    save_machines(tmp_path, "toy")
    exp = {"plots": [{"x": "L1_hit_rate", "y": "time_s", "group": ["kernel"]}]}
    written = figures.draw_all(tmp_path, exp, lab_rows)
    index = json.loads((tmp_path / "figures" / "index.json").read_text())
    assert [e["file"] for e in index] == [p.name for p in written]
    assert "time_s_vs_L1_hit_rate.png" in [p.name for p in written]
    for p in written:
        assert p.read_bytes()[:8] == PNG
    assert all(e["reading"] and "error" not in e for e in index)
    # the experiment object works as well as its dict
    again = figures.build_figures(lab_rows, type("E", (), {"plots": [Plot(x="L1_hit_rate", y="time_s")]})(), {})
    assert any(d.name == "time_s_vs_L1_hit_rate" for d in again)


def test_wave_staircase_steps_at_the_wave_size():
    a100 = load_machine("a100")
    wave = a100.sms * 2  # two resident blocks per SM
    rows = []
    for tiles in range(wave - 4, 2 * wave + 5, 4):
        waves = -(-tiles // wave)
        rows.append({"machine": "a100", "kernel": "gemm", "label": "gemm", "tiles": tiles, "waves": waves, "blocks_per_sm": 2, "time_s": 1e-5 * waves})
    d = figures._waves(rows, {"a100": a100})
    assert d is not None and f"a100 {wave} tiles" in d.reading
    first_step = min(r["tiles"] for r in rows if r["waves"] == 2)
    assert f"steps from {first_step - 4} to {first_step} tiles: 2.00x the time" in d.reading
    # one panel per GPU, and the dotted wave boundaries sit at multiples of the wave size
    ax = d.fig.axes[0]
    xs = sorted({round(line.get_xdata()[0]) for line in ax.get_lines() if line.get_linestyle() == ":"})
    assert xs == [wave, 2 * wave]


def _lane(row):
    from gemmsim.report.figures.gpu import _lane_addresses, _lane_panel
    from matplotlib.figure import Figure

    m = load_machine("a100")
    addrs, width = _lane_addresses(row)
    return _lane_panel(Figure().add_subplot(), row, m, addrs, width, "x")


@pytest.mark.parametrize("stride,wavefronts", [(1, 1), (2, 2), (32, 32), (33, 1)])
def test_lane_diagram_reads_the_wavefronts_of_a_stride(stride, wavefronts):
    # 4-byte words, 32 banks: lane l hits bank (l * stride) % 32; stride 33 is the [TILE][TILE+1] padding
    wf, worst, banks = _lane({"machine": "a100", "kernel": "smem_pattern", "p_stride": stride, "p_width": 4})
    busy = len({(lane * stride) % 32 for lane in range(32)})
    assert (wf, banks, worst) == (wavefronts, busy, 32 // busy)


def test_padding_figure_draws_32_32_beside_32_33():
    # lane l reads float tile[l][0] of float tile[32][32 + pad]: word 32*l (bank 0 for all) or 33*l (bank l)
    rows = [{"machine": "a100", "kernel": "smem_pattern", "label": f"pad {pad}", "p_transpose_tile": 32, "p_pad": pad} for pad in (0, 1)]
    d = figures._banks_padding(rows, {"a100": load_machine("a100")})
    assert d is not None and len([a for a in d.fig.axes if a.get_visible()]) == 2
    assert "land in 1 bank(s), the busiest holding 32 words: 32 wavefronts" in d.reading
    assert "they land in 32 banks: 1 wavefront" in d.reading


def test_lane_diagram_of_8_byte_accesses_counts_half_warp_phases():
    wf, worst, banks = _lane({"machine": "a100", "kernel": "smem_pattern", "p_stride": 1, "p_width": 8})
    assert (wf, worst, banks) == (2, 1, 32)  # two phases of 16 lanes, each 16 x 2 words over all 32 banks


def test_banks_bar_chart_marks_conflicts_against_the_ideal():
    rows = [{"machine": "a100", "kernel": "smem_pattern", "label": f"s{s}", "p_stride": s, "p_width": 4, "wavefronts": w, "ideal_wavefronts": 1}
            for s, w in ((1, 1), (2, 2), (32, 32))]
    d = figures._banks(rows, {"a100": load_machine("a100")})
    assert "2 of 3 patterns take more wavefronts than their ideal; the worst, s32, takes 32." in d.reading


def test_systolic_utilization_against_one_varied_dimension():
    rows = [
        {"machine": "tpu_v1", "kernel": "gemm", "label": "ws", "M": n, "N": n, "K": n, "utilization": min(1.0, n / 256) ** 2, "time_s": 1.0}
        for n in (16, 64, 256, 1024)
    ]
    # a decode series: M varies, N = K fixed; a lone odd shape joins no series
    rows += [{"machine": "tpu_v1", "kernel": "gemm", "label": "ws", "M": m, "N": 4096, "K": 4096, "utilization": m / 256, "time_s": 1.0} for m in (1, 8)]
    rows.append({"machine": "tpu_v1", "kernel": "gemm", "label": "ws", "M": 3, "N": 5, "K": 7, "utilization": 0.5, "time_s": 1.0})
    d = figures._systolic(rows, {})
    assert d is not None and "from 0.391 % at n = 16 to 100 % at n = 1024" in d.reading
    titles = sorted(a.get_xlabel() for a in d.fig.axes if a.get_visible())
    assert titles == ["M (N = 4096, K = 4096)", "n (M = N = K)"]


def test_a_failing_figure_is_recorded_not_raised(monkeypatch, lab_rows):
    def boom(rows, machines):
        raise ValueError("unexpected column")

    monkeypatch.setattr(figures, "_rooflines", boom)
    drawn = figures.build_figures(lab_rows, None, {"toy": load_machine("toy")})
    bad = [d for d in drawn if d.error]
    assert len(bad) == 1 and "unexpected column" in bad[0].error and bad[0].fig is None
    assert any(d.name == "hit_rates" and d.fig is not None for d in drawn)


def test_a_bad_plots_entry_is_recorded_not_raised(lab_rows):
    drawn = figures.build_figures(lab_rows, {"plots": [{"x": "time_s", "colour": "red"}]}, {})
    bad = [d for d in drawn if d.error]
    assert len(bad) == 1 and "colour" in bad[0].error
    assert any(d.name == "hit_rates" for d in drawn)
