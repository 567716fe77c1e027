"""A computed store, read by vertex label: :func:`open` and :class:`Result`.

``mgapsp.apsp(..., out=path)`` returns one, and ``mgapsp.open(path)`` opens one made
before (or being made: rows not computed yet are refused, never returned as NaN).
"""

from __future__ import annotations

import os

import numpy as np

from .errors import MgapspError, StoreError, UnknownLabelError
from .graph import lookup_array
from .memory import fresh_array
from .reductions import betweenness_scale
from .store import Store, damaged_batches
from .store.rows import read as read_rows
from .store.objects import raise_if_unreachable

__all__ = ["open", "Result"]


def _as_slice(index):
    """``index`` (a slice, or a sequence of positions) as a slice where it is a run of
    consecutive positions, else as it is."""
    if isinstance(index, slice):
        return index
    arr = np.asarray(index)
    if arr.ndim == 1 and arr.size and arr.dtype.kind in "iu" and \
            arr[-1] - arr[0] == arr.size - 1 and (arr.size == 1 or (np.diff(arr) == 1).all()):
        return slice(int(arr[0]), int(arr[-1]) + 1)
    return index


def open(path) -> "Result":  # noqa: A001 - mgapsp.open, as zarr.open and xarray's
    """The store at ``path`` as a :class:`Result`.

    >>> import mgapsp, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.zarr")
    >>> _ = mgapsp.apsp((["a", "b"], ["b", "c"], [1.5, 2.0]), out=path)
    >>> result = mgapsp.open(path)
    >>> result.distance("a", "c")
    3.5
    >>> result.distances(["a", "b"], ["c"])
    array([[3.5],
           [2. ]])
    """
    return Result(path)


#: the store's own bookkeeping, not data: left out of :meth:`Result.to_xarray`
_INTERNAL = ("batch_done", "source_index", "target_index")


class Result:
    """Distances (and predecessors) of a store, addressed by vertex labels.

    ``result[name]`` is the store's Zarr array ``name`` (``"distances"``, ...), and
    :attr:`group` its Zarr group, for code that reads the store directly.
    """

    def __init__(self, path):
        self.location = os.fspath(path)
        self.store = Store.open(self.location)
        self.group = self.store.group
        self._lookups: dict[str, tuple[dict, np.dtype]] = {}
        self._vouched = False       # every flagged batch checked (see _vouch_all)

    def __repr__(self) -> str:
        info = self.info
        what = (f"{info['sources']} x {info['targets']} {info['dtype']}"
                if self.store.job.get("distances", True)
                else f"metrics only of {info['sources']} sources")
        return f"<mgapsp.Result {self.location!r}: {what}, {info['rows_done']} rows done>"

    def __getitem__(self, name: str):
        """The Zarr array ``name``, read as it is (no check per read): its batches are
        checked once, when first handed out, as :meth:`to_xarray` does."""
        if name in ("distances", "predecessors") or name in self.store.job.get("metrics", ()):
            self._vouch_all()
        return self.group[name]

    def _vouch_all(self) -> None:
        """Every flagged batch's files checked once (whole, in their place: the quick
        check of ``info``), before the arrays are handed to a reader that reads them
        without this module: a shard or chunk file moved is refused, not served."""
        if self._vouched:
            return
        damaged = damaged_batches(self.store)
        if damaged:
            b, problem = min(damaged.items())
            raise self._damaged(f"batch {b} ({problem})")
        self._vouched = True

    def __contains__(self, name: str) -> bool:
        return name in self.group

    @property
    def attrs(self):
        """The store's attributes (``format_version``, ``graph``, ``job``, ``progress``)."""
        return self.group.attrs

    @property
    def info(self) -> dict:
        """The graph, the job's options and its progress (from the batch flags)."""
        attrs = self.store.attrs
        job, plan = attrs["job"], self.store.plan()
        done = self.store.done_mask()
        rows_done = sum(min(plan.batch_size, plan.n_sources - b * plan.batch_size)
                        for b in np.flatnonzero(done))
        return {"location": self.location, "graph": attrs["graph"], "algorithm": job["algorithm"],
                "dtype": job["dtype"], "sources": job["n_sources"],
                "targets": job["n_targets"], "predecessors": job["predecessors"],
                "batches": plan.n_batches, "batches_done": int(done.sum()),
                "rows_done": int(rows_done), "complete": bool(done.all()),
                "created": attrs.get("created")}

    # -- by label ---------------------------------------------------------------
    def _lookup(self, which: str) -> tuple[dict, np.dtype]:
        """Label -> position of the rows or columns (a repeated source: its first row),
        and the labels' dtype; read from the store once."""
        if which not in self._lookups:
            labels = self.store.labels(which)
            lookup: dict = {}
            for k, label in enumerate(labels.tolist()):
                lookup.setdefault(label, k)
            self._lookups[which] = (lookup, labels.dtype)
        return self._lookups[which]

    def _positions(self, which: str, labels) -> np.ndarray:
        lookup, kind = self._lookup(which)
        if isinstance(labels, tuple) and self.store.attrs["graph"].get("object_labels"):
            labels = [labels]   # the graph's labels were tuples: a tuple is one of them
        wanted = lookup_array(labels, kind, which)
        out = np.empty(len(wanted), dtype=np.int64)
        for k, label in enumerate(wanted.tolist()):
            if label not in lookup:
                raise UnknownLabelError(f"{label!r} is not a {which} of {self.location}")
            out[k] = lookup[label]
        return out

    def _check_computed(self, rows: np.ndarray) -> None:
        batch = self.store.job["batch_size"]
        done = self.store.done_mask()
        missing = rows[~done[rows // batch]] if len(rows) else rows
        if len(missing):
            label = self.store.labels("source")[missing[0]].item()
            raise MgapspError(f"{self.location}: the row of source {label!r} is not computed "
                              "yet; continue the job with --resume")
        damaged = damaged_batches(self.store, np.unique(rows // batch))
        if damaged:
            b, problem = min(damaged.items())
            raise self._damaged(f"batch {b} ({problem})")

    def _damaged(self, what: str) -> StoreError:
        return StoreError(f"{self.location}: damaged: {what}; `mgapsp repair "
                          f"{self.location}` computes it again")

    def _read(self, name: str, selection) -> np.ndarray:
        """``selection`` of array ``name``; a chunk failing its checksum, or a value
        never written in a row said to be computed, is damage, never a result."""
        if name in ("distances", "predecessors") and not self.store.job.get("distances", True):
            raise StoreError(f"{self.location} holds no {name}: its job stored only its "
                             "metrics (--no-distances); read them with Result.metric")
        array = self.group[name]
        # a run of consecutive rows or columns as a slice: Zarr reads a slice chunk by
        # chunk, an index array element by element (25x slower for a whole store)
        selection = tuple(_as_slice(s) for s in selection)
        shape = tuple(len(range(*s.indices(n))) if isinstance(s, slice) else len(s)
                      for s, n in zip(selection, array.shape))
        # into an array whose pages are faulted in by several threads: on one thread
        # the faults take as long as decoding the chunks
        values = fresh_array(shape, array.dtype)
        try:
            # a few rows decode only the parts of their chunks that they need
            read_rows(array, *selection, out=values)
        except Exception as exc:    # Zarr's codecs raise several types
            raise_if_unreachable(f"{self.store.path}/{name}", exc)    # else damage
            what = ("fails its checksum" if "checksum" in str(exc)
                    else f"cannot be read ({str(exc)[:120]})")
            raise self._damaged(f"a chunk of {name} {what}") from None
        # max() propagates a NaN, without isnan's temporary array of the whole read
        if values.dtype.kind == "f" and values.size and np.isnan(values.max()):
            raise self._damaged(f"{name} holds values never written")
        return values

    def distances(self, sources=None, targets=None) -> np.ndarray:
        """The distances from ``sources`` to ``targets`` (labels; None: all of the
        store's), a NumPy array of shape (len(sources), len(targets)), ``inf`` where
        unreachable."""
        rows = (np.arange(self.store.job["n_sources"]) if sources is None
                else self._positions("source", sources))
        self._check_computed(rows)
        if targets is None:
            return self._read("distances", (rows, slice(None)))
        cols = self._positions("target", targets)
        return self._read("distances", (rows, cols))

    def metric(self, name: str, sources=None) -> np.ndarray:
        """The job's per-source metric ``name`` (``closeness``, ``harmonic``,
        ``eccentricity``, ``reachable``, ``distance_sum``: ``mgapsp run --metrics``)
        of ``sources`` (labels; None: all of the store's), over each source's row.
        ``to_xarray()`` has them too, by the ``source`` coordinate."""
        if name == "histogram":
            raise MgapspError("the histogram is the job's, not a source's: read it with "
                              "Result.distance_histogram()")
        if name == "betweenness":
            raise MgapspError("betweenness is each vertex's, not a source's: read it with "
                              "Result.betweenness()")
        values = self.store.metric(name)
        rows = (np.arange(len(values)) if sources is None
                else self._positions("source", sources))
        self._check_computed(rows)
        return values[rows]

    def betweenness(self, normalized: bool = True) -> dict:
        """Each vertex's betweenness from the job's sources (``mgapsp run --metrics
        betweenness``), a dict keyed by label: NetworkX's ``betweenness_centrality(G,
        normalized=normalized)`` where the sources are every vertex, its scaling of
        ``k`` sampled sources (``k=len(sources)``) where they are some.  Needs every
        batch computed."""
        if "betweenness" not in self.store.job.get("metrics", ()):
            raise MgapspError(f"{self.location} holds no betweenness; run the job with "
                              "--metrics betweenness")
        sources = self.store.source_index()
        self._check_computed(np.arange(len(sources)))
        labels = self.store.labels("vertex")
        n = len(labels)
        sampled = None
        if len(np.unique(sources)) < n:
            sampled = np.zeros(n, dtype=bool)
            sampled[sources] = True
        scale = betweenness_scale(n, sampled, normalized=normalized,
                                  directed=bool(self.store.attrs["graph"]["directed"]),
                                  endpoints=False)
        values = self.store.dependencies() * scale
        return dict(zip(labels.tolist(), values.tolist()))

    def distance_histogram(self):
        """The distribution of the distances of the rows computed (``mgapsp run
        --metrics histogram``): :func:`mgapsp.distance_histogram`'s answer, ``counts,
        edges = ...``, with ``unreachable`` and ``pairs``."""
        return self.store.distance_histogram()

    def distance(self, u, v) -> float:
        """The distance from ``u`` to ``v`` (labels); ``inf`` where unreachable."""
        return float(self.distances([u], [v])[0, 0])

    def path(self, u, v) -> list | None:
        """A shortest path from ``u`` to ``v`` as a list of labels (``[u]`` for
        ``u == v``); None where ``v`` is unreachable.  Needs a store computed with
        predecessors."""
        if "predecessors" not in self.group:
            raise MgapspError(f"{self.location} has no predecessors; compute it with "
                              "predecessors=True (--predecessors)")
        row = int(self._positions("source", [u])[0])
        self._check_computed(np.array([row]))
        t = int(self._positions("target", [v])[0])      # every target: column = vertex
        if not np.isfinite(self._read("distances", ([row], [t]))[0, 0]):
            return None
        pred = self._read("predecessors", ([row], slice(None)))[0]
        src = int(self.group["source_index"][row])
        hops = [t]
        while hops[-1] != src:
            hops.append(int(pred[hops[-1]]))
            if hops[-1] < 0 or len(hops) > len(pred):
                raise MgapspError(f"{self.location}: the predecessors of source {u!r} do not "
                                  "lead back to it; the store is damaged")
        labels = self.store.labels("vertex")
        return [labels[x].item() for x in reversed(hops)]

    def to_xarray(self):
        """The store as an ``xarray.Dataset`` (lazy, through Dask): ``distances`` with
        the label coordinates ``source`` and ``target``, so ``.sel(source=a,
        target=b)`` is the distance from ``a`` to ``b``."""
        try:
            import xarray
        except ImportError:
            raise MgapspError("to_xarray needs xarray: pip install xarray") from None
        self._vouch_all()
        # the store Zarr already opened: a path, or the objects of an s3:// store; each
        # array's own zarr.json (the one checked against its digest), not the
        # consolidated copy
        ds = xarray.open_zarr(self.group.store_path.store, consolidated=False)
        drop = [v for v in _INTERNAL if v in ds]
        if not self.store.job.get("distances", True):
            # stores made before metrics-only ones left it out held an empty one
            drop += [v for v in ("distances", "predecessors") if v in ds]
        return ds.drop_vars(drop)
