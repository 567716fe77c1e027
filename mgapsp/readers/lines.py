"""A graph file's lines: opened, gunzipped and decoded as UTF-8, checked against the
memory, and walked a block at a time (:class:`TextLines`), so that reading a file of
records holds one block of text and the arrays made from the blocks before it."""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from dataclasses import dataclass

from ..errors import GraphFormatError
from ..graph import check_memory


def _is_gzip(path: str, head: bytes) -> bool:
    return path.lower().endswith(".gz") or head[:2] == b"\x1f\x8b"


def _open_error(path: str, exc: OSError) -> GraphFormatError:
    if isinstance(exc, FileNotFoundError):
        return GraphFormatError("no such file", path)
    if isinstance(exc, IsADirectoryError):
        return GraphFormatError("is a directory, not a graph file", path)
    return GraphFormatError(f"cannot read the file: {exc.strerror or exc}", path)


def _decode(data: bytes | bytearray, path: str, first_line: int = 1,
            cut: bool = False, start: bool = True) -> str:
    """UTF-8 text, or one line saying why it is not: a UTF-16 file (its byte-order
    mark or its NUL bytes), binary data, bytes of another encoding (two labels that
    differ in one such letter must never be read as one).  ``cut``: ``data`` may end
    inside a character (a line cut short), which is then dropped."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4096]:
        what = ("UTF-16 or UTF-32 (save it as UTF-8)" if data[:2] in (b"\xff\xfe",
                b"\xfe\xff") or data[1:2] == b"\x00" or data[:1] == b"\x00"
                else "binary data")
        raise GraphFormatError(f"not UTF-8 text: {what}", path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut and exc.reason == "unexpected end of data":
            return _decode(data[:exc.start], path, first_line)
        line = first_line + data.count(b"\n", 0, exc.start)
        raise GraphFormatError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} (Latin-1 "
                               "or another encoding? save it as UTF-8)", path, line) from None
    if start and text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


#: Reading a file holds its bytes, their text and its lines at once: this many times
#: its (decompressed) size, and :data:`_LINE_BYTES` per line on top (a str object and
#: its place in two lists, its record's copy, the parsed values).
_READ_FACTOR = 3
#: measured: 16.8 million lines of ``0 1`` (a 64 MB file) peaked at 3.9 GB
_LINE_BYTES = 240
#: Bytes read or decompressed at a time, each step checked against the memory left.
_READ_STEP = 1 << 24


def _check_read(path: str, size: int, lines: int, what: str) -> None:
    """Refuse a file whose text and lines the process cannot hold."""
    check_memory(f"the file {what} {size:,} bytes in {lines:,} line"
                 f"{'' if lines == 1 else 's'}",
                 _READ_FACTOR * size + _LINE_BYTES * lines, where=path,
                 subject="reading it")


def _read_stream(fh, path: str) -> bytearray:
    """All of ``fh``, a file that cannot be read twice (a pipe, a device), refused as
    soon as its text and lines would not fit."""
    data = bytearray()
    lines = 0
    while chunk := fh.read(_READ_STEP):
        data += chunk
        lines += chunk.count(b"\n")
        _check_read(path, len(data), lines, "holds more than")
    return data


#: Text decoded and split at a time by :class:`TextLines` (cut at a line's end); a
#: block of the shortest records (``0 1``) holds about :data:`_LINE_BYTES` per line.
_BLOCK_BYTES = 1 << 20
BLOCK_PEAK = _BLOCK_BYTES // 4 * _LINE_BYTES
#: A record's bytes at the peak of reading a file into a graph: its source and target
#: (int64) and weight (float64) as read, and the sort key and the CSR made from them.
RECORD_PEAK_BYTES = 52


class TextLines:
    """The lines of a graph file (gunzipped when needed), read from the start each time
    they are walked, a block of about :data:`_BLOCK_BYTES` at a time: a header is read
    by walking the first lines, the records by :meth:`records`, and no more than a
    block of text is held at once.  :meth:`all` holds every line (for formats that
    need them together)."""

    def __init__(self, path: str):
        self.path = path
        #: the bytes of a file that cannot be read twice (a pipe, a device), read once
        self._data: bytes | bytearray | None = None
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                if stat.S_ISREG(st.st_mode):
                    head = fh.read(2)
                else:
                    self._data = head = _read_stream(fh, path)
        except OSError as exc:
            raise _open_error(path, exc) from None
        self._gzip = _is_gzip(path, head[:2])
        # a regular file's lines are counted before its records are read; a stream's
        # (gzip, a pipe) are checked against the memory as they come
        self.counted = self._data is None and not self._gzip
        self._size = st.st_size

    def _pieces(self):
        """The file's bytes in pieces that each end at a line's end (the last one, at
        the file's)."""
        try:
            fh = open(self.path, "rb") if self._data is None else io.BytesIO(self._data)
        except OSError as exc:
            raise _open_error(self.path, exc) from None
        with fh:
            raw = gzip.GzipFile(fileobj=fh) if self._gzip else fh
            buf = bytearray()
            try:
                while piece := raw.read(_BLOCK_BYTES):
                    new = len(buf) - 1          # the carried bytes hold no line end but
                    buf += piece                # perhaps a last \r (of a \r\n?)
                    del piece
                    # the last \n, or a lone \r before the last byte
                    cut = max(buf.rfind(b"\n", max(new, 0)),
                              buf.rfind(b"\r", max(new, 0), len(buf) - 1)) + 1
                    if cut:
                        yield bytes(buf[:cut])
                        del buf[:cut]
                    elif len(buf) > 4 * _BLOCK_BYTES:      # a line without end
                        _check_read(self.path, len(buf), 1, "decompresses to more than"
                                    if self._gzip else "holds more than")
            except (OSError, EOFError, zlib.error) as exc:
                raise GraphFormatError(f"not readable as gzip: {exc}", self.path) from None
            if buf:
                yield bytes(buf)

    def blocks(self):
        """``(number of the first line, lines)`` of each block, from the first."""
        lineno = 1
        for data in self._pieces():
            text = _decode(data, self.path, lineno, start=lineno == 1)
            del data
            lines = text.split("\n")
            del text
            if lines and lines[-1] == "":
                lines.pop()
            _check_fields(lines, self.path, lineno - 1)
            yield lineno, lines
            lineno += len(lines)

    def __iter__(self):
        for _, lines in self.blocks():
            yield from lines

    def all(self) -> list[str]:
        """Every line at once (for formats whose records run across lines): a regular
        file refused before it is read where its text and lines would not fit, a
        stream as soon as they outgrow what is left."""
        self.check_size(lambda lines: _READ_FACTOR * self._size + _LINE_BYTES * lines)
        out: list[str] = []
        size = 0
        for _, block in self.blocks():
            out += block
            if not self.counted:
                size += sum(map(len, block))
                _check_read(self.path, size, len(out), "decompresses to more than"
                            if self._gzip else "holds more than")
        return out

    def check_size(self, need=lambda lines: RECORD_PEAK_BYTES * lines + BLOCK_PEAK) -> None:
        """Refuse a regular file whose lines would need more than there is (``need``
        of their count; by default, as records), before it is read: its lines counted
        in its bytes, none kept."""
        if not self.counted:
            return
        lines = 0
        try:
            with open(self.path, "rb") as fh:
                while piece := fh.read(_READ_STEP):
                    lines += piece.count(b"\n")
        except OSError as exc:
            raise _open_error(self.path, exc) from None
        check_memory(f"the file holds {self._size:,} bytes in {lines:,} lines",
                     need(lines), where=self.path, subject="reading it")

    def records(self, start: int, comments: tuple[str, ...], cut: str | None = None):
        """The records from line index ``start`` on: see :class:`RecordBlocks`."""
        return RecordBlocks(self, start, comments, cut)


@dataclass(frozen=True)
class RecordBlocks:
    """Records of a file, block by block: ``(rows, line numbers)`` of the non-blank,
    non-comment lines from line index ``start`` (stripped; cut at ``cut``).  Each walk
    reads the file again."""

    lines: TextLines
    start: int
    comments: tuple[str, ...]
    cut: str | None = None

    def __iter__(self):
        self.lines.check_size()
        for lineno, block in self.lines.blocks():
            skip = self.start - (lineno - 1)
            if skip >= len(block):
                continue
            yield select_fields(block, max(skip, 0), self.comments, self.cut,
                                offset=lineno - 1)


#: most characters of one field (a number or a label) in a text file
MAX_FIELD = 1000


def _check_fields(lines: list[str], path: str, offset: int = 0) -> None:
    """Refuse a field longer than :data:`MAX_FIELD`: NumPy's text arrays give every
    element the width of the longest, so one 50 MB number took 0.6 GB to refuse.
    Only lines longer than that are looked into."""
    for i, line in enumerate(lines):
        if len(line) > MAX_FIELD:
            longest = max(line.replace(",", " ").split(), key=len, default="")
            if len(longest) > MAX_FIELD:
                raise GraphFormatError(f"a field of {len(longest):,} characters "
                                       f"({longest[:20]}...); numbers and labels have "
                                       f"at most {MAX_FIELD:,}", path, offset + i + 1)


#: Longest start of a line :func:`iter_lines` keeps (the rest is skipped, unread).
_SNIFF_LINE = 1 << 16


def iter_lines(path: str):
    """Lines of the file, read lazily (for sniffing a header); each cut after
    :data:`_SNIFF_LINE` bytes, so that a line without end costs no memory."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            raw = gzip.GzipFile(fileobj=fh) if _is_gzip(path, head) else fh
            try:
                lineno = 0
                while line := raw.readline(_SNIFF_LINE):
                    lineno += 1
                    yield _decode(line, path, lineno, cut=not line.endswith(b"\n")
                                  ).rstrip("\n")
                    while not line.endswith(b"\n") and len(line) == _SNIFF_LINE:
                        line = raw.readline(_SNIFF_LINE)     # the line's tail: skipped
            except (OSError, EOFError, zlib.error) as exc:
                raise GraphFormatError(f"not readable as gzip: {exc}", path) from None
    except OSError as exc:
        raise _open_error(path, exc) from None


def _record_text(line: str, comments: tuple[str, ...], cut: str | None) -> str:
    """``line`` stripped (cut at ``cut``), or "" where it is blank or a comment."""
    if cut is not None:
        line = line.partition(cut)[0]
    line = line.strip()
    return "" if line.startswith(comments) else line


def first_field_line(lines, start: int, comments: tuple[str, ...],
                     cut: str | None = None) -> tuple[int, str] | None:
    """The index and text of the first line from index ``start`` on that
    :func:`select_fields` would keep, or None."""
    for i, line in enumerate(lines):
        if i >= start and (text := _record_text(line, comments, cut)):
            return i, text
    return None


def select_fields(lines: list[str], start: int, comments: tuple[str, ...],
                  cut: str | None = None, offset: int = 0) -> tuple[list[str], list[int]]:
    """The non-blank, non-comment lines of ``lines[start:]`` (stripped; cut at ``cut``)
    and their numbers (``lines[0]`` being line ``offset + 1``)."""
    rows: list[str] = []
    linenos: list[int] = []
    for i in range(start, len(lines)):
        if text := _record_text(lines[i], comments, cut):
            rows.append(text)
            linenos.append(offset + i + 1)
    return rows, linenos
