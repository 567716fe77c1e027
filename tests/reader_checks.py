"""What the reader tests compare against: an independent parse of each format written
here (plain Python, or SciPy's MatrixMarket reader), reduced to the canonical edge set
by a tiny min-dedupe of our own, and small helpers to look into a Graph."""

from __future__ import annotations

import functools
import gzip
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mgapsp.readers.lines as mlines
import mgapsp.readers.text as mio
import mgapsp
from mgapsp.errors import EmptyGraphError, GraphFormatError, UnsupportedError
from mgapsp.graph import Graph
from mgapsp.readers import FORMATS, detect_format, read_graph

DATA = Path(__file__).parent / "data"


# =============================================================================
# helpers
# =============================================================================
@functools.cache
def load(name: str, **kwargs) -> Graph:
    """Read a bundled file once per session and option set."""
    return read_graph(DATA / name, **kwargs)


def keyed(g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The graph's edges as sorted keys ``src * n + dst`` (indices) and weights."""
    return g.sources_of_edges.astype(np.int64) * g.n + g.indices, g.weights


def expected_keyed(src, dst, w, n, *, directed=True, base=0, labels=None):
    """Independent canonical edge set: both directions if undirected, min weight.
    With ``labels`` (sorted), ``src`` and ``dst`` are labels, numbered by their place
    in them."""
    if labels is not None:
        src, dst = np.searchsorted(labels, src), np.searchsorted(labels, dst)
        n = len(labels)
    src = np.asarray(src, dtype=np.int64) - base
    dst = np.asarray(dst, dtype=np.int64) - base
    w = np.ones(len(src)) if w is None else np.asarray(w, dtype=np.float64)
    if not directed:
        src, dst, w = np.r_[src, dst], np.r_[dst, src], np.r_[w, w]
    key = src * n + dst
    order = np.lexsort((w, key))
    key, w = key[order], w[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    return key[first], w[first]


def assert_same_edges(g: Graph, expected) -> None:
    key, w = keyed(g)
    ekey, ew = expected
    assert len(key) == len(ekey)
    np.testing.assert_array_equal(key, ekey)
    np.testing.assert_array_equal(w, ew)


def dense(g: Graph) -> np.ndarray:
    """Adjacency matrix with inf where there is no edge (zero weights stay 0)."""
    d = np.full((g.n, g.n), np.inf)
    d[g.sources_of_edges, g.indices] = g.weights
    return d


def weight_of(g: Graph, u: int, v: int) -> float:
    """Weight of the edge between input ids u and v."""
    i, j = (int(x) for x in g.index_of([u, v]))
    lo, hi = g.indptr[i], g.indptr[i + 1]
    k = lo + int(np.searchsorted(g.indices[lo:hi], j))
    assert k < hi and g.indices[k] == j, f"no edge {u} -> {v}"
    return float(g.weights[k])


def text_lines(name: str) -> list[str]:
    path = DATA / name
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return fh.read().splitlines()


# --- independent parsers ------------------------------------------------------
def parse_columns(name, sep=None, comment="#", w_col=None):
    rows = [line.split(sep) for line in text_lines(name)
            if line.strip() and not line.startswith(comment)]
    src = [int(r[0]) for r in rows]
    dst = [int(r[1]) for r in rows]
    w = None if w_col is None else [float(r[w_col]) for r in rows]
    return src, dst, w


def parse_dimacs(name):
    rows = [line.split() for line in text_lines(name) if line.startswith("a ")]
    header = next(line.split() for line in text_lines(name) if line.startswith("p "))
    return ([int(r[1]) for r in rows], [int(r[2]) for r in rows],
            [float(r[3]) for r in rows], int(header[2]), int(header[3]))


def parse_pace(name):
    lines = text_lines(name)
    header = next(line.split() for line in lines if line.startswith("p "))
    body = np.array(" ".join(line for line in lines
                             if line and line[0] not in "cp").split(), dtype=np.int64)
    return body[0::2], body[1::2], int(header[2]), int(header[3])


def parse_tntp(name, column):
    text = "\n".join(text_lines(name))
    meta, body = text.split("<END OF METADATA>")
    n = int(re.search(r"<NUMBER OF NODES>\s*(\d+)", meta).group(1))
    links = int(re.search(r"<NUMBER OF LINKS>\s*(\d+)", meta).group(1))
    header = None
    rows = []
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("~"):
            header = header or s.strip("~; \t").split()
        elif s:
            rows.append(s.rstrip(";").split())
    col = header.index(column)
    return ([int(r[0]) for r in rows], [int(r[1]) for r in rows],
            [float(r[col]) for r in rows], n, links)


def tsplib_positions(n: int, fmt: str) -> list[tuple[int, int]]:
    """(row, col) of each number of EDGE_WEIGHT_FORMAT, from the TSPLIB95 text."""
    r = range(n)
    return {
        "FULL_MATRIX": [(i, j) for i in r for j in r],
        "UPPER_ROW": [(i, j) for i in r for j in range(i + 1, n)],
        "LOWER_ROW": [(i, j) for i in r for j in range(i)],
        "UPPER_DIAG_ROW": [(i, j) for i in r for j in range(i, n)],
        "LOWER_DIAG_ROW": [(i, j) for i in r for j in range(i + 1)],
        "UPPER_COL": [(i, j) for j in r for i in range(j)],
        "LOWER_COL": [(i, j) for j in r for i in range(j + 1, n)],
        "UPPER_DIAG_COL": [(i, j) for j in r for i in range(j + 1)],
        "LOWER_DIAG_COL": [(i, j) for j in r for i in range(j, n)],
    }[fmt]


def parse_tsplib(name):
    """Full weight matrix (diagonal = inf) and the TYPE."""
    lines = text_lines(name)
    head = {}
    for k, line in enumerate(lines):
        if line.strip() == "EDGE_WEIGHT_SECTION":
            break
        key, _, value = line.partition(":")
        head[key.strip()] = value.strip()
    numbers = []
    for line in lines[k + 1:]:
        if line.strip() and line.strip()[0].isalpha():
            break
        numbers += [float(x) for x in line.split()]
    n = int(head["DIMENSION"])
    fmt = head["EDGE_WEIGHT_FORMAT"]
    pos = tsplib_positions(n, fmt)
    assert len(numbers) == len(pos)
    m = np.full((n, n), np.nan)
    for (i, j), x in zip(pos, numbers):
        m[i, j] = x
        if fmt != "FULL_MATRIX":
            m[j, i] = x
    np.fill_diagonal(m, np.inf)
    return m, head["TYPE"].split()[0]
