"""A real S3-protocol server on this machine for the object-store tests: moto's
server mode (``moto[server]``, the test extra), as s3fs's own tests use it.

moto keeps its objects in memory, so a restart would lose them; its request
recorder keeps every request, and replaying it after the restart puts the objects
back.  Clients reach the server through a small TCP forwarder that is closed from
the kill until the replay is done, so that no request meets an empty server: what
the clients see is an outage, as of a real server restarting.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_ALLOW_HTTP": "true"}


class FailingProxy:
    """An HTTP proxy in front of the server that answers 503 to every GET whose path
    ``fails(path)`` says, and passes every other request on: a server that still
    answers for metadata but no longer for some of the objects (an overloaded or
    failing back end)."""

    def __init__(self, backend: str, fails):
        import http.client
        import http.server

        target = urllib.parse.urlsplit(backend)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "GET" and fails(self.path):
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                conn.request(self.command, self.path, body=body, headers=dict(self.headers))
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the S3 server did not open port {port}")


class _Forwarder:
    """Accepts on ``port`` and pipes each connection to ``backend``; :meth:`close`
    resets every connection and stops accepting until :meth:`open`."""

    def __init__(self, port: int, backend: int):
        self.port, self.backend = port, backend
        self.conns: set[socket.socket] = set()
        self.server: socket.socket | None = None

    def open(self) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        self.server = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s: socket.socket) -> None:
        while True:
            try:
                client, _ = s.accept()
            except OSError:
                return
            try:
                back = socket.create_connection(("127.0.0.1", self.backend))
            except OSError:
                client.close()
                continue
            self.conns |= {client, back}
            for a, b in ((client, back), (back, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(1 << 20):
                b.sendall(data)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self.server is not None:
            try:    # wakes the thread blocked in accept(), which would keep it open
                self.server.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.server.close()
            self.server = None
        for c in list(self.conns):
            try:   # reset, not a clean end: a client sees its request fail
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                c.close()
            except OSError:
                pass
        self.conns.clear()


# moto's server as ``python -m moto.server`` runs it, its recorder's appends made one
# at a time: two large requests recorded at once interleave their lines in its file,
# which the replay then cannot read
_SERVE = """
import sys
import threading
from werkzeug.serving import run_simple
from moto.moto_api._internal.recorder.models import Recorder
from moto.server import DomainDispatcherApplication, create_backend_app
one_at_a_time, record = threading.Lock(), Recorder._record_request
def serial(self, *args, **kwargs):
    with one_at_a_time:
        return record(self, *args, **kwargs)
Recorder._record_request = serial
run_simple("127.0.0.1", int(sys.argv[1]), DomainDispatcherApplication(create_backend_app),
           threaded=True)
"""


class S3Server:
    """moto's S3 server with its recorder on, behind a forwarder; :attr:`endpoint`
    is what clients use, :attr:`env` their environment."""

    def __init__(self, workdir: Path, record: bool = True):
        self.workdir = Path(workdir)
        self.recording = record
        self.port, self.backend = free_port(), free_port()
        self.record = self.workdir / "moto-requests.jsonl"
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.env = {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}
        self.proc: subprocess.Popen | None = None
        self.forwarder = _Forwarder(self.port, self.backend)

    def _start_moto(self) -> None:
        env = {**os.environ, **CREDENTIALS, "MOTO_ENABLE_RECORDING": str(self.recording),
               "MOTO_RECORDER_FILEPATH": str(self.record)}
        with open(self.workdir / "moto.log", "ab") as log:     # what it says, kept
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _SERVE, str(self.backend)],
                stdout=subprocess.DEVNULL, stderr=log, env=env)
        _wait_port(self.backend)

    def start(self) -> "S3Server":
        self._start_moto()
        self.forwarder.open()
        return self

    def create_bucket(self, name: str) -> None:
        req = urllib.request.Request(f"http://127.0.0.1:{self.backend}/{name}", method="PUT")
        urllib.request.urlopen(req, timeout=30).close()

    def restart(self, down: float = 1.0) -> None:
        """Kill the server mid-whatever, keep it down ``down`` seconds, start it again
        and replay what it had been asked, then let clients in again."""
        self.forwarder.close()
        self.proc.kill()
        self.proc.wait()
        self._whole_records()
        time.sleep(down)
        self._start_moto()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.backend}/moto-api/recorder/replay-recording",
            method="POST")
        urllib.request.urlopen(req, timeout=120).close()
        self.forwarder.open()

    def _whole_records(self) -> None:
        """Drop what the kill cut from the recording: a request's record half written
        (a line that is not whole JSON), which would stop the replay.  Its client got
        no answer, and sends it again."""
        if not self.record.exists():
            return
        whole = []
        for line in self.record.read_text().splitlines():
            try:
                json.loads(line)
            except ValueError:
                continue
            whole.append(line + "\n")
        self.record.write_text("".join(whole))

    def stop(self) -> None:
        self.forwarder.close()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
