"""Tests of mgapsp.io: every bundled file, every format's error cases, the options.

Each bundled file is checked against an independent parse written here (plain Python,
or SciPy's MatrixMarket reader), reduced to the canonical edge set by a tiny
min-dedupe of our own, and against counts stated in tests/data/SOURCES.md.
"""

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


# =============================================================================
# bundled files
# =============================================================================
# name: (n, unique directed edges m, directed, weighted, id_base)
BUNDLED = {
    "p2p-Gnutella08.txt": (6301, 20777, True, False, 0),
    "p2p-Gnutella09.txt": (8114, 26013, True, False, 0),
    "p2p-Gnutella31.txt": (62586, 147892, True, False, 0),
    "CA-GrQc.txt": (5242, 28980, True, False, None),          # SNAP: 5,242 nodes
    "soc-sign-bitcoinalpha.csv": (3783, 24186, True, True, None),  # SNAP: 3,783 nodes
    "cugraph_toy_graph.csv": (6, 16, True, True, 0),
    "rome99.gr": (3353, 8859, True, True, 1),  # 8870 arcs, 11 parallel
    "NY.pace.gr.gz": (264346, 2 * 365050, False, False, 1),
    "ldbc-directed-example.mtx": (10, 17, True, True, 1),
    "test_FW_1000.mtx": (1000, 3996, True, True, 1),
    "USAir97.mtx": (332, 2 * 2126, False, True, 1),
    "karate.mtx": (34, 2 * 78, False, False, 1),
    "netscience.mtx": (1589, 2 * 2742, False, True, 1),
    "SiouxFalls_net.tntp": (24, 76, True, True, 1),
    "Anaheim_net.tntp": (416, 914, True, True, 1),
    "ChicagoSketch_net.tntp": (933, 2950, True, True, 1),
    "Austin_net.tntp": (7388, 18956, True, True, 1),  # 18961 links, 5 parallel
    "bays29.tsp": (29, 29 * 28, False, True, 1),
    "br17.atsp": (17, 17 * 16, True, True, 1),
    "brg180.tsp": (180, 180 * 179, False, True, 1),
    "ftv170.atsp": (171, 171 * 170, True, True, 1),
    "ftv33.atsp": (34, 34 * 33, True, True, 1),
    "gr120.tsp": (120, 120 * 119, False, True, 1),
    "gr17.tsp": (17, 17 * 16, False, True, 1),
    "si175.tsp": (175, 175 * 174, False, True, 1),
}


def test_every_data_file_is_covered(data_dir):
    on_disk = {p.name for p in data_dir.iterdir() if p.name != "SOURCES.md"}
    assert on_disk == set(BUNDLED)
    sources = (data_dir / "SOURCES.md").read_text()
    for name in BUNDLED:
        assert f"| {name} |" in sources


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_sizes_and_flags(data_dir, name):
    n, m, directed, weighted, base = BUNDLED[name]
    g = load(name)
    assert (g.n, g.m, g.directed, g.weighted) == (n, m, directed, weighted)
    assert g.name == name
    if base is None:        # sparse ids: the vertices that exist, labelled by their id
        assert g.id_base is None and g.labels.dtype == np.int64
        assert np.all(np.diff(g.labels) > 0)
    else:
        np.testing.assert_array_equal(g.vertex_ids, np.arange(n) + base)
        assert g.id_base == base
    assert np.all(np.diff(g.indptr) >= 0) and g.indptr[-1] == g.m
    if not weighted:
        assert np.all(g.weights == 1.0)


@pytest.mark.parametrize("name", ["p2p-Gnutella08.txt", "p2p-Gnutella09.txt",
                                  "p2p-Gnutella31.txt", "CA-GrQc.txt"])
def test_snap_matches_independent_parse(name):
    """Vertices are the distinct ids, numbered in sorted order (dense 0-based ids keep
    their numbers)."""
    src, dst, _ = parse_columns(name)
    g = load(name)
    labels = np.unique(np.r_[src, dst])
    np.testing.assert_array_equal(g.labels, labels)
    assert_same_edges(g, expected_keyed(src, dst, None, g.n, labels=labels))


def test_snap_header_counts_agree():
    for name in ("p2p-Gnutella08.txt", "p2p-Gnutella09.txt", "p2p-Gnutella31.txt"):
        head = "\n".join(text_lines(name)[:4])
        nodes, edges = map(int, re.search(r"Nodes: (\d+) Edges: (\d+)", head).groups())
        g = load(name)
        assert (g.n, g.m) == (nodes, edges)


def test_ca_grqc_self_loops_kept():
    g = load("CA-GrQc.txt")
    assert int(np.sum(g.sources_of_edges == g.indices)) == 12


def test_csv_bitcoin_matches_independent_parse():
    src, dst, w = parse_columns("soc-sign-bitcoinalpha.csv", sep=",", w_col=2)
    g = load("soc-sign-bitcoinalpha.csv")
    labels = np.unique(np.r_[src, dst])
    np.testing.assert_array_equal(g.labels, labels)
    assert_same_edges(g, expected_keyed(src, dst, w, g.n, labels=labels))
    assert weight_of(g, 7188, 1) == 10.0  # first line "7188,1,10,1407470400"
    assert g.min_weight == -10.0 and g.has_negative_weights
    assert int(np.sum(g.weights < 0)) == 1536


def test_csv_toy_is_space_separated():
    src, dst, w = parse_columns("cugraph_toy_graph.csv", w_col=2)
    g = load("cugraph_toy_graph.csv")
    assert_same_edges(g, expected_keyed(src, dst, w, 6))
    assert weight_of(g, 0, 1) == 0.1
    assert weight_of(g, 3, 5) == 7.2
    assert weight_of(g, 5, 4) == 3.2


def test_dimacs_rome99_matches_independent_parse():
    src, dst, w, n, m = parse_dimacs("rome99.gr")
    assert (n, m, len(src)) == (3353, 8870, 8870)
    g = load("rome99.gr")
    assert_same_edges(g, expected_keyed(src, dst, w, n, base=1))
    assert weight_of(g, 2958, 2959) == 535.0  # first arc line "a 2958 2959 535"
    assert (g.weights.min(), g.weights.max()) == (1.0, 12711.0)


def test_pace_ny_matches_independent_parse():
    src, dst, n, m = parse_pace("NY.pace.gr.gz")
    assert (n, m, len(src)) == (264346, 365050, 365050)
    g = load("NY.pace.gr.gz")
    assert_same_edges(g, expected_keyed(src, dst, None, n, directed=False, base=1))
    assert weight_of(g, 1, 2) == 1.0 and weight_of(g, 2, 1) == 1.0


@pytest.mark.parametrize("name", ["ldbc-directed-example.mtx", "test_FW_1000.mtx",
                                  "USAir97.mtx", "karate.mtx", "netscience.mtx"])
def test_mtx_matches_scipy_mmread(name):
    coo = scipy.sparse.coo_array(scipy.io.mmread(DATA / name))
    g = load(name)
    assert g.n == coo.shape[0]
    w = coo.data.astype(np.float64) if g.weighted else None
    assert_same_edges(g, expected_keyed(coo.row, coo.col, w, g.n))


def test_mtx_spot_values():
    ldbc = load("ldbc-directed-example.mtx")
    assert weight_of(ldbc, 1, 3) == 0.5  # "1 3 0.5"
    assert weight_of(ldbc, 9, 4) == 0.69
    fw = load("test_FW_1000.mtx")
    assert weight_of(fw, 1, 1) == 50.0  # diagonal entries are self-loops
    assert weight_of(fw, 2, 1) == 0.0  # explicit zeros are zero-weight edges
    assert int(np.sum(fw.sources_of_edges == fw.indices)) == 1000
    air = load("USAir97.mtx")
    assert weight_of(air, 2, 1) == weight_of(air, 1, 2) == 0.0436  # "2 1 .0436"


@pytest.mark.parametrize("name", ["SiouxFalls_net.tntp", "Anaheim_net.tntp",
                                  "ChicagoSketch_net.tntp", "Austin_net.tntp"])
@pytest.mark.parametrize("column", ["length", "free_flow_time"])
def test_tntp_matches_independent_parse(name, column):
    src, dst, w, n, links = parse_tntp(name, column)
    assert len(src) == links
    g = load(name) if column == "length" else load(name, weight_column=column)
    assert_same_edges(g, expected_keyed(src, dst, w, n, base=1))


def test_tntp_spot_values():
    sioux = load("SiouxFalls_net.tntp")
    assert weight_of(sioux, 1, 2) == 6.0  # "1 2 25900.20064 6 6 ..."
    assert weight_of(load("SiouxFalls_net.tntp", weight_column="capacity"), 1, 2) == \
        25900.20064
    assert weight_of(load("Anaheim_net.tntp"), 1, 117) == 5280.0
    assert weight_of(load("Anaheim_net.tntp", weight_column="free_flow_time"), 1, 117) \
        == 1.090458488
    assert weight_of(load("Austin_net.tntp"), 1, 2) == 1.794821
    chicago = load("ChicagoSketch_net.tntp", weight_column="free_flow_time")
    assert weight_of(chicago, 1, 547) == 0.0  # zero free-flow time is an edge


@pytest.mark.parametrize("name", ["bays29.tsp", "br17.atsp", "brg180.tsp",
                                  "ftv170.atsp", "ftv33.atsp", "gr120.tsp",
                                  "gr17.tsp", "si175.tsp"])
def test_tsplib_matches_independent_parse(name):
    full, kind = parse_tsplib(name)
    g = load(name)
    expected = full if kind == "ATSP" else np.minimum(full, full.T)
    np.testing.assert_array_equal(dense(g), expected)
    assert g.directed == (kind == "ATSP")
    assert not np.any(g.sources_of_edges == g.indices)  # diagonal placeholders dropped


def test_tsplib_spot_values():
    assert weight_of(load("bays29.tsp"), 1, 2) == 107.0
    assert weight_of(load("br17.atsp"), 1, 2) == 3.0
    assert weight_of(load("br17.atsp"), 1, 12) == 0.0
    assert weight_of(load("brg180.tsp"), 1, 2) == 20.0  # UPPER_ROW starts at (1, 2)
    assert weight_of(load("brg180.tsp"), 2, 1) == 20.0
    assert weight_of(load("ftv170.atsp"), 1, 2) == 9.0
    assert weight_of(load("ftv33.atsp"), 1, 2) == 26.0
    gr17 = load("gr17.tsp")  # LOWER_DIAG_ROW "0 633 0 257 390 0 ..."
    assert weight_of(gr17, 2, 1) == weight_of(gr17, 1, 2) == 633.0
    assert weight_of(gr17, 3, 1) == 257.0 and weight_of(gr17, 3, 2) == 390.0
    assert weight_of(load("gr120.tsp"), 2, 1) == 534.0
    si = load("si175.tsp")  # UPPER_DIAG_ROW "0 113 189 ..."
    assert weight_of(si, 1, 2) == 113.0 and weight_of(si, 3, 1) == 189.0


def test_large_files_parse_whole():
    """The bundled large files read whole (their speed is bench/'s business, not a
    test's: a loaded machine missed a 2 s bound here)."""
    assert read_graph(DATA / "NY.pace.gr.gz").n == 264_346
    assert read_graph(DATA / "p2p-Gnutella31.txt").n == 62_586


@pytest.mark.parametrize("name", sorted(n for n in BUNDLED
                                  if not n.endswith((".tsp", ".atsp"))))
def test_bundled_fast_and_reference_paths_agree(monkeypatch, name):
    # (TSPLIB is not line records: it has a single pass.)
    fast = load(name)
    # The bundled files must take the fast path ...
    def refuse(*args, **kwargs):
        raise AssertionError("reference pass used")
    monkeypatch.setattr(mio, "_convert_slow", refuse)
    assert read_graph(DATA / name).fingerprint == fast.fingerprint
    monkeypatch.undo()
    # ... and the reference pass must give the same graph.
    monkeypatch.setattr(mio, "_convert_fast", lambda *args: None)
    assert read_graph(DATA / name).fingerprint == fast.fingerprint


@pytest.mark.parametrize("name", sorted(n for n in BUNDLED
                                  if not n.endswith((".tsp", ".atsp"))))
def test_bundled_files_read_in_small_blocks_give_the_same_graph(monkeypatch, name):
    """A file is read a block of text at a time; blocks of 4 KiB (hundreds of them per
    file, cut at line ends) give the graph of one block."""
    whole = load(name)
    monkeypatch.setattr(mlines, "_BLOCK_BYTES", 4096)
    assert read_graph(DATA / name).fingerprint == whole.fingerprint


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_line_ends_across_block_boundaries(tmp_path, monkeypatch, end):
    """Blocks of 7 bytes cut between every pair of characters somewhere, a \\r\\n
    included: the same graph, and a bad record's own line number."""
    rows = [f"{i} {(i * 7) % 50} {i % 9 + 1}" for i in range(300)]
    good = tmp_path / "g.txt"
    good.write_bytes(end.join(["# arcs"] + rows).encode() + end.encode())
    bad = tmp_path / "b.txt"
    bad.write_bytes(end.join(["# arcs"] + rows[:200] + ["1 2 x"] + rows[200:]).encode())
    whole = read_graph(good)
    monkeypatch.setattr(mlines, "_BLOCK_BYTES", 7)
    assert read_graph(good).fingerprint == whole.fingerprint
    with pytest.raises(GraphFormatError, match=r"b\.txt:202: weight 'x' is not a number"):
        read_graph(bad)


@pytest.mark.parametrize("name", ["rome99.gr", "p2p-Gnutella08.txt"])
def test_a_graph_read_through_a_pipe(tmp_path, name):
    """A named pipe is read once (its header and records cannot be read again)."""
    import os
    import threading
    fifo = tmp_path / name
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes((DATA / name).read_bytes()))
    writer.start()
    try:
        g = read_graph(fifo)
    finally:
        writer.join(timeout=30)
    assert g.fingerprint == load(name).fingerprint


def test_labels_that_turn_to_text_in_a_later_block_are_all_text(tmp_path, monkeypatch):
    """Integer labels in the first blocks, a text label later: every label is read
    again as text, so ``007`` stays ``007`` (as it would in one block), not 7."""
    path = tmp_path / "labels.txt"
    path.write_text("007 1\n" + "".join(f"{i} {i + 1}\n" for i in range(2, 400)) + "x 7\n")
    whole = read_graph(path)
    monkeypatch.setattr(mlines, "_BLOCK_BYTES", 64)
    g = read_graph(path)
    assert g.fingerprint == whole.fingerprint
    ids = list(g.vertex_ids)
    assert "007" in ids and "7" in ids and "x" in ids and 7 not in ids


# =============================================================================
# format detection
# =============================================================================
@pytest.mark.parametrize("name, fmt", [
    ("p2p-Gnutella08.txt", "snap"), ("soc-sign-bitcoinalpha.csv", "csv"),
    ("rome99.gr", "dimacs"), ("NY.pace.gr.gz", "pace"), ("karate.mtx", "mtx"),
    ("Austin_net.tntp", "tntp"), ("bays29.tsp", "tsplib"), ("br17.atsp", "tsplib"),
])
def test_detect_format_bundled(data_dir, name, fmt):
    assert detect_format(data_dir / name) == fmt
    assert detect_format(str(data_dir / name)) == fmt


@pytest.mark.parametrize("name, fmt", [
    ("g.txt", "snap"), ("g.edges", "snap"), ("g.el", "snap"), ("g.csv", "csv"),
    ("g.tsv", "tsv"), ("g.mtx", "mtx"), ("g.tntp", "tntp"), ("x_net.tntp", "tntp"),
    ("g.tsp", "tsplib"), ("g.atsp", "tsplib"), ("G.TXT.GZ", "snap"),
    ("g.mtx.gz", "mtx"), ("g.tsp.gz", "tsplib"),
])
def test_detect_format_by_extension(name, fmt):
    assert detect_format(name) == fmt  # no need for the file to exist


def test_detect_format_gr_sniffs_p_line(tmp_path):
    (tmp_path / "a.gr").write_text("c comment\np sp 2 1\na 1 2 3\n")
    (tmp_path / "b.gr").write_text("c comment\np tw 2 1\n1 2\n")
    with gzip.open(tmp_path / "c.gr.gz", "wt") as fh:
        fh.write("p tw 2 1\n1 2\n")
    assert detect_format(tmp_path / "a.gr") == "dimacs"
    assert detect_format(tmp_path / "b.gr") == "pace"
    assert detect_format(tmp_path / "c.gr.gz") == "pace"
    assert FORMATS == ("snap", "csv", "tsv", "dimacs", "pace", "mtx", "tntp", "tsplib")


def test_unknown_extension_lists_formats(tmp_path):
    path = tmp_path / "graph.xyz"
    path.write_text("0 1\n")
    for call in (lambda: detect_format(path), lambda: read_graph(path)):
        with pytest.raises(GraphFormatError) as info:
            call()
        msg = str(info.value)
        assert "graph.xyz" in msg and "'.xyz'" in msg
        assert all(f in msg for f in FORMATS)
    assert read_graph(path, format="snap").m == 1


def test_no_extension(tmp_path):
    path = tmp_path / "edges"
    path.write_text("0 1\n")
    with pytest.raises(GraphFormatError, match="extension"):
        read_graph(path)


def test_unknown_format_value(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n")
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, format="graphml")
    msg = str(info.value)
    assert "'graphml'" in msg and all(f in msg for f in FORMATS) and "g.txt" in msg


def test_missing_file(tmp_path):
    path = tmp_path / "nope.txt"
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    assert "no such file" in str(info.value) and str(path) in str(info.value)
    with pytest.raises(GraphFormatError, match="no such file"):
        detect_format(tmp_path / "nope.gr")


def test_directory_is_not_a_graph(tmp_path):
    (tmp_path / "dir.txt").mkdir()
    with pytest.raises(GraphFormatError, match="directory"):
        read_graph(tmp_path / "dir.txt")


def test_format_override(tmp_path):
    # A space-separated .dat file read as SNAP and as CSV; a .txt read as CSV.
    shutil.copy(DATA / "cugraph_toy_graph.csv", tmp_path / "toy.dat")
    ref = load("cugraph_toy_graph.csv")
    assert read_graph(tmp_path / "toy.dat", format="snap").fingerprint == ref.fingerprint
    assert read_graph(tmp_path / "toy.dat", format="CSV").fingerprint == ref.fingerprint
    shutil.copy(DATA / "rome99.gr", tmp_path / "rome.txt")
    assert read_graph(tmp_path / "rome.txt", format="dimacs").fingerprint == \
        load("rome99.gr").fingerprint


# =============================================================================
# gzip, line endings, options
# =============================================================================
@pytest.mark.parametrize("name", ["cugraph_toy_graph.csv", "rome99.gr", "karate.mtx",
                                  "SiouxFalls_net.tntp", "gr17.tsp",
                                  "p2p-Gnutella08.txt"])
def test_gzip_equals_plain(tmp_path, name):
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress((DATA / name).read_bytes()))
    plain = load(name)
    g = read_graph(gz)
    assert g.fingerprint == plain.fingerprint
    np.testing.assert_array_equal(g.vertex_ids, plain.vertex_ids)
    assert (g.directed, g.weighted, g.name) == (plain.directed, plain.weighted, gz.name)


def test_gzip_detected_by_magic_bytes(tmp_path):
    path = tmp_path / "toy.csv"  # gzip content, no .gz suffix
    path.write_bytes(gzip.compress((DATA / "cugraph_toy_graph.csv").read_bytes()))
    assert read_graph(path).fingerprint == load("cugraph_toy_graph.csv").fingerprint


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(b"0 1\n1 2\n")
    with pytest.raises(GraphFormatError, match="gzip") as info:
        read_graph(path)
    assert "bad.txt.gz" in str(info.value)


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "crlf.gr"
    path.write_bytes((DATA / "rome99.gr").read_bytes().replace(b"\n", b"\r\n"))
    assert read_graph(path).fingerprint == load("rome99.gr").fingerprint


def test_directed_override():
    karate = load("karate.mtx", directed=True)  # only the listed lower triangle
    assert (karate.directed, karate.m) == (True, 78)
    assert np.all(karate.sources_of_edges > karate.indices)
    gnu = load("p2p-Gnutella09.txt", directed=False)
    src, dst, _ = parse_columns("p2p-Gnutella09.txt")
    assert gnu.directed is False
    assert_same_edges(gnu, expected_keyed(src, dst, None, gnu.n, directed=False))
    sym = gnu.to_scipy()
    assert (sym != sym.T).nnz == 0


def test_directed_override_tsplib():
    full, _ = parse_tsplib("br17.atsp")
    g = load("br17.atsp", directed=False)  # both directions, minimum weight
    assert g.directed is False
    np.testing.assert_array_equal(dense(g), np.minimum(full, full.T))
    bays = load("bays29.tsp", directed=True)
    assert bays.directed is True and bays.m == 29 * 28
    np.testing.assert_array_equal(dense(bays), parse_tsplib("bays29.tsp")[0])


def test_unweighted_option():
    for name in ("rome99.gr", "USAir97.mtx", "soc-sign-bitcoinalpha.csv",
                 "SiouxFalls_net.tntp", "gr17.tsp", "cugraph_toy_graph.csv"):
        g, w = load(name, unweighted=True), load(name)
        assert g.weighted is False and np.all(g.weights == 1.0)
        np.testing.assert_array_equal(g.indptr, w.indptr)
        np.testing.assert_array_equal(g.indices, w.indices)


def test_unweighted_skips_weight_fields(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("0 1 abc\n1 2 nan\n")
    g = read_graph(path, unweighted=True)
    assert (g.n, g.m, g.weighted) == (3, 2, False)


def test_weight_column_csv(tmp_path):
    src, dst, t = parse_columns("soc-sign-bitcoinalpha.csv", sep=",", w_col=3)
    g = load("soc-sign-bitcoinalpha.csv", weight_column=3)
    assert_same_edges(g, expected_keyed(src, dst, t, g.n, labels=g.labels))
    assert weight_of(g, 7188, 1) == 1407470400.0
    # by header name (exact or any case), with a header row and comments
    path = tmp_path / "rated.csv"
    path.write_text("# trust\nSOURCE,TARGET,RATING,TIME\n0,1,-2,100\n1,2,5,200\n")
    by_name = read_graph(path, weight_column="TIME")
    assert weight_of(by_name, 0, 1) == 100.0
    assert weight_of(read_graph(path, weight_column="rating"), 0, 1) == -2.0
    assert weight_of(read_graph(path), 0, 1) == -2.0  # default: column 2
    assert weight_of(read_graph(path, weight_column=3), 1, 2) == 200.0


def test_weight_column_tntp_by_index():
    g = load("SiouxFalls_net.tntp", weight_column=4)
    assert g.fingerprint == load("SiouxFalls_net.tntp",
                                 weight_column="free_flow_time").fingerprint


def test_weight_column_rejected_for_other_formats():
    with pytest.raises(UnsupportedError, match="weight_column"):
        read_graph(DATA / "karate.mtx", weight_column=2)


def test_tsv_with_header(tmp_path):
    path = tmp_path / "g.tsv"
    path.write_text("from\tto\tcost\n0\t1\t2.5\n1\t2\t3.5\n")
    g = read_graph(path)
    assert (g.n, g.m, weight_of(g, 1, 2)) == (3, 2, 3.5)
    assert read_graph(path, weight_column="cost").fingerprint == g.fingerprint


def test_duplicates_keep_min_and_self_loops(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("0 1 5\n0 1 2\n0 1 7\n2 2 4\n")
    g = read_graph(path)
    assert (g.n, g.m) == (3, 2)
    assert weight_of(g, 0, 1) == 2.0 and weight_of(g, 2, 2) == 4.0


def test_dimacs_isolated_vertices_from_header(tmp_path):
    path = tmp_path / "g.gr"
    path.write_text("p sp 10 1\na 1 2 3\n")
    g = read_graph(path)
    assert g.n == 10 and g.vertex_ids[-1] == 10


def test_tntp_without_column_header_uses_standard_columns(tmp_path):
    path = tmp_path / "x_net.tntp"
    path.write_text("<NUMBER OF NODES> 3\n<NUMBER OF LINKS> 2\n<END OF METADATA>\n"
                    "1 2 100 7 3 0.15 4 0 0 1 ;\n2 3 100 8 4 0.15 4 0 0 1 ;\n")
    assert weight_of(read_graph(path), 1, 2) == 7.0
    assert weight_of(read_graph(path, weight_column="free_flow_time"), 2, 3) == 4.0


def test_tntp_comment_before_column_header(tmp_path):
    path = tmp_path / "c_net.tntp"
    path.write_text("<NUMBER OF NODES> 2\n<NUMBER OF LINKS> 1\n<END OF METADATA>\n"
                    "~ made by hand\n~ term_node init_node length ;\n2 1 7 ;\n")
    g = read_graph(path)
    assert weight_of(g, 1, 2) == 7.0 and g.m == 1


# --- TSPLIB layouts, each against a known matrix ------------------------------
def write_tsplib(path: Path, n: int, fmt: str, numbers, type_="TSP", per_line=5,
                 extra_header=""):
    body = [" ".join(str(x) for x in numbers[i:i + per_line])
            for i in range(0, len(numbers), per_line)]
    path.write_text(
        f"NAME : test\nTYPE : {type_}\nCOMMENT: synthetic\nDIMENSION : {n}\n"
        f"EDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: {fmt}\n{extra_header}"
        "EDGE_WEIGHT_SECTION\n" + "\n".join(body) + "\nEOF\n")


TRIANGLES = ["UPPER_ROW", "LOWER_ROW", "UPPER_DIAG_ROW", "LOWER_DIAG_ROW",
             "UPPER_COL", "LOWER_COL", "UPPER_DIAG_COL", "LOWER_DIAG_COL"]


@pytest.mark.parametrize("fmt", TRIANGLES)
@pytest.mark.parametrize("ext, type_", [(".tsp", "TSP"), (".atsp", "ATSP")])
def test_tsplib_triangular_layouts(tmp_path, fmt, ext, type_):
    n = 5
    a = 10.0 * np.arange(n * n).reshape(n, n) + 1  # every entry distinct
    numbers = [int(a[i, j]) if i != j else 9999 for i, j in tsplib_positions(n, fmt)]
    path = tmp_path / ("m" + ext)
    write_tsplib(path, n, fmt, numbers, type_=type_, per_line=3)
    g = read_graph(path)
    upper = fmt.startswith("UPPER")
    tri = np.triu(a, 1) if upper else np.tril(a, -1)
    expected = tri + tri.T
    np.fill_diagonal(expected, np.inf)
    np.testing.assert_array_equal(dense(g), expected)
    assert g.directed == (type_ == "ATSP")
    np.testing.assert_array_equal(g.vertex_ids, np.arange(1, n + 1))


def test_tsplib_full_matrix_layout(tmp_path):
    n = 4
    a = np.arange(n * n).reshape(n, n) + 1
    path = tmp_path / "m.atsp"
    write_tsplib(path, n, "FULL_MATRIX", a.ravel().tolist(), type_="ATSP", per_line=7,
                 extra_header="DISPLAY_DATA_TYPE: NO_DISPLAY\n")
    expected = a.astype(float)
    np.fill_diagonal(expected, np.inf)
    np.testing.assert_array_equal(dense(read_graph(path)), expected)


def test_tsplib_sections_after_weights_are_skipped(tmp_path):
    path = tmp_path / "d.tsp"
    path.write_text("NAME: d\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                    "EDGE_WEIGHT_FORMAT: UPPER_ROW\nDISPLAY_DATA_TYPE: TWOD_DISPLAY\n"
                    "EDGE_WEIGHT_SECTION\n1 2\n3\nDISPLAY_DATA_SECTION\n1 0.0 0.0\n"
                    "2 1.0 1.0\n3 2.0 2.0\nEOF\n")
    g = read_graph(path)
    assert (g.m, weight_of(g, 1, 3), weight_of(g, 3, 2)) == (6, 2.0, 3.0)


# --- round trips through every edge-list writer ------------------------------
edge_lists = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 7),
              st.integers(-50, 50).map(lambda x: x / 4)),
    min_size=1, max_size=30)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=edge_lists)
def test_round_trip_all_edge_formats(tmp_path, edges):
    src, dst, w = (np.array(x) for x in zip(*edges))
    n = int(max(src.max(), dst.max())) + 1
    ref = Graph.from_edges(src, dst, w, n=n)
    lines = [f"{u} {v} {x!r}" for u, v, x in edges]
    files = {
        "r.txt": "# snap\n" + "\n".join(lines),
        "r.csv": "src,dst,w\n" + "\n".join(f"{u},{v},{x!r}" for u, v, x in edges),
        "r.tsv": "\n".join(f"{u}\t{v}\t{x!r}\tjunk" for u, v, x in edges),
        "r.gr": f"c x\np sp {n} {len(edges)}\n"
                + "\n".join(f"a {u + 1} {v + 1} {x!r}" for u, v, x in edges),
        "r.mtx": f"%%MatrixMarket matrix coordinate real general\n% c\n{n} {n} "
                 f"{len(edges)}\n" + "\n".join(f"{u + 1} {v + 1} {x!r}"
                                                for u, v, x in edges),
        "r_net.tntp": f"<NUMBER OF NODES> {n}\n<NUMBER OF LINKS> {len(edges)}\n"
                      "<END OF METADATA>\n~ init_node term_node capacity length ;\n"
                      + "\n".join(f"\t{u + 1}\t{v + 1}\t0\t{x!r}\t;" for u, v, x in edges),
    }
    # edge lists name the vertices that occur; the other formats declare n
    relabelled = Graph.from_edges(src, dst, w, renumber=True)
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(text + "\n")
        g = read_graph(path)
        want = relabelled if name.endswith((".txt", ".csv", ".tsv")) else ref
        assert g.fingerprint == want.fingerprint, name


# =============================================================================
# bad input: every case names the file, the line and the offending value
# =============================================================================
SNAP_CASES = [
    ("three fields then two", "0 1 2\n1 2\n", 2, "'1 2'"),
    ("four fields", "# c\n0 1 2 3\n", 2, "got 4"),
    ("extra field later", "0 1\n1 2 3\n", 3 - 1, "'1 2 3'"),
    ("one field", "0 1\n7\n", 2, "'7'"),
    ("text weight", "0 1 2\n1 2 abc\n", 2, "weight 'abc' is not a number"),
    ("nan weight", "0 1 2\n\n1 2 nan\n", 3, "weight 'nan'"),
    ("inf weight", "0 1 inf\n", 1, "weight 'inf'"),
    ("-inf weight", "0 1 1\n0 2 -inf\n", 2, "weight '-inf'"),
    ("overflow weight", "0 1 1\n# c\n1 0 1e999\n", 3, "weight '1e999'"),
]


LABEL_CASES = [
    # text, labels in sorted order, edges as (source label, target label)
    ("host-a host-b\nhost-b host-c\n", ["host-a", "host-b", "host-c"],
     [("host-a", "host-b"), ("host-b", "host-c")]),
    ("10 20\n20 1000\n-5 10\n", [-5, 10, 20, 1000], [(10, 20), (20, 1000), (-5, 10)]),
    ("0 1\n2000000000 1\n", [0, 1, 2000000000], [(0, 1), (2000000000, 1)]),
    ("0 9223372036854775807\n", [0, 2**63 - 1], [(0, 2**63 - 1)]),
    # beyond 64 bits, or not all integers: text labels
    ("0 99999999999999999999999\n", ["0", "99999999999999999999999"],
     [("0", "99999999999999999999999")]),
    ("0 1.5\n1 x\n", ["0", "1", "1.5", "x"], [("0", "1.5"), ("1", "x")]),
]


@pytest.mark.parametrize("text, labels, edges", LABEL_CASES)
@pytest.mark.parametrize("suffix, sep", [(".txt", " "), (".csv", ",")])
def test_edge_lists_take_any_labels(tmp_path, text, labels, edges, suffix, sep):
    """Edge lists name vertices by any label: the vertices are the labels that occur,
    as many as there are (never the largest id + 1), in sorted order."""
    path = tmp_path / f"labels{suffix}"
    # a CSV's first line is its header when neither of its first two fields is a number
    path.write_text(("src,dst\n" if suffix == ".csv" else "") + text.replace(" ", sep))
    g = read_graph(path)
    assert g.n == len(labels) and g.m == len(edges)
    assert g.labels.tolist() == labels
    for u, v in edges:
        assert weight_of(g, u, v) == 1.0
    with pytest.raises(mgapsp.UnknownLabelError, match="'nowhere'"):
        g.index_of(["nowhere"])


def test_a_few_vertices_with_huge_ids_take_little_memory(tmp_path):
    path = tmp_path / "sparse.txt"
    path.write_text("".join(f"{k * 10**15} {(k + 1) * 10**15}\n" for k in range(1000)))
    g = read_graph(path)
    assert g.n == 1001 and g.indptr.nbytes < 10**5


def check_error(info, path: Path, line: int | None, value: str) -> None:
    msg = str(info.value)
    assert path.name in msg
    if line is not None:
        assert f"{path.name}:{line}: " in msg, msg
        assert info.value.line == line
    assert value in msg, msg


@pytest.mark.parametrize("what, text, line, value", SNAP_CASES,
                         ids=[c[0] for c in SNAP_CASES])
def test_snap_errors(tmp_path, what, text, line, value):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, line, value)


CSV_CASES = [
    ("text weight", "0,1,2\n1,2,abc\n", {}, 2, "'abc'"),
    ("nan weight", "a,b,w\n0,1,2\n1,2,NaN\n", {}, 3, "'NaN'"),
    ("empty field", "0,1\n0,,1\n", {}, 2, "target id '' is empty"),
    ("too few fields", "0,1\n2\n", {}, 2, "'2'"),
    ("weight column missing on a line", "0,1,2,3\n1,2,3\n", {"weight_column": 3}, 2,
     "'1,2,3'"),
    ("unknown column name", "# c\nsrc,dst,w\n0,1,2\n", {"weight_column": "cost"}, 2,
     "'cost'"),
    ("name without header", "0,1,2\n", {"weight_column": "w"}, None, "'w'"),
    ("weight column is source", "0,1,2\n", {"weight_column": 0}, None, "weight_column 0"),
]


@pytest.mark.parametrize("what, text, kwargs, line, value", CSV_CASES,
                         ids=[c[0] for c in CSV_CASES])
def test_csv_errors(tmp_path, what, text, kwargs, line, value):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, **kwargs)
    check_error(info, path, line, value)


def test_csv_unknown_column_lists_header(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("src,dst,w\n0,1,2\n")
    with pytest.raises(GraphFormatError, match="src, dst, w"):
        read_graph(path, weight_column="cost")


def test_tsv_errors(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("0\t1\t2\n1\t2\tx\n")
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, 2, "weight 'x'")


DIMACS_CASES = [
    ("record before p", "c x\na 1 2 3\n", 2, "'a 1 2 3'"),
    ("short p line", "p sp 3\n", 1, "'p sp 3'"),
    ("p line not sp", "c\np tw 3 1\n1 2\n", 2, "'p tw 3 1'"),
    ("text vertex count", "p sp x 1\na 1 2 3\n", 1, "'x'"),
    ("text arc count", "p sp 3 y\na 1 2 3\n", 1, "'y'"),
    ("negative arc count", "p sp 3 -1\na 1 2 3\n", 1, "-1"),
    ("vertex count beyond limit", "p sp 3000000000 1\na 1 2 3\n", 1, "3000000000"),
    ("id zero", "p sp 3 1\na 0 1 5\n", 2, "source id 0"),
    ("id beyond n", "p sp 3 2\na 1 2 5\nc\na 2 4 1\n", 4, "target id 4"),
    ("negative id", "p sp 3 1\na -1 2 5\n", 2, "-1"),
    ("too few arcs", "c\np sp 3 2\na 1 2 5\n", 2, "declares 2 arcs but the file holds 1"),
    ("too many arcs", "p sp 3 1\na 1 2 5\na 2 3 4\n", 1, "declares 1 arcs but the file holds 2"),
    ("text weight", "p sp 3 1\na 1 2 abc\n", 2, "weight 'abc' is not a number"),
    ("nan weight", "p sp 3 2\na 1 2 1\na 1 2 nan\n", 3, "weight 'nan'"),
    ("overflow weight", "p sp 3 1\na 1 2 1e999\n", 2, "weight '1e999'"),
    ("wrong record tag", "p sp 3 1\ne 1 2 5\n", 2, "'e 1 2 5'"),
    ("missing weight", "p sp 3 1\na 1 2\n", 2, "'a 1 2'"),
    ("text id", "p sp 3 1\na 1 b 2\n", 2, "target id 'b'"),
]


@pytest.mark.parametrize("what, text, line, value", DIMACS_CASES,
                         ids=[c[0] for c in DIMACS_CASES])
def test_dimacs_errors(tmp_path, what, text, line, value):
    path = tmp_path / "bad.gr"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, format="dimacs")
    check_error(info, path, line, value)


def test_dimacs_auto_without_p_line(tmp_path):
    path = tmp_path / "nop.gr"
    path.write_text("c x\na 1 2 3\n")
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, 2, "'a 1 2 3'")
    path.write_text("c only comments\n")
    for fmt in ("auto", "dimacs", "pace"):
        with pytest.raises(GraphFormatError, match="p sp|p tw"):
            read_graph(path, format=fmt)


def test_gr_with_unknown_problem(tmp_path):
    path = tmp_path / "x.gr"
    path.write_text("p max 3 1\na 1 2 3\n")
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, 1, "'max'")


PACE_CASES = [
    ("id beyond n", "p tw 3 2\n1 2\n2 4\n", 3, "target id 4"),
    ("id zero", "c x\np tw 3 1\n0 2\n", 3, "source id 0"),
    ("count", "p tw 3 3\n1 2\n2 3\n", 1, "declares 3 edges but the file holds 2"),
    ("three fields", "p tw 3 1\n1 2 3\n", 2, "'1 2 3'"),
    ("text id", "p tw 3 1\n1 z\n", 2, "'z'"),
]


@pytest.mark.parametrize("what, text, line, value", PACE_CASES,
                         ids=[c[0] for c in PACE_CASES])
def test_pace_errors(tmp_path, what, text, line, value):
    path = tmp_path / "bad.gr"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, line, value)


BANNER = "%%MatrixMarket matrix coordinate real general\n"
MTX_CASES = [
    ("no banner", "3 3 1\n1 2 1\n", 1, "'3 3 1'"),
    ("complex", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 0\n",
     1, "'complex'"),
    ("hermitian", "%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 2 1\n",
     1, "'hermitian'"),
    ("skew", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 1\n",
     1, "'skew-symmetric'"),
    ("array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "'array'"),
    ("vector", "%%MatrixMarket vector coordinate real general\n2 1\n1 1\n", 1, "'vector'"),
    ("short banner", "%%MatrixMarket matrix coordinate\n2 2 1\n1 2 1\n", 1,
     "'%%MatrixMarket matrix coordinate'"),
    ("not square", BANNER + "% c\n2 3 1\n1 2 1\n", 3, "2 x 3"),
    ("short size line", BANNER + "3 3\n1 2 1\n", 2, "'3 3'"),
    ("text size", BANNER + "3 3 many\n1 2 1\n", 2, "'many'"),
    ("id beyond n", BANNER + "3 3 2\n1 2 1\n1 4 1\n", 4, "target id 4"),
    ("id zero", BANNER + "3 3 1\n0 2 1\n", 3, "source id 0"),
    ("too few entries", BANNER + "%\n3 3 3\n1 2 1\n2 3 1\n", 3,
     "declares 3 entries but the file holds 2"),
    ("text value", BANNER + "3 3 1\n1 2 x\n", 3, "weight 'x'"),
    ("inf value", BANNER + "3 3 1\n1 2 -inf\n", 3, "weight '-inf'"),
    ("pattern with value", "%%MatrixMarket matrix coordinate pattern symmetric\n"
     "3 3 1\n2 1 5\n", 3, "'2 1 5'"),
    ("real without value", BANNER + "3 3 1\n2 1\n", 3, "'2 1'"),
]


@pytest.mark.parametrize("what, text, line, value", MTX_CASES,
                         ids=[c[0] for c in MTX_CASES])
def test_mtx_errors(tmp_path, what, text, line, value):
    path = tmp_path / "bad.mtx"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, line, value)


def test_mtx_missing_size_line(tmp_path):
    path = tmp_path / "nosize.mtx"
    path.write_text(BANNER + "% only comments\n")
    with pytest.raises(GraphFormatError, match="size line") as info:
        read_graph(path)
    assert "nosize.mtx" in str(info.value)


def test_mtx_integer_and_extra_comment_lines(tmp_path):
    path = tmp_path / "int.mtx"
    path.write_text("%%MatrixMarket matrix coordinate integer symmetric\n"
                    "%%GraphBLAS type int64\n% c\n\n3 3 2\n2 1 4\n% late comment\n3 2 -5\n")
    g = read_graph(path)
    assert (g.m, g.directed, weight_of(g, 1, 2), weight_of(g, 3, 2)) == (4, False, 4.0, -5.0)


TNTP_HEAD = "<NUMBER OF ZONES> 1\n<NUMBER OF NODES> 3\n<FIRST THRU NODE> 1\n" \
            "<NUMBER OF LINKS> 2\n<END OF METADATA>\n\n" \
            "~\tinit_node\tterm_node\tcapacity\tlength\tfree_flow_time\t;\n"
TNTP_CASES = [
    ("no end of metadata", "<NUMBER OF NODES> 3\n<NUMBER OF LINKS> 1\n1 2 3 4 5 ;\n",
     {}, 3, "'1 2 3 4 5 ;'"),
    ("no end at all", "<NUMBER OF NODES> 3\n", {}, None, "END OF METADATA"),
    ("no node count", "<NUMBER OF LINKS> 1\n<END OF METADATA>\n1 2 3 4 5 ;\n", {}, 2,
     "NUMBER OF NODES"),
    ("text node count", "<NUMBER OF NODES> many\n<NUMBER OF LINKS> 1\n"
     "<END OF METADATA>\n1 2 3 4 5 ;\n", {}, 1, "'many'"),
    ("link count", TNTP_HEAD + "\t1\t2\t9\t4\t5\t;\n", {}, 4,
     "declares 2 links but the file holds 1"),
    ("id beyond nodes", TNTP_HEAD + "\t1\t2\t9\t4\t5\t;\n\t2\t7\t9\t4\t5\t;\n", {}, 9,
     "target id 7"),
    ("text length", TNTP_HEAD + "\t1\t2\t9\tfar\t5\t;\n\t2\t3\t9\t4\t5\t;\n", {}, 8,
     "weight 'far'"),
    ("nan fft", TNTP_HEAD + "\t1\t2\t9\t4\t5\t;\n\t2\t3\t9\t4\tnan\t;\n",
     {"weight_column": "free_flow_time"}, 9, "weight 'nan'"),
    ("short row", TNTP_HEAD + "\t1\t2\t9\t;\n\t2\t3\t9\t4\t5\t;\n", {}, 8, r"'1\t2\t9'"),
    ("unknown column", TNTP_HEAD + "\t1\t2\t9\t4\t5\t;\n\t2\t3\t9\t4\t5\t;\n",
     {"weight_column": "toll"}, 7, "'toll'"),
]


@pytest.mark.parametrize("what, text, kwargs, line, value", TNTP_CASES,
                         ids=[c[0] for c in TNTP_CASES])
def test_tntp_errors(tmp_path, what, text, kwargs, line, value):
    path = tmp_path / "bad_net.tntp"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, **kwargs)
    check_error(info, path, line, value)


def test_tntp_unknown_column_lists_columns(tmp_path):
    with pytest.raises(GraphFormatError) as info:
        read_graph(DATA / "SiouxFalls_net.tntp", weight_column="cost")
    msg = str(info.value)
    assert "SiouxFalls_net.tntp:9:" in msg and "'cost'" in msg
    assert "free_flow_time" in msg and "link_type" in msg


def tsp_text(dimension="3", ewt="EXPLICIT", ewf="UPPER_ROW", section="1 2\n3\n",
             type_="TSP"):
    return (f"NAME: t\nTYPE: {type_}\nDIMENSION: {dimension}\nEDGE_WEIGHT_TYPE: {ewt}\n"
            f"EDGE_WEIGHT_FORMAT: {ewf}\nEDGE_WEIGHT_SECTION\n{section}EOF\n")


TSP_CASES = [
    ("euc_2d", tsp_text(ewt="EUC_2D"), 4, "'EUC_2D'"),
    ("function format", tsp_text(ewf="FUNCTION"), 5, "'FUNCTION'"),
    ("text dimension", tsp_text(dimension="x"), 3, "'x'"),
    ("huge dimension", tsp_text(dimension="100000"), 3, "100000"),
    ("hcp type", tsp_text(type_="HCP"), 2, "'HCP'"),
    ("too few", tsp_text(section="1 2\n"), 8, "ends after 2 numbers"),
    ("too few at end of file", tsp_text(section="1 2\n").replace("EOF\n", ""), 7,
     "ends after 2 numbers"),
    ("too many", tsp_text(section="1 2\n3\n4 5\n"), 9, "extra value '4'"),
    ("text number", tsp_text(section="1 2\nx\n"), 8, "weight 'x' is not a number"),
    ("nan number", tsp_text(section="1 nan\n3\n"), 7, "weight 'nan'"),
    ("no colon", "NAME: t\nDIMENSION 3\nEDGE_WEIGHT_SECTION\n1 2 3\n", 2, "'DIMENSION 3'"),
    ("second section", tsp_text(section="1 2 3\nEDGE_WEIGHT_SECTION\n1 2 3\n"), 8,
     "second EDGE_WEIGHT_SECTION"),
]


@pytest.mark.parametrize("what, text, line, value", TSP_CASES,
                         ids=[c[0] for c in TSP_CASES])
def test_tsplib_errors(tmp_path, what, text, line, value):
    path = tmp_path / "bad.tsp"
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, line, value)


@pytest.mark.parametrize("drop", ["DIMENSION", "EDGE_WEIGHT_TYPE", "EDGE_WEIGHT_FORMAT"])
def test_tsplib_missing_header(tmp_path, drop):
    path = tmp_path / "miss.tsp"
    text = "".join(line for line in tsp_text().splitlines(keepends=True)
                   if not line.startswith(drop))
    path.write_text(text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    check_error(info, path, 5, drop)  # named at the EDGE_WEIGHT_SECTION line


def test_tsplib_missing_section(tmp_path):
    path = tmp_path / "nosec.tsp"
    path.write_text("NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                    "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEOF\n")
    with pytest.raises(GraphFormatError, match="no EDGE_WEIGHT_SECTION"):
        read_graph(path)


def test_tsplib_type_missing_uses_extension(tmp_path):
    path = tmp_path / "t.atsp"
    path.write_text(tsp_text(ewf="FULL_MATRIX", section="0 1 2\n3 0 4\n5 6 0\n")
                    .replace("TYPE: TSP\n", ""))
    g = read_graph(path)
    assert g.directed and weight_of(g, 2, 1) == 3.0 and weight_of(g, 1, 2) == 1.0


EMPTY_CASES = [
    ("e.txt", ""),
    ("c.txt", "# only a comment\n\n"),
    ("e.csv", "src,dst,w\n"),
    ("e.gr", "c\np sp 4 0\n"),
    ("e.mtx", BANNER + "4 4 0\n"),
    ("e_net.tntp", "<NUMBER OF NODES> 2\n<NUMBER OF LINKS> 0\n<END OF METADATA>\n"),
    ("e.tsp", tsp_text(dimension="1", ewf="FULL_MATRIX", section="0\n")),
]


@pytest.mark.parametrize("name, text", EMPTY_CASES, ids=[c[0] for c in EMPTY_CASES])
def test_empty_graphs(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(EmptyGraphError) as info:
        read_graph(path)
    assert name in str(info.value)


def test_errors_are_value_errors_and_pickle(tmp_path):
    import pickle

    path = tmp_path / "bad.txt"
    path.write_text("0 1 x\n")
    with pytest.raises(ValueError) as info:
        read_graph(path)
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value) and again.line == 1


@pytest.mark.parametrize("where", ["weight", "label"])
def test_a_huge_field_is_refused_by_its_line(tmp_path, where):
    """A number or label of 5,000 characters (one of 50 MB took 0.6 GB to refuse):
    one error naming the file, the line and the field's length."""
    huge = "9" * 5000 if where == "weight" else "v" * 5000
    path = tmp_path / "huge.txt"
    path.write_text(f"1 2 3\n2 3 {huge}\n" if where == "weight" else f"1 2 3\n{huge} 3 1\n")
    with pytest.raises(GraphFormatError, match=r"huge.txt:2: a field of 5,000 characters"):
        mgapsp.read_graph(path)
    path.write_text("1 2 1." + "0" * 900 + "\n")       # long, but a number all the same
    assert mgapsp.read_graph(path).m == 1
