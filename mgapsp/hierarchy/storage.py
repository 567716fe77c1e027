"""Where hierarchies are kept: files keyed by the graph's fingerprint (written
atomically), and the few this process holds in memory."""

from __future__ import annotations

import os
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..graph import Graph
from .construct import build
from .model import FIELDS, FORMAT, Hierarchy, check_weights

__all__ = ["save", "load", "cached", "for_graph", "known", "AUTO_ARCS"]

#: most arcs, per edge or vertex of the graph, of a hierarchy that ``auto`` uses (road
#: networks have one to three; a graph that fills in has tens)
AUTO_ARCS = 8
#: hierarchies this process keeps in memory (by graph fingerprint)
_KEEP = 2
_MEMO: "OrderedDict[str, Hierarchy]" = OrderedDict()
_MEMO_LOCK = threading.Lock()




def save(h: Hierarchy, path) -> Path:
    """Write ``h`` to ``path`` (an ``.npz``), atomically (a temporary file renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hierarchy-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, format=np.int64(FORMAT), fingerprint=np.str_(h.fingerprint),
                     **{k: getattr(h, k) for k in FIELDS})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path, graph: Graph) -> Hierarchy | None:
    """The hierarchy saved at ``path`` for ``graph``, or None when there is none, it is
    of another graph or another format, or it cannot be read (it is then rebuilt)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if int(z["format"]) != FORMAT or str(z["fingerprint"]) != graph.fingerprint:
                return None
            h = Hierarchy(fingerprint=graph.fingerprint, **{k: z[k] for k in FIELDS})
    except (OSError, ValueError, KeyError, EOFError):
        return None
    if h.n != graph.n or len(h.up_ptr) != graph.n + 1 or int(h.up_ptr[-1]) != h.arcs:
        return None
    return h


def cached(graph: Graph, directory=None) -> Hierarchy:
    """``graph``'s hierarchy: read from ``directory`` (keyed by the fingerprint) when
    it is there, else built (and saved there when a directory is given)."""
    if directory is None:
        return build(graph)
    path = Path(directory) / f"{graph.fingerprint}.npz"
    h = load(path, graph) if path.exists() else None
    if h is None:
        h = build(graph)
        save(h, path)
    return h


def _remember(key: str, h: Hierarchy) -> None:
    """Keep ``h`` as the newest of this process's hierarchies (``_MEMO_LOCK`` held)."""
    _MEMO[key] = h
    _MEMO.move_to_end(key)
    while len(_MEMO) > _KEEP:
        _MEMO.popitem(last=False)


def for_graph(graph: Graph, directory=None) -> Hierarchy:
    """This process's hierarchy of ``graph``: kept in memory after first use; read
    from ``directory`` when it is there, else built (and saved there).  Threads
    asking for the same graph at once build it once."""
    key = graph.fingerprint
    with _MEMO_LOCK:
        h = _MEMO.get(key)
        if h is None:
            check_weights(graph)
            h = cached(graph, directory)
        _remember(key, h)
        return h


def known(graph: Graph, directory=None) -> bool:
    """Whether ``graph`` has a hierarchy already (in this process, or saved in
    ``directory``) that is worth sweeping: ``auto`` then picks phast, paying no build."""
    if graph.has_negative_weights:
        return False
    key = graph.fingerprint
    with _MEMO_LOCK:
        h = _MEMO.get(key)
    if h is None and directory is not None:
        path = Path(directory) / f"{key}.npz"
        h = load(path, graph) if path.exists() else None
        if h is not None:
            with _MEMO_LOCK:
                _remember(key, h)
    return h is not None and h.arcs <= AUTO_ARCS * (graph.m + graph.n)


