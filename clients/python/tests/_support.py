"""Real `idforge serve` processes for the client's tests.

Two servers share a worker-id registry (local:SHARED/workers: different worker ids)
and a segment store (sqlite:SHARED/segments.db: shared counters), each with its own
data dir and identity, so together they never issue the same ID.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # clients/python
REPO_ROOT = os.path.dirname(os.path.dirname(PACKAGE_ROOT))
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

IDFORGE_BIN = os.environ.get("IDFORGE_BIN") or os.path.join(REPO_ROOT, "build", "idforge")
ADMIN_TOKEN = "python-client-test-token"
VECTORS = os.path.join(REPO_ROOT, "tests", "data", "snowflake_vectors.txt")

_HTTP_LINE = re.compile(r"idforge serve: http http://127\.0\.0\.1:(\d+)/")
_RESP_LINE = re.compile(r"idforge serve: resp redis://127\.0\.0\.1:(\d+)")


def free_port() -> int:
    """A port with nothing listening on it (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeServer:
    """Answers every request (anything received) with the same bytes: for the answers
    a real server gives only when something is broken (a 503, a proxy's 401, ...)."""

    def __init__(self, answer: bytes):
        self.answer = answer
        self.requests = 0
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn:
            try:
                while conn.recv(65536):
                    self.requests += 1
                    conn.sendall(self.answer)
            except OSError:
                pass

    def close(self):
        self._sock.close()


class ServerProc:
    def __init__(self, root: str, shared: str, name: str):
        self.name = name
        self.data_dir = os.path.join(root, name)
        self.shared = shared
        self.out_path = os.path.join(root, name + ".out")
        self.err_path = os.path.join(root, name + ".err")
        self.proc = None
        self.http_port = 0
        self.resp_port = 0
        self.stopped = False

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def resp(self) -> str:
        return f"redis://127.0.0.1:{self.resp_port}"

    def start(self, timeout_s: float = 10.0) -> None:
        """Start on the ports it had (0 the first time: any free one)."""
        args = [IDFORGE_BIN, "serve",
                "--http", f"127.0.0.1:{self.http_port}",
                "--resp", f"127.0.0.1:{self.resp_port}",
                "--data-dir", self.data_dir,
                "--registry", f"local:{self.shared}/workers",
                "--store", f"sqlite:{self.shared}/segments.db",
                "--identity", f"python-test-{self.name}",
                "--admin-token", ADMIN_TOKEN,
                "--io-threads", "1", "--worker-threads", "2",
                # A loaded machine (make test runs much at once) can delay the thread
                # that renews the time reservation; wait for it rather than answer 503.
                "--max-wait-ms", "250",
                "--log-level", "warn"]
        # A server outlives nothing: killed with the test process (a ctest timeout)
        # through util-linux's setpriv, which execs it under the same pid.
        setpriv = shutil.which("setpriv")
        if setpriv:
            args = [setpriv, "--pdeathsig", "KILL", "--"] + args
        with open(self.out_path, "w") as out, open(self.err_path, "a") as err:
            self.proc = subprocess.Popen(args, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)
        self.stopped = False
        deadline = time.monotonic() + timeout_s
        while True:
            with open(self.out_path) as f:
                text = f.read()
            h, r = _HTTP_LINE.search(text), _RESP_LINE.search(text)
            if h and r:
                self.http_port, self.resp_port = int(h.group(1)), int(r.group(1))
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill9()
                with open(self.err_path) as f:
                    tail = f.read()[-2000:]
                raise RuntimeError(f"idforge serve {self.name} did not start: {tail}")
            time.sleep(0.01)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.stopped = False

    def sigstop(self) -> None:
        """SIGSTOP, and wait until every thread of the process has stopped."""
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True
        task_dir = f"/proc/{self.proc.pid}/task"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            states = []
            for tid in os.listdir(task_dir):
                try:
                    with open(f"{task_dir}/{tid}/stat") as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except OSError:
                    pass
            if states and all(st in ("T", "t") for st in states):
                return
            time.sleep(0.001)
        raise RuntimeError(f"idforge serve {self.name} did not stop")

    def sigcont(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def terminate(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.sigcont()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill9()

    def get_json(self, path: str, token: bool = False, body=None):
        req = urllib.request.Request(self.http + path,
                                     data=None if body is None else json.dumps(body).encode())
        if token:
            req.add_header("Authorization", f"Bearer {ADMIN_TOKEN}")
        if body is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def metric(self, name: str, **labels) -> float:
        """The value of one sample of /metrics (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        with urllib.request.urlopen(self.http + "/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                key, _, value = line.rpartition(" ")
                if key == (f"{name}{{{want}}}" if want else name):
                    return float(value)
        return 0.0

    def status(self) -> dict:
        return self.get_json("/v1/status")

    def node(self) -> tuple:
        """(datacenter, worker) of its Snowflake IDs."""
        lease = self.status()["lease"]
        return lease["datacenter"], lease["worker"]

    def wait_ready(self, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(self.http + "/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"idforge serve {self.name} is not ready")
            time.sleep(0.02)


class Cluster:
    """Two servers, A and B, and tags created through the admin API."""

    def __init__(self, tags=("order", "bulk")):
        if not os.access(IDFORGE_BIN, os.X_OK):
            raise RuntimeError(f"no idforge binary at {IDFORGE_BIN} (set IDFORGE_BIN)")
        # On a tmpfs when there is one: the servers fsync their high-water marks, and a
        # disk busy with builds can stall an fsync long enough for a 503.
        tmp_root = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self._tmp = tempfile.TemporaryDirectory(prefix="idforge-pyclient-", dir=tmp_root)
        root = self._tmp.name
        shared = os.path.join(root, "shared")
        os.makedirs(shared)
        self.a = ServerProc(root, shared, "a")
        self.b = ServerProc(root, shared, "b")
        try:
            self.a.start()
            self.b.start()
            for tag in tags:
                # A small step: the two servers take many ranges from the shared store.
                self.a.get_json("/v1/admin/tags", token=True,
                                body={"tag": tag, "step": 100, "start": "1"})
            self.a.wait_ready()
            self.b.wait_ready()
        except BaseException:
            self.close()
            raise

    @property
    def servers(self):
        return (self.a, self.b)

    def heal(self) -> None:
        """Both running and not stopped (after a test that stopped or killed one)."""
        for s in self.servers:
            if s.stopped:
                s.sigcont()
            if s.proc is None or s.proc.poll() is not None:
                s.start()

    def close(self) -> None:
        for s in self.servers:
            s.terminate()
        self._tmp.cleanup()
