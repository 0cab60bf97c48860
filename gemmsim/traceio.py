"""Trace files: read and write address traces in the formats other tools speak, and in a compact binary form.

Formats (``fmt``), all streamed in chunks of ``gemmsim.trace.ACCESS`` records with bounded memory:

``din`` -- Dinero IV's traditional input format (``-informat d``, from Dinero III): one ``LABEL ADDRESS`` per
    line, both hexadecimal (an optional ``0x`` prefix is accepted), label 0 = data read, 1 = data write,
    2 = instruction fetch (skipped here: gemmsim traces data only). Dinero ignores the rest of the line ("so it
    may be used for comments"), so a third field is *not* a size in din: Dinero IV gives every din access size
    4 (and masks the address to a multiple of 4; gemmsim keeps the exact byte address). Reading uses
    ``default_size`` (4 bytes, like Dinero; pass the element size to read a trace of another dtype); writing
    drops the size. Labels 3 (escape) and 4 (flush) are refused. Source: Dinero IV ``dinfmt.c``
    (``tracein_din``) and the din-format page of Dinero's documentation.
``xdin`` -- Dinero IV's *extended* din (``-informat D``, ``xdinfmt.c``): ``ACCESSTYPE ADDRESS SIZE`` per line,
    access type ``r`` read, ``w`` write, ``i`` instruction fetch (skipped), ``m`` miscellaneous (read as a
    load); address and size hexadecimal; the rest of the line is ignored. This is the Dinero format that carries
    sizes, so a trace of any dtype round-trips through it. ``c`` (copy-back) and ``v`` (invalidate) are refused.
``lackey`` -- valgrind ``--tool=lackey --trace-mem=yes`` output: `` L 04222cac,4`` load, `` S ...`` store,
    `` M ...`` modify = a load then a store of the same address; ``I  ...`` (instruction fetch) lines and
    ``==PID==`` banner lines are skipped; address hexadecimal, size decimal. Written with at least 8 hex digits,
    as lackey prints them.
``npy`` -- gemmsim's own compact binary form: the chunks one after the other, each saved with ``numpy.save``
    (ACCESS dtype: addr u64, size u32, is_write u8, core u8; 16 bytes per access). ``core`` survives only here.

A file whose name ends in ``.gz`` is read and written through gzip. ``fmt=None`` picks the format from the
suffix (``.din``, ``.xdin``, ``.lackey``, ``.npy``, each optionally followed by ``.gz``). A line that is not in
the format raises TraceFormatError naming the file, the 1-based line number, the line and what was expected.
Text is parsed and formatted by numba functions over blocks of bytes (no Python per line).
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from numba import njit

from gemmsim.errors import TraceFormatError, output_error
from gemmsim.trace import ACCESS, CHUNK

#: Formats read_trace and write_trace know.
FORMATS = ("din", "xdin", "lackey", "npy")

#: Size in bytes given to every access of a din trace (Dinero IV's own choice: din is word-oriented).
DIN_DEFAULT_SIZE = 4

#: Bytes read from a text trace at a time.
_BLOCK = 1 << 23

_FMT_CODE = {"din": 0, "xdin": 1, "lackey": 2}

# Error codes of the parsers and what the line should have looked like.
_ERRORS = {
    1: "a hexadecimal label (0 read, 1 write, 2 instruction fetch) followed by a space",
    2: "a hexadecimal address after the label",
    3: "a hexadecimal address of at most 16 digits, followed by a space or the end of the line",
    4: "label 0 (read), 1 (write) or 2 (instruction fetch); labels 3 (escape) and 4 (flush) are not supported",
    5: "an access type r, w, i or m followed by a space (c copy-back and v invalidate are not supported)",
    6: "a hexadecimal size after the address",
    7: "a hexadecimal size followed by a space or the end of the line",
    8: "a data access ' L|S|M ADDRESS,SIZE', an instruction fetch 'I  ADDRESS,SIZE' or a '==PID==' line",
    9: "',SIZE' (a comma and a decimal size) after the address",
    10: "a decimal size of at most 9 digits, then the end of the line",
    11: "an access size of 1 to 4096 bytes (0 bytes is not an access; larger ones are not one instruction's)",
}

#: Largest access size a trace may give (one page): a size is one instruction's access, never a whole array.
MAX_ACCESS_BYTES = 4096


# ---------------------------------------------------------------------------------------------------------
# Parsing (numba, over a block of complete lines).


@njit(cache=True)
def _hexval(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


@njit(cache=True)
def _read_hex(buf, p, end):
    """Parse hex digits (optional 0x prefix) from p; returns (value, digits, new p)."""
    if p + 1 < end and buf[p] == 48 and (buf[p + 1] == 120 or buf[p + 1] == 88):
        p += 2
    v = np.uint64(0)
    nd = 0
    while p < end:
        h = _hexval(buf[p])
        if h < 0:
            break
        v = v * np.uint64(16) + np.uint64(h)
        nd += 1
        p += 1
    return v, nd, p


@njit(cache=True)
def _is_ws(c):
    return c == 32 or c == 9


@njit(cache=True)
def _parse(buf, fmt, addr, size, is_write, default_size):
    """Parse every line of ``buf`` (uint8) in format ``fmt`` (0 din, 1 xdin, 2 lackey) into the output arrays.

    Returns (records, lines, error code, index of the bad line, its start, its end); error code 0 = none.
    """
    L = buf.shape[0]
    n = 0
    line = 0
    pos = 0
    while pos < L:
        e = pos
        while e < L and buf[e] != 10:
            e += 1
        end = e
        if end > pos and buf[end - 1] == 13:
            end -= 1
        p = pos
        err = 0
        if fmt == 2 and end - p >= 2 and buf[p] == 61 and buf[p + 1] == 61:
            pass  # '==PID==' banner
        else:
            while p < end and _is_ws(buf[p]):
                p += 1
            if p == end:
                pass  # blank line
            elif fmt == 0:
                label, nd, p = _read_hex(buf, p, end)
                if nd == 0 or nd > 8 or (p < end and not _is_ws(buf[p])):
                    err = 1
                else:
                    while p < end and _is_ws(buf[p]):
                        p += 1
                    if p == end:
                        err = 2
                    else:
                        a, nd, p = _read_hex(buf, p, end)
                        if nd == 0 or nd > 16 or (p < end and not _is_ws(buf[p])):
                            err = 3
                        elif label == 0 or label == 1:
                            addr[n] = a
                            size[n] = default_size
                            is_write[n] = label
                            n += 1
                        elif label != 2:
                            err = 4
            elif fmt == 1:
                c = buf[p] | 32  # lower case
                kind = -1
                if c == 114 or c == 109:  # r, m
                    kind = 0
                elif c == 119:  # w
                    kind = 1
                elif c == 105:  # i
                    kind = 2
                p += 1
                if kind < 0 or p == end or not _is_ws(buf[p]):
                    err = 5
                else:
                    while p < end and _is_ws(buf[p]):
                        p += 1
                    if p == end:
                        err = 2
                    else:
                        a, nd, p = _read_hex(buf, p, end)
                        if nd == 0 or nd > 16 or (p < end and not _is_ws(buf[p])):
                            err = 3
                        else:
                            while p < end and _is_ws(buf[p]):
                                p += 1
                            if p == end:
                                err = 6
                            else:
                                s, nd, p = _read_hex(buf, p, end)
                                if nd == 0 or nd > 8 or (p < end and not _is_ws(buf[p])):
                                    err = 7
                                elif kind < 2 and (s == 0 or s > 4096):
                                    err = 11
                                elif kind < 2:
                                    addr[n] = a
                                    size[n] = s
                                    is_write[n] = kind
                                    n += 1
            else:
                c = buf[p]
                if c == 73:  # 'I': instruction fetch, skipped
                    pass
                elif c == 76 or c == 83 or c == 77:  # L, S, M
                    p += 1
                    if p == end or not _is_ws(buf[p]):
                        err = 8
                    else:
                        while p < end and _is_ws(buf[p]):
                            p += 1
                        a, nd, p = _read_hex(buf, p, end)
                        if nd == 0 or nd > 16:
                            err = 3
                        elif p == end or buf[p] != 44:
                            err = 9
                        else:
                            p += 1
                            s = 0
                            nd = 0
                            while p < end and 48 <= buf[p] <= 57:
                                s = s * 10 + (buf[p] - 48)
                                nd += 1
                                p += 1
                            while p < end and _is_ws(buf[p]):
                                p += 1
                            if nd == 0 or nd > 9 or p != end:
                                err = 10
                            elif s == 0 or s > 4096:
                                err = 11
                            else:
                                addr[n] = a
                                size[n] = s
                                is_write[n] = 1 if c == 83 else 0
                                n += 1
                                if c == 77:  # modify: the load, then the store
                                    addr[n] = a
                                    size[n] = s
                                    is_write[n] = 1
                                    n += 1
                else:
                    err = 8
        if err != 0:
            return n, line, err, line, pos, end
        line += 1
        pos = e + 1
    return n, line, 0, -1, 0, 0


# ---------------------------------------------------------------------------------------------------------
# Formatting (numba).


@njit(cache=True)
def _put_hex(out, o, v, width):
    """Write v in lower-case hex, at least ``width`` digits, at out[o]; returns the new offset."""
    nd = 1
    t = v >> np.uint64(4)
    while t != 0:
        nd += 1
        t >>= np.uint64(4)
    if nd < width:
        nd = width
    for d in range(nd - 1, -1, -1):
        h = (v >> np.uint64(4 * d)) & np.uint64(15)
        out[o] = 48 + h if h < 10 else 87 + h
        o += 1
    return o


@njit(cache=True)
def _format(addr, size, is_write, fmt, out):
    """Write the records as text lines of format ``fmt`` into ``out`` (>= 40 bytes per record); returns bytes used."""
    o = 0
    for r in range(addr.shape[0]):
        if fmt == 0:
            out[o] = 49 if is_write[r] else 48
            out[o + 1] = 32
            o = _put_hex(out, o + 2, addr[r], 1)
        elif fmt == 1:
            out[o] = 119 if is_write[r] else 114
            out[o + 1] = 32
            o = _put_hex(out, o + 2, addr[r], 1)
            out[o] = 32
            o = _put_hex(out, o + 1, np.uint64(size[r]), 1)
        else:
            out[o] = 32
            out[o + 1] = 83 if is_write[r] else 76
            out[o + 2] = 32
            o = _put_hex(out, o + 3, addr[r], 8)
            out[o] = 44
            o += 1
            s = size[r]
            nd = 1
            t = s // 10
            while t != 0:
                nd += 1
                t //= 10
            for d in range(nd - 1, -1, -1):
                out[o + d] = 48 + s % 10
                s //= 10
            o += nd
        out[o] = 10
        o += 1
    return o


# ---------------------------------------------------------------------------------------------------------
# Public functions.


def trace_format(path: str | os.PathLike, fmt: str | None = None) -> str:
    """The format of a trace file: ``fmt`` if given (checked), else from the file name's suffix."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise TraceFormatError(f"unknown trace format {fmt!r}; known: {', '.join(FORMATS)}", source=str(path))
        return fmt
    name = os.fspath(path)
    if name.endswith(".gz"):
        name = name[:-3]
    suffix = Path(name).suffix.lstrip(".")
    if suffix in FORMATS:
        return suffix
    raise TraceFormatError(
        f"cannot tell the trace format from the file name; name it *.{{{','.join(FORMATS)}}}[.gz] or give the format",
        source=os.fspath(path),
    )


def _open(path: str | os.PathLike, mode: str):
    name = os.fspath(path)
    try:
        if name.endswith(".gz"):
            return gzip.open(name, mode)
        return open(name, mode)
    except OSError as exc:
        raise TraceFormatError(f"cannot open trace file: {exc.strerror or exc}", source=name) from None


def _line_error(path, line_no: int, code: int, text: bytes, fmt: str) -> TraceFormatError:
    shown = text.decode("utf-8", "replace")
    if len(shown) > 80:
        shown = shown[:77] + "..."
    err = TraceFormatError(f"{fmt} trace: expected {_ERRORS[code]}; got {shown!r}", source=f"{os.fspath(path)}:{line_no}")
    err.path = os.fspath(path)
    err.line = line_no
    return err


def _read_text(path, fmt: str, chunk: int, default_size: int) -> Iterator[np.ndarray]:
    code = _FMT_CODE[fmt]
    lines_before = 0
    carry = b""
    with _open(path, "rb") as f:
        while True:
            try:
                data = f.read(_BLOCK)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise TraceFormatError(f"cannot read trace file: {exc}", source=os.fspath(path)) from None
            final = not data
            block = carry + data
            if not final:
                cut = block.rfind(b"\n") + 1
                block, carry = block[:cut], block[cut:]
            else:
                carry = b""
            if block:
                buf = np.frombuffer(block, dtype=np.uint8)
                cap = (2 if fmt == "lackey" else 1) * (block.count(b"\n") + 1)  # lackey's M line is two accesses
                out = np.empty(cap, dtype=ACCESS)
                n, lines, err, bad, s, e = _parse(buf, code, out["addr"], out["size"], out["is_write"], default_size)
                if err:
                    raise _line_error(path, lines_before + bad + 1, err, block[s:e], fmt)
                lines_before += lines
                out["core"][:n] = 0
                for s0 in range(0, n, chunk):
                    yield out[s0 : min(s0 + chunk, n)]
            if final:
                return


def _read_npy(path, chunk: int) -> Iterator[np.ndarray]:
    name = os.fspath(path)
    with _open(path, "rb") as f:
        index = 0
        while True:
            try:
                head = f.read(6)
                if not head:
                    return
                if head != b"\x93NUMPY":
                    raise TraceFormatError(f"npy trace: block {index + 1} is not a numpy .npy array", source=name)
                src = _Prefixed(head, f)
                version = np.lib.format.read_magic(src)
                read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = read_header(src)
            except Exception as exc:  # numpy's header parser raises many kinds (ValueError, SyntaxError, TokenError ...)
                raise TraceFormatError(f"npy trace: block {index + 1} cannot be read: {exc}", source=name) from None
            if dtype.hasobject or dtype.descr != ACCESS.descr or len(shape) != 1:
                raise TraceFormatError(
                    f"npy trace: block {index + 1} has dtype {dtype} and shape {shape}; expected a 1-D array of "
                    f"gemmsim.trace.ACCESS {ACCESS}",
                    source=name,
                )
            index += 1
            left = int(shape[0])
            while left:  # read the block piece by piece: memory stays bounded whatever its header claims
                n = min(left, chunk)
                try:
                    data = f.read(n * ACCESS.itemsize)
                except (OSError, EOFError) as exc:
                    raise TraceFormatError(f"npy trace: block {index} cannot be read: {exc}", source=name) from None
                if len(data) != n * ACCESS.itemsize:
                    raise TraceFormatError(
                        f"npy trace: block {index} is truncated ({shape[0] - left + len(data) // ACCESS.itemsize} of "
                        f"{shape[0]} records)",
                        source=name,
                    )
                arr = np.frombuffer(data, dtype=ACCESS).copy()
                bad = np.flatnonzero((arr["size"] == 0) | (arr["size"] > MAX_ACCESS_BYTES) | (arr["is_write"] > 1))
                if bad.size:
                    r = arr[bad[0]]
                    raise TraceFormatError(
                        f"npy trace: block {index}, record {shape[0] - left + int(bad[0])}: size {int(r['size'])}, "
                        f"is_write {int(r['is_write'])}; expected a size of 1 to {MAX_ACCESS_BYTES} bytes and is_write 0 or 1",
                        source=name,
                    )
                left -= n
                yield arr


class _Prefixed(io.RawIOBase):
    """A read-only file object that returns ``head`` (read to detect the end of the file) and then the rest of ``f``.

    numpy's ``read_array`` only calls ``read`` on such an object, so a gzip stream is never seeked backwards.
    """

    def __init__(self, head: bytes, f):
        self.head = head
        self.f = f

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n < 0:
                out, self.head = self.head + self.f.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            if len(out) < n:
                out += self.f.read(n - len(out))
            return out
        return self.f.read(n)

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def read_trace(
    path: str | os.PathLike, fmt: str | None = None, chunk: int = CHUNK, *, default_size: int = DIN_DEFAULT_SIZE
) -> Iterator[np.ndarray]:
    """Stream the accesses of a trace file as chunks of at most ``chunk`` ACCESS records.

    ``fmt`` is one of FORMATS (None: from the suffix). ``default_size`` (bytes) is the size of every access of a
    ``din`` trace, which has no size field. Raises TraceFormatError with the file and 1-based line number of the
    first line that is not in the format. Nothing is read until the iterator is consumed.
    """
    fmt = trace_format(path, fmt)
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    if not 0 < default_size < 1 << 32:
        raise ValueError(f"default_size must be a positive number of bytes, not {default_size}")
    if fmt == "npy":
        return _read_npy(path, chunk)
    return _read_text(path, fmt, chunk, default_size)


def write_trace(chunks: Iterable[np.ndarray], path: str | os.PathLike, fmt: str | None = None) -> int:
    """Write chunks of ACCESS records to ``path`` in format ``fmt`` (None: from the suffix); returns the access count.

    ``din`` keeps only read/write and the address (sizes are lost; Dinero reads them as 4 bytes); ``xdin`` and
    ``lackey`` keep sizes; ``npy`` keeps every field. Loads and stores are written one per line (lackey's ``M``
    is never produced), so reading a written file gives back the same stream.
    """
    fmt = trace_format(path, fmt)
    count = 0
    name = os.fspath(path)
    regular = not os.path.exists(name) or (os.path.isfile(name) and not os.path.islink(name))
    try:
        f = gzip.open(name, "wb") if name.endswith(".gz") else open(name, "wb")
    except OSError as exc:
        raise output_error(exc, name, "cannot write the trace file") from None
    try:
        with f:
            for c in chunks:
                if c.dtype != ACCESS:
                    raise TypeError(f"write_trace needs chunks of gemmsim.trace.ACCESS, got dtype {c.dtype}")
                if not len(c):
                    continue
                if fmt == "npy":
                    np.save(f, np.ascontiguousarray(c), allow_pickle=False)
                else:
                    out = np.empty(40 * len(c), dtype=np.uint8)
                    nbytes = _format(c["addr"], c["size"], c["is_write"], _FMT_CODE[fmt], out)
                    f.write(out[:nbytes].tobytes())
                count += len(c)
    except BaseException as exc:  # a full disk, a signal: no half-written trace file is left behind
        if regular:  # never a pipe, a device (/dev/stdout) or a link
            try:
                os.unlink(name)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise output_error(exc, name, "cannot write the trace file") from None
        raise
    return count
