"""Pipeline-depth figures (gemmsim.report.figures.pipeline) from rows of the SM pipeline model."""

from gemmsim.report.figures import build_figures


def _row(machine, S, tflops, wait, ref=None):
    r = {"machine": machine, "kernel": "seed003_cutlass", "label": "cutlass", "p_stages": S, "tflops": tflops,
         "peak_tflops": 30.2, "blocks_per_sm": 1, "pipe_step_clk": 4096 + wait, "pipe_mma_clk": 4096.0,
         "pipe_contention_clk": 0.0, "pipe_barrier_clk": 33.0, "pipe_copy_wait_clk": float(wait), "time_s": 1.0}
    if ref is not None:
        r["seed_measured_tflops"] = ref
    return r


def test_pipeline_figures_are_drawn_with_references_and_readings():
    rows = [_row("rtx4060", 1, 17.8, 2573), _row("rtx4060", 2, 28.8, 0, 25.6), _row("rtx4060", 3, 28.8, 0, 31.9)]
    drawn = {d.name: d for d in build_figures(rows)}
    assert "pipeline_depth" in drawn and "pipeline_stage_parts" in drawn
    assert drawn["pipeline_depth"].error is None and drawn["pipeline_depth"].fig is not None
    assert "seed 003, measured S=2 25.6, S=3 31.9" in drawn["pipeline_depth"].reading
    assert "at S=1 a block waits 2573 of 6669 cycles" in drawn["pipeline_stage_parts"].reading
    # the reference markers are on the axes: one model line and one marker series
    ax = drawn["pipeline_depth"].fig.axes[0]
    assert len(ax.lines) >= 2


def test_no_pipeline_figure_without_a_stage_sweep():
    drawn = {d.name for d in build_figures([_row("rtx4060", 3, 28.8, 0)])}
    assert "pipeline_depth" not in drawn


def test_two_measured_kernels_on_one_panel_are_told_apart():
    """pipeline_depth.yaml's H200 panel: the mma.sync and the WMMA kernel, near-equal, each with its measurements
    beside its own model line (own colour, own marker, measured squares side by side); a datasheet peak far above the
    data is named in the legend, not allowed to flatten the lines."""
    rows = []
    for label, model, meas in (("mma_pipe", (129.4, 195.5), (157.6, 216.9)), ("wmma_pipe", (131.8, 191.9), (160.9, 214.6))):
        for S, t, ref in zip((1, 2), model, meas):
            r = _row("h200", S, t, 0)
            r.update(kernel="tensorcore", label=label, peak_tflops=989.4, measured_tflops_at_model_clock=ref)
            rows.append(r)
    drawn = {d.name: d for d in build_figures(rows)}["pipeline_depth"]
    ax = drawn.fig.axes[0]
    by = {ln.get_label(): ln for ln in ax.lines}
    a, b = by["mma_pipe: measured, rescaled to the model's clock"], by["wmma_pipe: measured, rescaled to the model's clock"]
    assert a.get_color() == by["mma_pipe: model"].get_color() != b.get_color() == by["wmma_pipe: model"].get_color()
    assert by["mma_pipe: model"].get_marker() != by["wmma_pipe: model"].get_marker()
    assert all(x < y for x, y in zip(a.get_xdata(), b.get_xdata()))  # side by side, not on top of each other
    assert "datasheet peak 989 (above the axis)" in by and ax.get_ylim()[1] < 989
    assert "wmma_pipe: model S=1 131.8, S=2 191.9" in drawn.reading
