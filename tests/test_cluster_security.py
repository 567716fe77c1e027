"""The embedded cluster on a shared host: TLS with credentials made for each run, so
that a process without them (another user's) cannot reach its scheduler."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import dask
import pytest

from mgapsp.errors import MgapspError
from mgapsp.jobs.cluster import connect, embedded_security

REPO = Path(__file__).resolve().parent.parent


def _other_client_sum(client, address, security=None):
    """A second, plain ``distributed.Client`` of this process (``security``: none by
    default) connects to ``address`` and runs a task; its result.  It runs on the job
    client's event loop, so that no new loop thread has to start on a busy machine."""
    from distributed import Client

    async def attempt():
        other = Client(address, security=security, asynchronous=True, timeout=5)
        try:
            await other
            return await other.submit(sum, [2, 2])
        finally:
            await other.close()

    return client.sync(attempt)


def _refused(client, address, security=None):
    # no credentials: TypeError ("TLS expects a ssl_context"); plain TCP to a TLS port,
    # or a certificate that the cluster did not issue: the handshake fails (OSError)
    with pytest.raises((TypeError, OSError, TimeoutError)):
        _other_client_sum(client, address, security)
    return True


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "true"])
def test_embedded_cluster_refuses_clients_without_its_credentials(mode):
    pytest.importorskip("cryptography")
    from distributed import Security

    with dask.config.set({"mgapsp.cluster.tls": mode,
                          "mgapsp.cluster.dashboard-address": "127.0.0.1:0"}), \
            connect(backend="cpu", n_workers=1, cpu_workers=1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.security.require_encryption
        # the job's own client, and the workers (one added by cpu_workers), are in
        assert client.submit(sum, [1, 2]).result() == 3
        assert len(client.scheduler_info()["workers"]) == 2
        assert all(w.startswith("tls://") for w in client.scheduler_info()["workers"])
        # another local process: without credentials, over plain TCP, or with a
        # certificate of its own
        assert _refused(client, address)
        assert _refused(client, address.replace("tls://", "tcp://"))
        assert _refused(client, address, Security.temporary())
        # the dashboard stays plain HTTP on loopback
        assert client.dashboard_link.startswith("http://127.0.0.1:")
        assert client.submit(sum, [3, 4]).result() == 7


@pytest.mark.slow
def test_embedded_cluster_without_tls():
    with dask.config.set({"mgapsp.cluster.tls": False}), \
            connect(backend="cpu", n_workers=1, dashboard=False) as client:
        address = client.scheduler.address
        assert address.startswith("tcp://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        # what TLS prevents: any local process can send it work
        assert _other_client_sum(client, address) == 4


@pytest.mark.parametrize("value", ["maybe", "", 2])
def test_bad_tls_value_is_one_error(value):
    with dask.config.set({"mgapsp.cluster.tls": value}):
        with pytest.raises(MgapspError, match=r"mgapsp\.cluster\.tls") as err:
            with connect(backend="cpu", n_workers=1, dashboard=False):
                pass  # pragma: no cover
    assert "\n" not in str(err.value) and "auto, true or false" in str(err.value)


@pytest.mark.parametrize("value", [False, "false", "False", "off", "0", " FALSE "])
def test_tls_off_values(value):
    with dask.config.set({"mgapsp.cluster.tls": value}):
        assert embedded_security() is None


@pytest.mark.parametrize("value", [True, "true", "auto", "on"])
def test_tls_on_values(value):
    pytest.importorskip("cryptography")
    with dask.config.set({"mgapsp.cluster.tls": value}):
        security = embedded_security()
    assert security.require_encryption
    # a fresh key and certificate for every run
    with dask.config.set({"mgapsp.cluster.tls": value}):
        assert embedded_security().tls_scheduler_key != security.tls_scheduler_key


def test_tls_default_is_auto():
    from mgapsp import config

    assert config.KNOBS["cluster.tls"].default == "auto"
    assert config.KNOBS["cluster.tls"].user


def test_without_cryptography(monkeypatch, caplog):
    """auto: plain TCP and a warning; true: one error saying what to install."""
    from distributed import Security

    def missing(*args, **kwargs):
        raise ImportError("Using `Security.temporary` requires `cryptography`")

    monkeypatch.setattr(Security, "temporary", classmethod(missing))
    with dask.config.set({"mgapsp.cluster.tls": "true"}):
        with pytest.raises(MgapspError, match="cryptography") as err:
            embedded_security()
    assert "mgapsp.cluster.tls" in str(err.value) and "\n" not in str(err.value)
    with dask.config.set({"mgapsp.cluster.tls": "auto"}), \
            caplog.at_level(logging.WARNING, logger="mgapsp"):
        assert embedded_security() is None
    (record,) = [r for r in caplog.records if "without TLS" in r.getMessage()]
    assert record.levelno == logging.WARNING and "cryptography" in record.getMessage()


@pytest.mark.slow
def test_cli_bad_tls_value(data_dir, tmp_path):
    env = {**os.environ, "DASK_MGAPSP__CLUSTER__TLS": "maybe",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                       os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "mgapsp", "run", str(data_dir / "karate.mtx"),
                           "-o", str(tmp_path / "k.zarr"), "--backend", "cpu", "-q"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "mgapsp.cluster.tls" in lines[0]
    assert not (tmp_path / "k.zarr").exists()
