"""One formatter for tables, figures and readings: engineering form with units, and the column glossary."""

import pytest

from gemmsim.report import format as fmt
from gemmsim.report.tables import cell


@pytest.mark.parametrize(
    "x,unit,want",
    [
        (1048576, "B", "1.05 MB"),
        (786432, "B", "786 kB"),
        (5.05e-10, "s", "505 ps"),
        (1.01e-9, "s", "1.01 ns"),
        (1.5441e14, "FLOP/s", "154 TFLOP/s"),
        (999.7e3, "B", "1 MB"),  # rounds up into the next prefix, never '1000 kB'
        (0.00213, "s", "2.13 ms"),
        (0, "B", "0 B"),
        (float("nan"), "s", "-"),
    ],
)
def test_engineering_form(x, unit, want):
    assert fmt.eng(x, unit) == want


def test_the_issue_examples_are_gone():
    # '% peak' printed '1e+02%', GFLOP/s '154.41k', times mixed '5.05e-10 s' and '1.01 ns'
    row = {"peak_fraction": 1.0, "gflops": 154410.0, "time_s": 5.05e-10, "blocks_per_sm": 1, "dram_bytes": 786432}
    assert cell(row, "peak_fraction") == "100 %"
    assert cell(row, "gflops") == "154 TFLOP/s"
    assert cell(row, "time_s") == "505 ps"
    assert cell(row, "dram_bytes") == "786 kB"
    assert fmt.header("blocks_per_sm") == "blocks/SM" and cell(row, "blocks_per_sm") == "1"
    assert fmt.percent(0.5412) == "54.1 %" and fmt.percent(0.000123) == "0.0123 %"


def test_axis_labels_are_words_with_units():
    assert fmt.axis_label("time_s") == "modelled time (s)"
    assert fmt.axis_label("p_threads") == "threads"
    assert fmt.axis_label("dram_bytes") == "DRAM bytes (B)"
    assert fmt.axis_label("L1_hit_rate") == "L1 hit (%)" and fmt.scale("L1_hit_rate") == 100


def test_every_header_of_the_tables_is_in_the_glossary():
    # the headers the issue found unexplained: 'L1-> B', 'l1 hit' beside 'L1 hit', 'l2_chip hit'
    for col in ("L1_traffic_bytes", "l1_hit_rate", "L1_hit_rate", "l2_chip_hit_rate", "dram_bytes", "time_s", "gflops",
                "peak_fraction", "bound", "wavefronts", "sectors_per_request", "wave_efficiency", "L1_invalidations", "DTLB_miss_rate"):
        c = fmt.column(col)
        assert c is not None and c.doc and c.header, col
    assert fmt.column("l1_hit_rate").header == "l1 hit" and "l1" in fmt.column("l1_hit_rate").doc


def test_columns_verb_explains_a_column(capsys):
    from gemmsim.cli.main import main

    assert main(["columns", "wave_efficiency", "no_such_column"]) == 0
    out = capsys.readouterr().out
    assert "wave_efficiency" in out and "last wave" in out and "(not in the glossary)" in out


def test_sizes_compared_with_caches_and_shared_memory_keep_binary_units():
    # seed 003's 72 KiB stage buffers and a blocked working set are read against KiB-sized memories
    assert fmt.value("smem_per_block", 73728) == "72 KiB"
    assert fmt.value("working_set_bytes", 3 * 256 * 256 * 4) == "768 KiB"
    assert fmt.kib(1536 * 1024) == "1.5 MiB"
