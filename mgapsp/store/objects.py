"""Stores in object storage: ``s3://bucket/path`` (and ``gs://``, ``az://``), through
obstore's clients (the ``s3`` extra; Zarr's own ``ObjectStore`` reads and writes the
same objects).

An object store has no directories, renames or file locks, but it has what a store
needs instead: a PUT is atomic (a reader sees the old object or the new, never part
of one), so a shard written whole in one PUT is as whole as a file renamed into
place; and a conditional PUT (``If-None-Match: *`` to create, ``If-Match`` an ETag
to replace) lets exactly one of two runs take the lock (:mod:`.lock`).
:class:`~mgapsp.store.place.ObjectPlace` is a store's place in a bucket, through the
:class:`Bucket` here.

Where the objects are and who may read them comes from the environment, as for
every S3 client: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ALLOW_HTTP`` (Google's and Azure's
likewise); workers need the same variables as the client.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from .. import config
from ..errors import StoreError

__all__ = ["Bucket", "bucket", "bucket_of", "Meta", "raise_if_unreachable", "unreachable"]


@dataclass(frozen=True)
class Meta:
    """An object's size, version tag and time of its last write (seconds since the
    epoch, the server's clock)."""

    key: str
    size: int
    e_tag: str | None
    modified: float


def _meta(m: dict, strip: int) -> Meta:
    return Meta(key=m["path"][strip:], size=int(m["size"]), e_tag=m.get("e_tag"),
                modified=m["last_modified"].timestamp())


class Bucket:
    """The objects of one store: keys relative to the store's prefix, and the keys
    beside it (its lock).  Thread-safe (obstore's clients are)."""

    def __init__(self, url: str):
        try:
            import obstore  # noqa: F401
            from obstore.store import from_url
        except ImportError:
            raise StoreError(f"{url}: stores in object storage need obstore (pip "
                             "install 'mgapsp[s3]')") from None
        self.url = url.rstrip("/")
        scheme, rest = self.url.split("://", 1)
        bucket, _, prefix = rest.partition("/")
        if not bucket or not prefix:
            raise StoreError(f"{url}: a store is a folder of its own in a bucket (such as "
                             f"{scheme}://bucket/out.zarr), not a bucket's root")
        self.prefix, self.bucket = prefix, bucket
        try:
            self.client = from_url(f"{scheme}://{bucket}", **_options(scheme))
        except Exception as exc:        # obstore's config errors: one line
            raise StoreError(f"{url}: cannot open the object store: {_first(exc)}") from None
        self._zarr: dict[bool, object] = {}

    def key(self, name: str = "") -> str:
        return f"{self.prefix}/{name}" if name else self.prefix

    def beside(self, suffix: str) -> str:
        """The key of an object beside the store (``out.zarr.lock``): pass it as
        ``at=`` to :meth:`get`, :meth:`head`, :meth:`put` and :meth:`delete`."""
        return self.prefix + suffix

    def zarr_store(self, read_only: bool = False):
        """Zarr's store of these objects."""
        if read_only not in self._zarr:
            from obstore.store import from_url
            from zarr.storage import ObjectStore

            scheme = self.url.split("://", 1)[0]
            store = ObjectStore(from_url(self.url, **_options(scheme)), read_only=read_only)
            self._zarr[read_only] = store
            with _LOCK:
                _OF_STORE[id(store)] = self
        return self._zarr[read_only]

    # -- objects ------------------------------------------------------------------
    def get(self, name: str = "", start: int | None = None, length: int | None = None,
            *, at: str | None = None) -> bytes | None:
        """The object's bytes (``length`` of them from ``start``), or None where there
        is none."""
        import obstore

        key = at or self.key(name)
        try:
            if start is None:
                return obstore.get(self.client, key).bytes().to_bytes()
            return bytes(obstore.get_range(self.client, key, start=start, length=length))
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._error(name, "read", exc) from None

    def head(self, name: str = "", *, at: str | None = None) -> Meta | None:
        import obstore

        try:
            return _meta(obstore.head(self.client, at or self.key(name)),
                         0 if at else len(self.prefix) + 1)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._error(name, "read", exc) from None

    def put(self, name: str, data, *, mode=None, at: str | None = None) -> str | None:
        """Write the object whole (one PUT) and return its ETag.  ``mode``: None
        replaces it, ``"create"`` only where there is none (else
        :class:`FileExistsError`), ``{"e_tag": tag}`` only where it is still that
        version (else :class:`InterruptedError`)."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        if isinstance(data, list):
            data = b"".join(memoryview(d).cast("B") for d in data)
        key = at or self.key(name)
        view = memoryview(data).cast("B")
        try:
            # one PUT up to S3's 5 GiB a request; beyond, a multipart upload, which
            # also appears whole or not at all (at its completion)
            res = obstore.put(self.client, key, view, mode=mode or "overwrite",
                              use_multipart=len(view) > MULTIPART_BYTES)
        except AlreadyExistsError:
            raise FileExistsError(key) from None
        except FileNotFoundError:
            if not isinstance(mode, dict):
                # a PUT that matches no version fails so only where the bucket is gone
                raise StoreError(f"{self.url}: the bucket {self.bucket!r} does not "
                                 "exist; create it first") from None
            raise InterruptedError(key) from None   # the version matched is gone
        except PreconditionError:
            raise InterruptedError(key) from None   # a version that is not the object's
        except Exception as exc:
            raise self._error(name, "write", exc) from None
        return res.get("e_tag")

    def delete(self, names=(), *, at: str | None = None) -> None:
        import obstore

        keys = [at] if at else [self.key(n) for n in names]
        if not keys:
            return
        try:
            for i in range(0, len(keys), 1000):
                obstore.delete(self.client, keys[i:i + 1000])
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self._error(keys[0] if keys else "", "delete", exc) from None

    def list(self, under: str = "") -> list[Meta]:
        """Every object of the store (under its folder ``under``)."""
        import obstore

        strip = len(self.prefix) + 1
        try:
            out = []
            for page in obstore.list(self.client, prefix=self.key(under) + "/"):
                out.extend(_meta(m, strip) for m in page)
            return out
        except Exception as exc:
            raise self._error(under, "list", exc) from None

    def top(self) -> list[str]:
        """The names at the top of the store (objects and folders)."""
        import obstore

        strip = len(self.prefix) + 1
        try:
            res = obstore.list_with_delimiter(self.client, prefix=self.key() + "/")
        except Exception as exc:
            raise self._error("", "list", exc) from None
        return sorted([p[strip:].rstrip("/") for p in res["common_prefixes"]]
                      + [m["path"][strip:] for m in res["objects"]])

    def _error(self, name: str, what: str, exc: Exception) -> StoreError:
        where = f"{self.url}/{name}" if name else self.url
        return StoreError(f"{where}: cannot {what} it in the object store: {_explain(exc)}")


#: the largest object written in one PUT (S3 takes up to 5 GiB in one)
MULTIPART_BYTES = 4 * 2**30


def _options(scheme: str) -> dict:
    """Client options the environment does not carry by itself: retries that ride out
    a server's restart, and plain HTTP to a local server where ``AWS_ALLOW_HTTP``
    says so (as obstore's S3 client reads it)."""
    from datetime import timedelta

    # the time, not a count of tries, bounds the retries (30 tries took 8 s against a
    # server that was down)
    options: dict = {"retry_config": {
        "max_retries": 1_000_000, "retry_timeout": timedelta(seconds=config.get(
            "store.object-retry-seconds")),
        "backoff": {"init_backoff": timedelta(milliseconds=100),
                    "max_backoff": timedelta(seconds=5), "base": 2}}}
    if scheme in ("s3", "s3a") and os.environ.get("AWS_ALLOW_HTTP", "").lower() in (
            "1", "true", "yes"):
        options["client_options"] = {"allow_http": True}
    return options


def _explain(exc: Exception) -> str:
    """What went wrong, in the user's terms where obstore's words are its own."""
    text = str(exc)
    if "169.254.169.254" in text:
        return ("no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the "
                "client looked for a cloud machine's own credentials and found none)")
    if "builder error" in text and os.environ.get("AWS_ENDPOINT_URL", "").startswith("http:"):
        return (f"the endpoint {os.environ['AWS_ENDPOINT_URL']} is plain HTTP: set "
                "AWS_ALLOW_HTTP=true to use it")
    if "error sending request" in text:
        return ("the server does not answer (tried for "
                f"{config.get('store.object-retry-seconds')} s)")
    return _first(exc)


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says that the object store did not answer,
    or answered with an error, after the retries: never a sign that what it holds is
    damaged, so never a reason to read a store's objects one by one (each with its own
    retries) or to count them as lost."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        kind = type(seen)
        if (kind.__module__ or "").startswith("obstore") and kind.__name__ != "NotFoundError":
            return True
        if isinstance(seen, (ConnectionError, TimeoutError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def raise_if_unreachable(where: str, exc: BaseException) -> None:
    """Raise the one line for a store that did not answer (see :func:`unreachable`)
    where ``exc`` says so; else return, for the caller to take ``exc`` as damage."""
    if unreachable(exc):
        raise StoreError(f"{where}: cannot read it in the object store: "
                         f"{_explain(exc)}") from None


def _first(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


_BUCKETS: dict[str, Bucket] = {}
_OF_STORE: dict[int, Bucket] = {}       # id of a Zarr store made here -> its Bucket
_LOCK = threading.Lock()


def bucket(url: str) -> Bucket:
    """This process's :class:`Bucket` of the store at ``url`` (made once), a URL as
    :func:`~mgapsp.store.place.location` gives it."""
    url = url.rstrip("/")
    with _LOCK:
        if url not in _BUCKETS:
            _BUCKETS[url] = Bucket(url)
        return _BUCKETS[url]


def bucket_of(zarr_store) -> Bucket | None:
    """The :class:`Bucket` whose Zarr store ``zarr_store`` is (kept alive by it),
    or None for any other store."""
    with _LOCK:
        b = _OF_STORE.get(id(zarr_store))
    return b if b is not None and any(v is zarr_store for v in b._zarr.values()) else None
