"""No input exhausts the machine, and bad input gets one line (issue 25, items 3 and 6).

- Counts a file declares (vertices, edges, a matrix's size) are checked against the
  memory the process can still allocate before anything of that size exists: one
  GraphFormatError ``file:line: declares ...`` naming the value, the process staying
  small.  These run in subprocesses whose address space is capped a little above what
  their imports took (so "available memory" is the same on every machine, and a
  check that fails raises MemoryError instead of exhausting the machine), and that
  report their peak resident size (``VmHWM``).
- Quoted values are clipped, however long the field.
- Bad ``sources``/``targets`` and other bad input to the API raise one MgapspError.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph as scipy_csgraph

import mgapsp
from mgapsp.errors import GraphFormatError, MgapspError, UnknownLabelError, quote
from mgapsp.graph import graph_bytes
from mgapsp.memory import available_memory
from mgapsp.readers import read_graph

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30
#: peak resident size allowed to a process reading one refused file
MAX_RSS = 1 * GiB
#: address space granted to a subprocess beyond what its imports took
EXTRA = 1 * GiB
HUGE = 2_000_000_000
#: lines of ``0 1`` whose records need more than EXTRA (at RECORD_PEAK_BYTES each)
MANY_LINES = 28_000_000


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                                      [env.get("PYTHONPATH")] if p])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"      # a thread pool per core would take address space of its own
    return env


# The subprocess: imports mgapsp, caps its address space at what it uses + EXTRA, then
# runs each case and reports the error (or the graph) and the peak resident size.
_LIMITED = r"""
import json, os, resource, sys, time
import numpy as np, scipy.sparse as sp
import mgapsp
from mgapsp.memory import available_memory

def used():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")

def peak():
    # this process image's own peak (VmHWM): ru_maxrss carries over from the parent
    # that forked it, a test runner that may hold more than the cap
    try:
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

cap = used() + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
out = {"available": available_memory(), "extra": int(sys.argv[2]), "cases": {}}
for name, case in json.loads(sys.argv[1]).items():
    t0 = time.perf_counter()
    try:
        if case["kind"] == "file":
            g = mgapsp.read_graph(case["path"], **case.get("kwargs", {}))
        elif case["kind"] == "coo":
            k = case["n"]
            mat = sp.coo_array((np.ones(1), ([0], [1])), shape=(k, k))
            g = mgapsp.as_graph(mat) if case["how"] == "as_graph" else \
                mgapsp.apsp(mat, backend="cpu")
        res = {"ok": True, "n": int(g.n), "m": int(g.m),
               "labels": [int(x) for x in g.vertex_ids[:10]]}
    except mgapsp.MgapspError as exc:
        res = {"ok": False, "type": type(exc).__name__, "msg": str(exc),
               "path": getattr(exc, "path", None), "line": getattr(exc, "line", None)}
    except BaseException as exc:
        res = {"ok": False, "type": type(exc).__name__, "msg": repr(exc)[:500]}
    res["seconds"] = time.perf_counter() - t0
    res["maxrss"] = peak()
    out["cases"][name] = res
print(json.dumps(out))
"""


def _run_limited(cases: dict, extra: int = EXTRA) -> dict:
    proc = subprocess.run([sys.executable, "-c", _LIMITED, json.dumps(cases), str(extra)],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _write(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _line_of(text: str, prefix: str) -> int:
    """1-based number of the first line of ``text`` starting with ``prefix``."""
    return next(i for i, line in enumerate(text.split("\n"), 1) if line.startswith(prefix))


# name -> (file name, text, prefix of the declaring line, declared value)
def _huge_files():
    dimacs = f"c a graph\nc that declares too much\np sp {HUGE} 1\na 1 2 7\n"
    pace = f"c declared\np tw {HUGE} 1\n1 2\n"
    mtx = ("%%MatrixMarket matrix coordinate real general\n% a comment\n"
           f"{HUGE} {HUGE} 1\n1 2 3.5\n")
    mtx_sym = ("%%MatrixMarket matrix coordinate pattern symmetric\n"
               f"{HUGE} {HUGE} 1\n2 1\n")
    tntp = ("<NUMBER OF ZONES> 1\n"
            f"<NUMBER OF NODES> {HUGE}\n<FIRST THRU NODE> 1\n<NUMBER OF LINKS> 1\n"
            "<END OF METADATA>\n\n~ init_node term_node capacity length ;\n"
            "1 2 1 4 ;\n")
    tntp_links = ("<NUMBER OF ZONES> 1\n<NUMBER OF NODES> 4\n<FIRST THRU NODE> 1\n"
                  "<NUMBER OF LINKS> 9000000000000000\n<END OF METADATA>\n\n"
                  "~ init_node term_node capacity length ;\n1 2 1 4 ;\n")
    arcs = "p sp 5 9000000000000000\na 1 2 7\n"
    tsp = ("NAME: big\nTYPE: TSP\nCOMMENT: declares a 60000 x 60000 matrix\n"
           "DIMENSION: 60000\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
           "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1\n1 0\nEOF\n")
    atsp = ("NAME: big\nTYPE: ATSP\nDIMENSION: 40000\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
            "EDGE_WEIGHT_FORMAT: UPPER_ROW\nEDGE_WEIGHT_SECTION\n1 2 3\nEOF\n")
    tsp_beyond = ("NAME: big\nTYPE: TSP\n"
                  f"DIMENSION: {HUGE}\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
                  "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1\n1 0\nEOF\n")
    return {
        "dimacs": ("g.gr", dimacs, "p sp", HUGE),
        "dimacs-gz": ("g.gr.gz", dimacs, "p sp", HUGE),
        "dimacs-arcs": ("arcs.gr", arcs, "p sp", 9_000_000_000_000_000),
        "pace": ("p.gr", pace, "p tw", HUGE),
        "pace-gz": ("p.gr.gz", pace, "p tw", HUGE),
        "mtx": ("c.mtx", mtx, str(HUGE), HUGE),
        "mtx-symmetric-gz": ("s.mtx.gz", mtx_sym, str(HUGE), HUGE),
        "tntp": ("big_net.tntp", tntp, "<NUMBER OF NODES>", HUGE),
        "tntp-links": ("links_net.tntp", tntp_links, "<NUMBER OF LINKS>",
                       9_000_000_000_000_000),
        "tsplib": ("big.tsp", tsp, "DIMENSION", 60000),
        "tsplib-triangle": ("big.atsp", atsp, "DIMENSION", 40000),
        "tsplib-beyond-limit": ("beyond.tsp", tsp_beyond, "DIMENSION", HUGE),
    }


def _value_in(value: int, msg: str) -> bool:
    return f"{value:,}" in msg or str(value) in msg


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """Every refused file (and the cheap ones) read in one capped subprocess."""
    d = tmp_path_factory.mktemp("limits")
    files = {name: (_write(d / fname, text), text, prefix, value)
             for name, (fname, text, prefix, value) in _huge_files().items()}
    snap = _write(d / "labels.txt", f"# large labels are labels\n0 1\n{HUGE} 1\n")
    mtx_array = _write(d / "a.mtx", "%%MatrixMarket matrix array real general\n"
                                    f"{HUGE} {HUGE}\n1\n")
    bomb = d / "bomb.txt.gz"            # 512 MiB of zeros in 32 gzip members
    member = gzip.compress(b"0" * (16 * 2**20), compresslevel=9)
    bomb.write_bytes(member * 32)
    cases = {name: {"kind": "file", "path": str(path)}
             for name, (path, *_rest) in files.items()}
    cases["snap-labels"] = {"kind": "file", "path": str(snap)}
    cases["mtx-array"] = {"kind": "file", "path": str(mtx_array)}
    cases["gzip-bomb"] = {"kind": "file", "path": str(bomb)}
    # short lines: 40 MB of "0 1" (10 million edges) had needed 2.4 GB as lines of
    # text; read in blocks they fit the cap (issue 56, item 13) ...
    lines = d / "short-lines.txt"
    lines.write_bytes(b"0 1\n" * 10_000_000)
    cases["short-lines"] = {"kind": "file", "path": str(lines)}
    lines_gz = d / "short-lines.txt.gz"
    lines_gz.write_bytes(gzip.compress(b"0 1\n" * 10_000_000, compresslevel=1))
    cases["short-lines-gz"] = {"kind": "file", "path": str(lines_gz)}
    # ... and 28 million need more than it: refused before they are read (a regular
    # file's lines are counted first), or as soon as a stream's outgrow it
    many = d / "many-lines.txt"
    many.write_bytes(b"0 1\n" * MANY_LINES)
    cases["many-lines"] = {"kind": "file", "path": str(many)}
    many_gz = d / "many-lines.txt.gz"
    many_gz.write_bytes(gzip.compress(b"0 1\n" * MANY_LINES, compresslevel=1))
    cases["many-lines-gz"] = {"kind": "file", "path": str(many_gz)}
    csv = _write(d / "w.csv", "src,dst,w\n0,1,2\n1,2,3\n")
    cases["csv-column"] = {"kind": "file", "path": str(csv),
                           "kwargs": {"weight_column": 10**9}}
    cases["scipy-as-graph"] = {"kind": "coo", "n": HUGE, "how": "as_graph"}
    cases["scipy-apsp"] = {"kind": "coo", "n": HUGE, "how": "apsp"}
    return {"report": _run_limited(cases), "files": files, "snap": snap,
            "mtx_array": mtx_array, "bomb": bomb, "csv": csv, "lines": lines,
            "lines_gz": lines_gz, "many": many, "many_gz": many_gz}


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_the_cap_is_what_available_memory_reports(limited):
    """The capped subprocess sees its cap, not the machine (else the cases below would
    not test the check on every machine alike)."""
    report = limited["report"]
    assert 0 < report["available"] <= report["extra"]


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
@pytest.mark.parametrize("name", list(_huge_files()))
def test_a_huge_declared_count_is_one_error_naming_file_line_and_value(limited, name):
    path, text, prefix, value = limited["files"][name]
    res = limited["report"]["cases"][name]
    assert not res["ok"], f"{name} was read: {res}"
    assert res["type"] == "GraphFormatError", res
    line = _line_of(text, prefix)
    assert res["path"] == str(path) and res["line"] == line, res
    assert res["msg"].startswith(f"{path}:{line}: "), res["msg"]
    assert _value_in(value, res["msg"]), res["msg"]
    assert "\n" not in res["msg"]
    if "beyond" not in name:            # refused by memory, not by the format's limit
        assert re.search(r"would need [0-9.]+ [KMGT]iB, .* [0-9.]+ [KMGT]iB available",
                         res["msg"]), res["msg"]
    assert res["maxrss"] < MAX_RSS, f"{name}: peak {res['maxrss'] / GiB:.2f} GiB"


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_large_ids_of_an_edge_list_are_labels(limited):
    """A SNAP file's ids are labels: 2,000,000,000 costs one vertex, not 2e9."""
    res = limited["report"]["cases"]["snap-labels"]
    assert res["ok"], res
    tokens = [int(t) for line in limited["snap"].read_text().splitlines()
              if not line.startswith("#") for t in line.split()]
    assert res["n"] == len(set(tokens)) and res["m"] == len(tokens) // 2
    assert res["labels"] == sorted(set(tokens))
    assert res["maxrss"] < MAX_RSS and res["seconds"] < 30


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_a_dense_matrix_market_file_is_refused_at_its_banner(limited):
    """``array`` files are not read at all (only coordinate files hold graphs), so
    their declared size never allocates anything."""
    res = limited["report"]["cases"]["mtx-array"]
    assert res["type"] == "GraphFormatError", res
    assert res["msg"].startswith(f"{limited['mtx_array']}:1: ") and "'array'" in res["msg"]
    assert res["maxrss"] < MAX_RSS


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_a_gzip_bomb_is_refused_before_it_fills_memory(limited):
    res = limited["report"]["cases"]["gzip-bomb"]
    assert res["type"] == "GraphFormatError", res
    assert res["msg"].startswith(f"{limited['bomb']}: the file decompresses to more than")
    assert "available" in res["msg"] and "\n" not in res["msg"]
    assert res["maxrss"] < MAX_RSS, f"peak {res['maxrss'] / GiB:.2f} GiB"


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
@pytest.mark.parametrize("case", ["short-lines", "short-lines-gz"])
def test_many_short_lines_are_read_in_blocks_within_memory(limited, case):
    """Issue 56, item 13: 10 million lines of ``0 1`` (40 MB), which needed about 240
    bytes each as lines of text (2.4 GB), are read a block at a time into arrays in a
    process of 1 GiB more than its imports, plain and gzipped."""
    res = limited["report"]["cases"][case]
    assert res["ok"], res
    assert (res["n"], res["m"], res["labels"]) == (2, 1, [0, 1]), res
    assert res["maxrss"] < MAX_RSS, f"peak {res['maxrss'] / GiB:.2f} GiB"


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_a_file_of_more_lines_than_memory_is_refused_before_it_is_read(limited):
    """Its lines are counted in its bytes first: one line naming the file, its size,
    its lines and the memory."""
    res = limited["report"]["cases"]["many-lines"]
    assert res["type"] == "GraphFormatError", res
    assert res["msg"].startswith(f"{limited['many']}: the file holds {4 * MANY_LINES:,} "
                                 f"bytes in {MANY_LINES:,} lines: reading it would need "), \
        res["msg"]
    assert "available" in res["msg"] and "\n" not in res["msg"]
    assert res["maxrss"] < MAX_RSS, f"peak {res['maxrss'] / GiB:.2f} GiB"


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_a_stream_of_more_records_than_memory_is_refused_as_it_outgrows_it(limited):
    """A gzip's lines cannot be counted before it is read: refused in one line once the
    records read so far would not leave room to build the graph, not killed."""
    res = limited["report"]["cases"]["many-lines-gz"]
    assert res["type"] == "GraphFormatError", res
    assert res["msg"].startswith(f"{limited['many_gz']}: the file holds more than "), \
        res["msg"]
    assert "records: reading it would need" in res["msg"] and "\n" not in res["msg"]
    assert res["maxrss"] < MAX_RSS, f"peak {res['maxrss'] / GiB:.2f} GiB"


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
def test_a_huge_weight_column_index_is_refused_at_once(limited):
    """A CSV weight column far beyond the record's fields is refused on the first
    record, not by a list of a billion column names."""
    res = limited["report"]["cases"]["csv-column"]
    assert res["type"] == "GraphFormatError", res
    assert res["msg"].startswith(f"{limited['csv']}:2: ") and _value_in(10**9, res["msg"])
    assert res["maxrss"] < MAX_RSS and res["seconds"] < 30


@pytest.mark.slow     # one capped subprocess reads 28 million lines: 20 s
@pytest.mark.parametrize("how", ["scipy-as-graph", "scipy-apsp"])
def test_a_huge_sparse_shape_is_one_error(limited, how):
    """A SciPy matrix of shape 2e9 x 2e9 with one entry: as_graph would allocate
    per-vertex arrays of 2e9; it says so instead."""
    res = limited["report"]["cases"][how]
    assert res["type"] == "GraphFormatError", res
    assert _value_in(HUGE, res["msg"]) and "would need" in res["msg"], res["msg"]
    assert res["maxrss"] < MAX_RSS


def test_an_impossible_edge_count_is_refused_without_a_cap(tmp_path):
    """No address-space cap: an edge count no machine holds is refused all the same,
    in this process, by the host's available memory."""
    text = "c\np sp 3 4000000000000000000\na 1 2 1\n"
    path = _write(tmp_path / "x.gr", text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    assert str(info.value).startswith(f"{path}:2: declares 3 vertices and "
                                      "4,000,000,000,000,000,000 arcs")
    assert "this machine has" in str(info.value) or "leaves" in str(info.value)


def test_available_memory_and_the_estimate():
    free = available_memory()
    assert 0 < free <= 2**62
    assert graph_bytes(10, 5) < graph_bytes(10, 6) < graph_bytes(11, 6)
    assert graph_bytes(10, 0, dense=100) - graph_bytes(10, 0) == 800


# -- through the command line -------------------------------------------------
_CLI_LIMITED = r"""
import os, resource, sys
from mgapsp.cli import main
with open("/proc/self/statm") as fh:
    cap = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + int(os.environ["EXTRA"])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
main(prog_name="mgapsp")
"""


#: CLI cases of the fast tier (each is a process of its own; the others are slow)
_CLI_FAST = ("dimacs-gz", "tsplib", "python -m mgapsp")


def _cli_runs(limited, d: Path, names) -> dict:
    """``mgapsp run FILE -o OUT --backend cpu`` on each named file, all at once: capped
    as the reading subprocess is, but ``python -m mgapsp`` itself is run uncapped on a
    count no machine holds."""
    env = dict(_env(), EXTRA=str(EXTRA))
    procs = {}
    for name in names:
        out = d / f"{name.replace(' ', '_')}.zarr"
        if name == "python -m mgapsp":
            path = _write(d / "arcs.gr", "p sp 4 4000000000000000000\na 1 2 1\n")
            cmd, proc_env = [sys.executable, "-m", "mgapsp"], _env()
        else:
            path = limited["files"][name][0]
            cmd, proc_env = [sys.executable, "-c", _CLI_LIMITED], env
        cmd += ["run", str(path), "-o", str(out), "--backend", "cpu"]
        procs[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=proc_env), out, path)
    done = {}
    for name, (proc, out, path) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        done[name] = (proc.returncode, stdout, stderr, out, path)
    return done


@pytest.fixture(scope="module")
def cli_fast(limited, tmp_path_factory):
    return _cli_runs(limited, tmp_path_factory.mktemp("cli"), _CLI_FAST)


@pytest.fixture(scope="module")
def cli_slow(limited, tmp_path_factory):
    return _cli_runs(limited, tmp_path_factory.mktemp("cli-slow"),
                     [name for name in _huge_files() if name not in _CLI_FAST])


def _assert_one_line(run) -> None:
    code, stdout, stderr, out, path = run
    lines = stderr.strip().splitlines()
    assert code == 1, stderr
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:"), stderr
    assert "Traceback" not in stderr
    assert not out.exists()


@pytest.mark.parametrize("name", _CLI_FAST)
def test_the_cli_says_one_line_and_writes_nothing(cli_fast, name):
    _assert_one_line(cli_fast[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in _huge_files() if n not in _CLI_FAST])
def test_the_cli_says_one_line_and_writes_nothing_for_every_format(cli_slow, name):
    _assert_one_line(cli_slow[name])


# -- quoted values are clipped ------------------------------------------------
BIG = 5 * 2**20          # a 5 MiB field


def _clipped(exc: BaseException, path=None, limit: int = 400) -> str:
    msg = str(exc)
    assert len(msg) < limit, f"{len(msg)} characters"
    assert "\n" not in msg and "..." in msg
    if path is not None:
        assert re.match(re.escape(str(path)) + r":\d+: ", msg), msg[:200]
    return msg


_FIELDS = [
    ("weight.txt", "0 1 2\n1 2 " + "x" * BIG + "\n", {}),
    ("line.txt", "0 1 2 " + "y" * BIG + "\n", {}),
    ("id.gr", "p sp 3 1\na 1 " + "7" * BIG + " 1\n", {}),
    ("count.gr", "p sp " + "9" * BIG + " 1\na 1 2 1\n", {}),
    ("pline.gr", "p sp 3 1 " + "z" * BIG + "\na 1 2 1\n", {}),
    ("header.csv", "src,dst," + "w" * BIG + "\n0,1,2\n", {"weight_column": "nope"}),
    ("banner.mtx", "%%MatrixMarket matrix coordinate " + "r" * BIG + " general\n1 1 0\n", {}),
    ("size.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 " + "5" * BIG + "\n", {}),
    ("type.tsp", "NAME: t\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: " + "q" * BIG
     + "\nEDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1 2\n1 0 2\n2 2 0\nEOF\n", {}),
    ("value.tsp", "NAME: t\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EXPLICIT\n"
     "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n0 1\n" + "8" * BIG + " 0\nEOF\n", {}),
    ("cols_net.tntp", "<NUMBER OF NODES> 2\n<NUMBER OF LINKS> 1\n<END OF METADATA>\n"
     "~ init_node term_node " + "c" * BIG + " ;\n1 2 3 ;\n", {"weight_column": "length"}),
    ("meta_net.tntp", "<NUMBER OF NODES> " + "n" * BIG + "\n<NUMBER OF LINKS> 1\n"
     "<END OF METADATA>\n1 2 3 4 ;\n", {}),
]


@pytest.mark.parametrize("name,text,kwargs", _FIELDS, ids=[f[0] for f in _FIELDS])
def test_a_5mb_field_is_quoted_clipped(tmp_path, name, text, kwargs):
    path = _write(tmp_path / name, text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, **kwargs)
    _clipped(info.value, path)


def test_a_5mb_format_name_is_quoted_clipped(tmp_path):
    path = _write(tmp_path / "g.txt", "0 1\n")
    with pytest.raises(GraphFormatError) as info:
        read_graph(path, format="f" * BIG)
    _clipped(info.value)


@pytest.mark.parametrize("label", ["x" * BIG, "9" * BIG], ids=["text", "digits"])
@pytest.mark.parametrize("text_labels", [False, True], ids=["int-graph", "text-graph"])
def test_a_5mb_unknown_label_is_quoted_clipped(label, text_labels):
    ends = (["a", "b", "c"], ["b", "c", "a"]) if text_labels else ([0, 1, 2], [1, 2, 0])
    g = mgapsp.as_graph(tuple(np.array(e) for e in ends))
    with pytest.raises(UnknownLabelError) as info:
        mgapsp.apsp(g, backend="cpu", sources=[label])
    _clipped(info.value)


def test_quote():
    assert quote("abc") == repr("abc")
    assert quote(np.float64(1.5)) == "1.5" and quote(np.str_("a")) == "'a'"
    long = quote("x" * BIG, 80)
    assert len(long) == 80 and long.endswith("...") and long.startswith("'x")
    assert len(quote("\x00" * 1000)) <= 80


# -- bad sources and targets --------------------------------------------------
@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(25)
    src, dst = rng.integers(0, 6, 20), rng.integers(0, 6, 20)
    src[:6], dst[:6] = np.arange(6), (np.arange(6) + 1) % 6      # every vertex 0..5
    return mgapsp.as_graph((src, dst, rng.integers(1, 9, 20).astype(float)))


@pytest.mark.parametrize("which", ["sources", "targets"])
@pytest.mark.parametrize("value,kind", [
    ([1.5], UnknownLabelError),
    ([np.nan], UnknownLabelError),
    (np.array([0.0, 2.5]), UnknownLabelError),
    ([np.inf], UnknownLabelError),
    ([[1, 2]], MgapspError),
    (np.array([[0], [1]]), MgapspError),
    ([[1], [1, 2]], MgapspError),
    ([True], MgapspError),
    (True, MgapspError),
    (np.array([True, False]), MgapspError),
    ([0, True], MgapspError),
    ([None], MgapspError),
    ({1, 2}, MgapspError),
    ([1 + 2j], MgapspError),
])
def test_bad_sources_and_targets_are_one_mgapsp_error(small, which, value, kind):
    with pytest.raises(MgapspError) as info:
        mgapsp.apsp(small, backend="cpu", **{which: value})
    assert isinstance(info.value, kind)
    if kind is MgapspError:         # a shape or a kind, not a missing label
        assert not isinstance(info.value, UnknownLabelError)
    msg = str(info.value)
    assert which[:-1] in msg and "\n" not in msg and len(msg) < 300


@pytest.mark.parametrize("which", ["sources", "targets"])
def test_a_fraction_is_never_truncated_and_an_integral_float_is_its_integer(small, which):
    exact = mgapsp.apsp(small, backend="cpu", **{which: [2, 4]})
    assert np.array_equal(mgapsp.apsp(small, backend="cpu", **{which: [2.0, 4.0]}), exact)
    with pytest.raises(UnknownLabelError, match="2.5"):
        mgapsp.apsp(small, backend="cpu", **{which: [2.5, 4]})


def test_a_fraction_on_text_labels_is_an_unknown_label():
    g = mgapsp.as_graph((np.array(["a", "b"]), np.array(["b", "a"])))
    with pytest.raises(UnknownLabelError, match="1.5"):
        mgapsp.apsp(g, backend="cpu", sources=[1.5])


# -- other bad input: MgapspError, one line ----------------------------------
@pytest.mark.parametrize("make", [
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1, 0]), np.array(["a", "b"]))),
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1, 0]), [object(), 1.0])),
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1, 0]), np.array([np.nan, 1.0]))),
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1, 0]), np.array([1j, 1.0]))),
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1]))),
    lambda: mgapsp.as_graph((np.array([0, 1]), np.array([1, 0]), np.array([1.0]))),
    lambda: mgapsp.as_graph((np.array([]), np.array([]))),
    lambda: mgapsp.as_graph((None, None)),
    lambda: mgapsp.as_graph(([[0, 1], [1]], [1, 0])),
    lambda: mgapsp.as_graph(np.array([["a", "b"], ["c", "d"]])),
    lambda: mgapsp.as_graph(np.array([[0, 1j], [1, 0]])),
    lambda: mgapsp.as_graph(sp.csr_array(np.array([[0, 1j], [1, 0]]))),
    lambda: mgapsp.as_graph(sp.csr_array((2, 3))),
    lambda: mgapsp.read_graph(5),
    lambda: mgapsp.read_graph(None),
    lambda: mgapsp.apsp(np.ones((3, 3)), backend="cpu", batch_size=-1),
    lambda: mgapsp.apsp(np.ones((3, 3)), backend="cpu", dtype="float16x"),
    lambda: mgapsp.apsp(np.ones((3, 3)), backend="cpu", algorithm="quantum"),
    lambda: mgapsp.apsp(np.ones((3, 3)), backend="nowhere"),
])
def test_other_bad_input_is_one_mgapsp_error(make):
    with pytest.raises(MgapspError) as info:
        make()
    msg = str(info.value)
    assert msg and "\n" not in msg and len(msg) < 300


def test_mismatched_edge_arrays_name_their_lengths():
    src, dst = np.arange(5), np.arange(3)
    with pytest.raises(GraphFormatError, match=f"{len(src)} sources, {len(dst)} targets"):
        mgapsp.as_graph((src, dst))


def test_a_text_weight_of_a_networkx_graph_is_named():
    nx = pytest.importorskip("networkx")
    g = nx.DiGraph()
    g.add_edge(0, 1, weight=2.0)
    g.add_edge(1, 2, weight="heavy")
    with pytest.raises(GraphFormatError, match="'heavy'"):
        mgapsp.as_graph(g)


# -- the SciPy drop-ins raise SciPy's classes ---------------------------------
_M = np.array([[0, 1, 0], [0, 0, 2], [3, 0, 0]], dtype=float)


@pytest.mark.parametrize("kwargs", [dict(indices=[np.nan]), dict(indices=["a"]),
                                    dict(indices=[[0], [1, 2]]), dict(indices=[7])])
def test_dropin_bad_indices_are_mgapsp_errors_where_scipy_raises_valueerror(kwargs):
    with pytest.raises(ValueError):
        scipy_csgraph.dijkstra(_M, **kwargs)
    with pytest.raises(MgapspError) as info:
        mgapsp.dijkstra(_M, **kwargs)
    assert "\n" not in str(info.value)


def test_dropin_ragged_graph_is_a_mgapsp_error():
    ragged = [[0, 1], [1]]
    with pytest.raises(ValueError):
        scipy_csgraph.shortest_path(ragged)
    with pytest.raises(GraphFormatError):
        mgapsp.shortest_path(ragged)


@pytest.mark.parametrize("call", [
    lambda mod: mod.dijkstra(np.array([["a", "b"], ["c", "d"]])),
    lambda mod: mod.floyd_warshall(np.array([["a", "b"], ["c", "d"]])),
    lambda mod: mod.dijkstra(_M, limit="x"),
])
def test_dropins_keep_scipys_typeerrors(call):
    with pytest.raises(TypeError):
        call(scipy_csgraph)
    with pytest.raises(TypeError):
        call(mgapsp)


@pytest.mark.parametrize("bad", [1.5, "x", 0, -3, True, [4]])
def test_bad_batch_sizes_are_one_error(bad):
    g = mgapsp.as_graph((np.array([0, 1, 2]), np.array([1, 2, 0]), np.array([1.0, 2.0, 3.0])))
    with pytest.raises(mgapsp.MgapspError, match="batch size must be an integer"):
        mgapsp.apsp(g, batch_size=bad, backend="cpu")


@pytest.mark.parametrize("total", [1, 4095, 4096, 2**21 + 17, 3 * 2**24 + 5])
@pytest.mark.parametrize("parts", [1, 3, 12])
def test_page_spans_cover_the_range_once_in_whole_pages(total, parts):
    from mgapsp.memory import SPAN_BYTES, page_spans

    spans = page_spans(total, parts)
    assert spans[0][0] == 0 and spans[-1][1] == total
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert all(lo % 4096 == 0 for lo, _ in spans)
    assert len(spans) <= max(1, min(parts, total // SPAN_BYTES or 1))


@pytest.mark.parametrize("shape", [(3, 5), (1024, 4099)])
def test_a_fresh_array_is_whole_and_zeroed(shape):
    from mgapsp.memory import fresh_array

    arr = fresh_array(shape, np.float32)
    assert arr.shape == shape and arr.dtype == np.float32 and arr.flags.c_contiguous
    if arr.nbytes >= 16 * 2**20:
        assert not arr.any()                 # every page was touched (written zeros)
    arr[...] = 1
    assert arr.sum() == arr.size


def test_the_cpu_backend_counts_memory_as_the_readers_do():
    """Issue 53: the CPU backend's memory for Floyd-Warshall's check is what the process
    may allocate (an address-space rlimit counted), not the host's free pages: under a
    cap of 512 MiB above its imports it sees at most that, as the readers do."""
    code = (
        "import os, resource\n"
        "from mgapsp.backends.cpu import CPUBackend\n"
        "from mgapsp.memory import available_memory\n"
        "used = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE')\n"
        "cap = used + 512 * 2**20\n"
        "resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
        "print(CPUBackend().memory_available(), available_memory())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    backend, readers = map(int, proc.stdout.split())
    assert 0 < backend <= 512 * 2**20 and abs(backend - readers) < 64 * 2**20, proc.stdout
