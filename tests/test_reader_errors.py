"""Bad input for every format: one error naming the file, the line and the offending
value."""

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

from reader_checks import weight_of

DATA = Path(__file__).parent / "data"


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
