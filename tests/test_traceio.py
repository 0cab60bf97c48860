"""Trace files: din, xdin (Dinero IV), valgrind lackey and npy; round trips, hand-written files, bad lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gemmsim.traceio as traceio
from gemmsim.errors import TraceFormatError
from gemmsim.kernels.cpu import cpu_trace
from gemmsim.trace import ACCESS, concat, make_chunk
from gemmsim.traceio import FORMATS, read_trace, trace_format, write_trace

TRACES = Path(__file__).resolve().parent.parent / "traces"


def rows(chunk: np.ndarray) -> list[tuple[int, int, int]]:
    return list(zip(chunk["addr"].tolist(), chunk["size"].tolist(), chunk["is_write"].tolist()))


def read_all(path, fmt=None, **kw) -> np.ndarray:
    return concat(read_trace(path, fmt, **kw))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("gz", [False, True])
def test_round_trip(tmp_path, fmt, gz):
    t = concat(cpu_trace("kij", 6, 5, 7, dtype="fp64", layout={"base": 0xFFFF_FFFF_F000}))
    path = tmp_path / f"t.{fmt}{'.gz' if gz else ''}"
    assert write_trace([t[:10], t[10:10], t[10:]], path) == len(t)
    back = read_all(path, chunk=13, default_size=8)
    assert back.dtype == ACCESS
    assert rows(back) == rows(t)
    assert all(len(c) <= 13 for c in read_trace(path, chunk=13, default_size=8))


def test_npy_keeps_core_and_sizes(tmp_path):
    t = make_chunk([1, 2, 3], [4, 8, 2], [0, 1, 0], core=[0, 3, 7])
    write_trace([t], tmp_path / "x.npy")
    back = read_all(tmp_path / "x.npy")
    assert np.array_equal(back, t)


def test_din_by_hand(tmp_path):
    # Dinero IV din: LABEL ADDRESS, rest of the line ignored; 2 = instruction fetch (skipped); 0x accepted
    p = tmp_path / "hand.din"
    p.write_text("0 1000\n2 2cb5\n1 70f60890 a comment: the third field is not a size\n\t0  0x7F \r\n\n1 0\n")
    assert rows(read_all(p)) == [(0x1000, 4, 0), (0x70F60890, 4, 1), (0x7F, 4, 0), (0, 4, 1)]
    assert rows(read_all(p, default_size=8))[0] == (0x1000, 8, 0)


def test_xdin_by_hand(tmp_path):
    p = tmp_path / "hand.xdin"
    p.write_text("r 1000 4\nI 400 4\nW 0x1008 0x8 trailing words\nm 20 2\n")
    assert rows(read_all(p)) == [(0x1000, 4, 0), (0x1008, 8, 1), (0x20, 2, 0)]


def test_lackey_by_hand(tmp_path):
    p = tmp_path / "hand.lackey"
    p.write_text(
        "==12345== Lackey, an example Valgrind tool\n"
        "I  04222cac,3\n"
        " L 04222cac,4\n"
        " S 1ffefffd48,8\n"
        " M 0010c060,4\n"
        "I  0010c070,5\n"
        "==12345== Counted 1 call to main()\n"
    )
    assert rows(read_all(p)) == [(0x04222CAC, 4, 0), (0x1FFEFFFD48, 8, 1), (0x10C060, 4, 0), (0x10C060, 4, 1)]


def test_written_text_looks_like_the_tools(tmp_path):
    t = make_chunk([0x10C060, 0x4], [4, 8], [0, 1])
    write_trace([t], tmp_path / "a.lackey")
    write_trace([t], tmp_path / "a.din")
    write_trace([t], tmp_path / "a.xdin")
    assert (tmp_path / "a.lackey").read_text() == " L 0010c060,4\n S 00000004,8\n"
    assert (tmp_path / "a.din").read_text() == "0 10c060\n1 4\n"
    assert (tmp_path / "a.xdin").read_text() == "r 10c060 4\nw 4 8\n"


BAD = [
    ("din", "0 10\n1 20\nX 30\n", 3, "label"),
    ("din", "0 10\n0\n", 2, "address"),
    ("din", "0 10\n0 12g4\n", 2, "hexadecimal address"),
    ("din", "4 10\n", 1, "flush"),
    ("din", "0 10\n1 11223344556677889\n", 2, "at most 16"),
    ("xdin", "r 10 4\nq 10 4\n", 2, "access type"),
    ("xdin", "r 10\n", 1, "size"),
    ("xdin", "w 10 4z\n", 1, "hexadecimal size"),
    ("lackey", "==1== hi\n L 10,4\n X 10,4\n", 3, "L|S|M"),
    ("lackey", " L 10\n", 1, "SIZE"),
    ("lackey", " S 10,4x\n", 1, "decimal size"),
    ("lackey", "hello world\n", 1, "L|S|M"),
]


@pytest.mark.parametrize("fmt,text,line,what", BAD)
def test_malformed_line_names_file_and_line(tmp_path, fmt, text, line, what):
    p = tmp_path / f"bad.{fmt}"
    p.write_text(text)
    with pytest.raises(TraceFormatError) as exc:
        read_all(p)
    assert exc.value.line == line
    assert str(exc.value).startswith(f"{p}:{line}: ")
    assert what in str(exc.value)


def test_line_numbers_across_blocks(tmp_path, monkeypatch):
    # small read blocks: lines cut across block boundaries are carried over, line numbers keep counting
    monkeypatch.setattr(traceio, "_BLOCK", 7)
    p = tmp_path / "long.din"
    p.write_text("".join(f"{i % 2} {i:x}\n" for i in range(300)) + "0 zz\n")
    with pytest.raises(TraceFormatError) as exc:
        read_all(p)
    assert exc.value.line == 301
    p.write_text("".join(f"{i % 2} {i:x}\n" for i in range(300)) + "1 fff")  # no final newline
    t = read_all(p, chunk=64)
    assert len(t) == 301 and t["addr"][-1] == 0xFFF and t["is_write"][-1] == 1


def test_format_names_and_suffixes(tmp_path):
    assert trace_format("x.lackey.gz") == "lackey"
    assert trace_format("x.trace", "din") == "din"
    with pytest.raises(TraceFormatError, match="cannot tell"):
        trace_format(tmp_path / "x.txt")
    with pytest.raises(TraceFormatError, match="unknown trace format"):
        trace_format("x.din", "dinero")
    with pytest.raises(TraceFormatError, match="cannot open"):
        read_all(tmp_path / "missing.din")


def test_npy_wrong_dtype(tmp_path):
    p = tmp_path / "x.npy"
    with open(p, "wb") as f:
        np.save(f, np.arange(3))
    with pytest.raises(TraceFormatError, match="block 1 has dtype"):
        read_all(p)
    p.write_bytes(b"not numpy")
    with pytest.raises(TraceFormatError, match="not a numpy"):
        read_all(p)


@pytest.mark.parametrize("kernel", ["ijk", "ikj"])
@pytest.mark.parametrize("fmt", ["din", "lackey"])
def test_sample_traces_are_the_seed_lab(kernel, fmt):
    # traces/: the seed 000 section 3 lab, 8x8 fp32, hoisted promotion
    t = read_all(TRACES / f"lab_{kernel}_8x8_fp32.{fmt}")
    assert rows(t) == rows(concat(cpu_trace(kernel, 8, 8, 8)))
