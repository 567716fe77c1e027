"""The readers' options: format detection, gzip and line endings, --directed,
--unweighted, --weight-column, TSPLIB's layouts, round trips through every edge-list
writer, and labels of any kind."""

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

from reader_checks import load, expected_keyed, assert_same_edges, dense, weight_of, parse_columns, tsplib_positions, parse_tsplib

DATA = Path(__file__).parent / "data"


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
