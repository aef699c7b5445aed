#!/usr/bin/python3
"""TLS, tokens and slow clients against a real `idforge serve`, with real clients
(docs/operations.md, "Security"): curl --cacert, redis-cli --tls --cacert and Python's
ssl module. Certificates are made here with `openssl req` in a temporary directory.

- TLS on both listeners: TLS 1.3 and 1.2 answer, TLS 1.1 and a client that does not
  trust the CA are refused, a plain listener runs beside the TLS one.
- Tokens: HTTP 401 without a token or with a wrong one, 403 without the scope, 200
  with it; RESP NOAUTH before AUTH, WRONGPASS, OK.
- SIGHUP: a new certificate and a new tokens file are taken without dropping a
  connection open across the reload, but a RESP connection whose token was removed is
  closed at its next command, as Redis closes a deleted user's; a broken certificate
  keeps the old one.
- mTLS: a client certificate from the CA is served; none, or one from another CA, is
  refused (curl, redis-cli and Python).
- A client sending one byte a second (to the HTTP listener, and in a TLS handshake) is
  closed after request_timeout_ms; the server keeps serving.
- A non-loopback listener without TLS or tokens is named in a serve.exposed warning.
- A missing key file or a bad tokens line: exit 2 with one line naming the flag.

Usage: check.py IDFORGE_BIN   (ctest: security.tls_tokens)
"""
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from serve_process import stop_server  # noqa: E402

FAILURES = []

# Tokens of the test: each is at least 16 characters, as the tokens file requires.
TOKEN_ALL = "all-scopes-token-0123456789"
TOKEN_ORDER = "order-only-token-0123456789"
TOKEN_ROTATED = "rotated-in-token-0123456789"


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def make_cert(d, ca, name, usage):
    """A certificate `name`.pem/.key signed by `ca`, for 127.0.0.1 (server) or a client."""
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout",
            f"{name}.key", "-out", f"{name}.csr", cwd=d)
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(f"subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = {usage}\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem",
            cwd=d)


class Server:
    """One `idforge serve` on loopback, its stdout and its log (JSON lines) in files."""

    def __init__(self, binary, work, name, *flags):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, 0o700, exist_ok=True)
        self.out_path = os.path.join(work, f"{name}.out")
        self.log_path = os.path.join(work, f"{name}.log")
        self.proc = subprocess.Popen(
            [binary, "serve", "--data-dir", self.dir, "--registry", "static:0/1",
             "--log-format", "json", *flags],
            stdout=open(self.out_path, "w"), stderr=open(self.log_path, "w"))
        self.urls = {}
        for _ in range(300):
            with open(self.out_path) as f:
                for line in f:
                    if line.startswith("idforge serve: "):
                        key, url = line[len("idforge serve: "):].split()
                        self.urls[key] = url
            if ("http" in self.urls and "resp" in self.urls) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if "resp" not in self.urls:
            sys.exit(f"check.py: idforge serve ({name}) did not listen:\n" + self.log())

    def port(self, key):
        return int(self.urls[key].rstrip("/").rsplit(":", 1)[1])

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def events(self, name):
        out = []
        for line in self.log().splitlines():
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("event") == name:
                    out.append(e)
        return out

    def wait_event(self, name, count=1, seconds=5):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if len(self.events(name)) >= count:
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        """What went wrong with the server, if anything, once stopped (serve_process.py)."""
        return stop_server(self.proc, self.log)


def one_id(body):
    """Whether an answer of /v1/snowflake holds one ID."""
    try:
        ids = json.loads(body)["ids"]
    except (ValueError, KeyError, TypeError):
        return False
    return len(ids) == 1 and ids[0].isdigit()


def curl(*args):
    """curl's exit code, HTTP status and body."""
    p = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10",
                        *args], capture_output=True, text=True)
    body, _, code = p.stdout.rpartition("\n")
    return p.returncode, code, body


def redis_cli(port, *args, tls=None):
    cmd = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
    if tls:
        cmd += ["--tls", *tls]
    p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=20)
    return (p.stdout + p.stderr).strip()


def tls_context(ca, version=None, cert=None):
    ctx = ssl.create_default_context(cafile=ca)
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    if cert is not None:
        ctx.load_cert_chain(cert + ".pem", cert + ".key")
    return ctx


def https_get(port, path, ctx, token=None):
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, body


def peer_subject(port, ca):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with tls_context(ca).wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]


def resp_ask(conn, line):
    """Sends one inline RESP command; its one-line answer, or b"" when the server closed
    the connection instead of answering."""
    conn.sendall(line.encode() + b"\r\n")
    answer = b""
    while not answer.endswith(b"\r\n"):
        try:
            more = conn.recv(256)
        except (ssl.SSLError, ConnectionError):
            more = b""
        if not more:
            return answer
        answer += more
    return answer


def resp_tls(port, ctx, token):
    """A RESP connection over TLS and the answer to AUTH with `token`."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    return conn, resp_ask(conn, f"AUTH {token}")


def refused(fn):
    """Whether fn() fails with an SSL or connection error (a refused handshake)."""
    try:
        fn()
    except (ssl.SSLError, ConnectionError, OSError):
        return True
    return False


def slow_client(port, payload, interval):
    """Sends `payload` one byte per `interval` seconds; returns the seconds until the
    server closed the connection, or None if it never did."""
    start = time.time()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for b in payload:
            try:
                s.sendall(bytes([b]))
            except OSError:
                return time.time() - start
            time.sleep(interval)
            s.setblocking(False)
            try:
                if s.recv(4096) == b"":
                    return time.time() - start
            except BlockingIOError:
                pass
            except OSError:
                return time.time() - start
            s.setblocking(True)
    return None


def test_tls_and_tokens(binary, work, d):
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write(f"# the test's tokens\n{TOKEN_ALL} * name=all\n"
                f"{TOKEN_ORDER} segment:order name=order-app\n")
    cert = os.path.join(work, "live.pem")
    key = os.path.join(work, "live.key")
    shutil.copy(os.path.join(d, "server1.pem"), cert)
    shutil.copy(os.path.join(d, "server1.key"), key)
    subprocess.run([binary, "tag", "create", "order", "--data-dir", os.path.join(work, "tls")],
                   check=True, stdout=subprocess.DEVNULL)
    srv = Server(binary, work, "tls", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
                 "--plain-http", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key,
                 "--tokens", tokens, "--request-timeout-ms", "3000")
    ca = os.path.join(d, "ca.pem")
    try:
        check(srv.urls["http"].startswith("https://") and srv.urls["resp"].startswith("rediss://"),
              "TLS listeners print https:// and rediss:// URLs")
        http_port, resp_port, plain_port = (srv.port("http"), srv.port("resp"),
                                            srv.port("plain_http"))
        base = f"https://127.0.0.1:{http_port}"
        auth = ["-H", f"Authorization: Bearer {TOKEN_ALL}"]

        rc, code, body = curl("--cacert", ca, *auth, f"{base}/v1/snowflake")
        check(rc == 0 and code == "200" and one_id(body),
              f"curl --cacert over TLS with a token gets an ID ({rc} {code} {body[:60]})")
        rc, code, _ = curl(f"{base}/v1/snowflake")
        check(rc == 60, f"curl without the CA refuses the server's certificate (exit {rc})")
        rc, code, body = curl("--cacert", ca, f"{base}/v1/snowflake")
        check(code == "401", f"no token: 401 ({code} {body[:80]})")
        rc, code, _ = curl("--cacert", ca, "-H", "Authorization: Bearer not-a-token-at-all",
                           f"{base}/v1/snowflake")
        check(code == "401", f"a wrong token: 401 ({code})")
        rc, code, _ = curl("--cacert", ca, "-H", f"Authorization: Bearer {TOKEN_ORDER}",
                           f"{base}/v1/snowflake")
        check(code == "403", f"a token without the snowflake scope: 403 ({code})")
        rc, code, body = curl("--cacert", ca, "-H", f"Authorization: Bearer {TOKEN_ORDER}",
                              f"{base}/v1/segment/order")
        check(code == "200", f"a token with segment:order gets an order ID ({code} {body[:60]})")
        rc, code, _ = curl("--cacert", ca, f"{base}/healthz")
        check(code == "200", f"/healthz needs no token ({code})")
        rc, code, _ = curl(f"http://127.0.0.1:{plain_port}/v1/snowflake", *auth)
        check(code == "200", f"the plain listener beside the TLS one serves ({code})")
        rc, code, _ = curl("--cacert", ca, *auth, f"{base}/metrics")
        rc, code, metrics = curl("--cacert", ca, *auth, f"{base}/metrics")
        check(TOKEN_ALL not in metrics and TOKEN_ORDER not in metrics,
              "no token appears in /metrics")

        ctx13 = tls_context(ca, ssl.TLSVersion.TLSv1_3)
        ctx12 = tls_context(ca, ssl.TLSVersion.TLSv1_2)
        status, _ = https_get(http_port, "/v1/uuid7", ctx13, TOKEN_ALL)
        check(status == 200, f"Python ssl, TLS 1.3: {status}")
        status, _ = https_get(http_port, "/v1/uuid7", ctx12, TOKEN_ALL)
        check(status == 200, f"Python ssl, TLS 1.2: {status}")
        # openssl s_client can still offer TLS 1.1 (at security level 0); the server must
        # answer with a protocol_version alert. The same call with TLS 1.2 shows the
        # check can pass.
        def s_client(version):
            p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{http_port}",
                                version, "-cipher", "DEFAULT@SECLEVEL=0", "-CAfile", ca],
                               input="", capture_output=True, text=True, timeout=20)
            return p.returncode, p.stdout + p.stderr
        rc11, out11 = s_client("-tls1_1")
        rc12, out12 = s_client("-tls1_2")
        check(rc11 != 0 and "protocol version" in out11 and rc12 == 0,
              f"TLS 1.1 is refused with a protocol_version alert, 1.2 is not ({rc11}, {rc12})")

        tls = ["--cacert", ca]
        out = redis_cli(resp_port, "ID.SNOWFLAKE", tls=tls)
        check(out.startswith("NOAUTH Authentication required."), f"RESP before AUTH: {out!r}")
        out = redis_cli(resp_port, "--no-auth-warning", "-a", "wrong-token-0123456789",
                        "ID.SNOWFLAKE", tls=tls)
        check("WRONGPASS" in out, f"RESP with a wrong token: {out!r}")
        out = redis_cli(resp_port, "--no-auth-warning", "-a", TOKEN_ALL, "ID.SNOWFLAKE", tls=tls)
        check(out.isdigit(), f"redis-cli --tls --cacert with AUTH gets an ID: {out!r}")
        out = redis_cli(resp_port, "--no-auth-warning", "-a", TOKEN_ORDER, "ID.SNOWFLAKE",
                        tls=tls)
        check(out.startswith("NOPERM"), f"RESP, a token without the scope: {out!r}")
        out = redis_cli(resp_port, "--no-auth-warning", "-a", TOKEN_ORDER, "INCR", "order",
                        tls=tls)
        check(out.isdigit(), f"RESP INCR order with segment:order: {out!r}")
        out = redis_cli(resp_port, "PING")
        check("NOAUTH" not in out and "PONG" not in out,
              f"plain bytes to the TLS Redis listener get no answer: {out!r}")

        # RESP connections open across the reload: the one whose token goes is closed at
        # its next command (as Redis closes a deleted user's), the other goes on.
        order_conn, order_auth = resp_tls(resp_port, tls_context(ca), TOKEN_ORDER)
        all_conn, all_auth = resp_tls(resp_port, tls_context(ca), TOKEN_ALL)
        check(order_auth == b"+OK\r\n" and all_auth == b"+OK\r\n" and
              resp_ask(order_conn, "INCR order").startswith(b":"),
              f"RESP connections authenticated before SIGHUP ({order_auth!r}, {all_auth!r})")

        # A keep-alive connection open across both reloads keeps working.
        keep = http.client.HTTPSConnection("127.0.0.1", http_port, context=ctx13, timeout=10)
        keep.request("GET", "/v1/snowflake", headers={"Authorization": f"Bearer {TOKEN_ALL}"})
        check(one_id(keep.getresponse().read()), "a keep-alive connection before SIGHUP")
        check(peer_subject(http_port, ca) == "server1", "the first certificate is served")

        shutil.copy(os.path.join(d, "server2.pem"), cert)
        shutil.copy(os.path.join(d, "server2.key"), key)
        with open(tokens, "w") as f:
            f.write(f"{TOKEN_ALL} * name=all\n{TOKEN_ROTATED} segment:order name=order-app\n")
        srv.proc.send_signal(signal.SIGHUP)
        check(srv.wait_event("tls.reloaded") and srv.wait_event("tokens.reloaded"),
              "SIGHUP logs tls.reloaded and tokens.reloaded")
        check(peer_subject(http_port, ca) == "server2", "after SIGHUP new connections get the "
              "new certificate")
        rc, code, _ = curl("--cacert", ca, "-H", f"Authorization: Bearer {TOKEN_ORDER}",
                           f"{base}/v1/segment/order")
        check(code == "401", f"after SIGHUP a token removed from the file is refused ({code})")
        rc, code, _ = curl("--cacert", ca, "-H", f"Authorization: Bearer {TOKEN_ROTATED}",
                           f"{base}/v1/segment/order")
        check(code == "200", f"after SIGHUP the new token is served ({code})")
        keep.request("GET", "/v1/snowflake", headers={"Authorization": f"Bearer {TOKEN_ALL}"})
        check(one_id(keep.getresponse().read()), "the connection opened before SIGHUP still works")
        keep.close()
        answer = resp_ask(order_conn, "INCR order")
        check(answer == b"",
              f"after SIGHUP RESP closes the connection of a removed token ({answer!r})")
        answer = resp_ask(all_conn, "INCR order")
        check(answer.startswith(b":"), f"a RESP connection whose token stays goes on ({answer!r})")
        order_conn.close()
        all_conn.close()

        with open(key, "w") as f:
            f.write("not a key\n")
        srv.proc.send_signal(signal.SIGHUP)
        check(srv.wait_event("tls.reload_failed"), "a broken key: tls.reload_failed is logged")
        check(peer_subject(http_port, ca) == "server2", "a broken key keeps the certificate "
              "loaded before")
        reloaded_tokens = [e for e in srv.events("tokens.reloaded")]
        check(all(TOKEN_ALL not in json.dumps(e) for e in reloaded_tokens) and
              TOKEN_ALL not in srv.log() and TOKEN_ROTATED not in srv.log(),
              "no token appears in the log")

        # Slow clients: one byte a second, closed after request_timeout_ms (3 s).
        closed = slow_client(plain_port, b"GET /v1/snowflake HTTP/1.1\r\nHost: x\r\n\r\n", 1.0)
        check(closed is not None and 2.5 <= closed <= 12,
              f"an HTTP client sending 1 byte/s is closed after the request timeout ({closed})")
        hello = bytes.fromhex("16030100c8010000c40303") + os.urandom(32) + b"\x00" * 20
        closed = slow_client(http_port, hello, 1.0)
        check(closed is not None and 2.5 <= closed <= 12,
              f"a TLS handshake at 1 byte/s is closed after the request timeout ({closed})")
        rc, code, _ = curl("--cacert", ca, *auth, f"{base}/v1/snowflake")
        check(code == "200", "the server still serves after the slow clients")
    finally:
        problem = srv.stop()
        check(problem is None, f"the TLS server stopped cleanly ({problem})")


def test_mtls(binary, work, d):
    ca = os.path.join(d, "ca.pem")
    srv = Server(binary, work, "mtls", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
                 "--tls-cert", os.path.join(d, "server1.pem"), "--tls-key",
                 os.path.join(d, "server1.key"), "--tls-client-ca", ca)
    try:
        base = f"https://127.0.0.1:{srv.port('http')}"
        client = os.path.join(d, "client")
        stranger = os.path.join(d, "stranger")
        rc, code, _ = curl("--cacert", ca, "--cert", client + ".pem", "--key", client + ".key",
                           f"{base}/v1/snowflake")
        check(code == "200", f"mTLS: curl with a client certificate from the CA ({rc} {code})")
        rc, code, _ = curl("--cacert", ca, f"{base}/v1/snowflake")
        check(code != "200", f"mTLS: curl without a client certificate is refused ({rc} {code})")
        rc, code, _ = curl("--cacert", ca, "--cert", stranger + ".pem", "--key",
                           stranger + ".key", f"{base}/v1/snowflake")
        check(code != "200", f"mTLS: a certificate from another CA is refused ({rc} {code})")
        status, _ = https_get(srv.port("http"), "/v1/ulid", tls_context(ca, cert=client))
        check(status == 200, f"mTLS: Python ssl with a client certificate ({status})")
        check(refused(lambda: https_get(srv.port("http"), "/v1/ulid", tls_context(ca))),
              "mTLS: Python ssl without a client certificate is refused")
        out = redis_cli(srv.port("resp"), "ID.ULID",
                        tls=["--cacert", ca, "--cert", client + ".pem", "--key", client + ".key"])
        check(len(out) == 26, f"mTLS: redis-cli with a client certificate ({out!r})")
        out = redis_cli(srv.port("resp"), "ID.ULID", tls=["--cacert", ca])
        check(len(out) != 26, f"mTLS: redis-cli without a client certificate ({out[:80]!r})")
    finally:
        problem = srv.stop()
        check(problem is None, f"the mTLS server stopped cleanly ({problem})")


def test_exposed_warning(binary, work):
    srv = Server(binary, work, "exposed", "--http", "0.0.0.0:0", "--resp", "127.0.0.1:0")
    try:
        check(srv.wait_event("serve.exposed"), "0.0.0.0 without TLS or tokens: serve.exposed")
        named = [e.get("listener") for e in srv.events("serve.exposed")]
        check(named == ["http"], f"only the non-loopback listener is named ({named})")
    finally:
        problem = srv.stop()
        check(problem is None, f"the exposed server stopped cleanly ({problem})")


def test_bad_files(binary, work, d):
    """A missing key or a bad tokens line stops the server at once: exit 2, one line
    naming the flag and the file (and never the secret)."""
    def serve(*flags):
        p = subprocess.run([binary, "serve", "--data-dir", os.path.join(work, "bad"),
                            "--log-level", "off", *flags], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stderr.strip()
    missing = os.path.join(work, "missing.key")
    rc, err = serve("--tls-cert", os.path.join(d, "server1.pem"), "--tls-key", missing)
    check(rc == 2 and err.startswith(f"idforge: --tls-key: {missing}"),
          f"a missing key file: exit 2 naming --tls-key and the file ({rc}: {err})")
    tokens = os.path.join(work, "bad-tokens")
    with open(tokens, "w") as f:
        f.write(f"{TOKEN_ALL} snowflake\nshort-secret uuid\n")
    rc, err = serve("--tokens", tokens)
    check(rc == 2 and f"{tokens}:2:" in err and "short-secret" not in err,
          f"a bad tokens line: exit 2 naming FILE:LINE, not the secret ({rc}: {err})")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check.py IDFORGE_BIN")
    binary = sys.argv[1]
    for tool in ("openssl", "curl", "redis-cli"):
        if shutil.which(tool) is None:
            sys.exit(f"check.py: {tool} is missing (scripts/install-deps installs it)")
    work = tempfile.mkdtemp(prefix="idforge-security-")
    try:
        d = os.path.join(work, "pki")
        os.mkdir(d, 0o700)
        make_ca(d, "ca")
        make_ca(d, "other-ca")
        make_cert(d, "ca", "server1", "serverAuth")
        make_cert(d, "ca", "server2", "serverAuth")
        make_cert(d, "ca", "client", "clientAuth")
        make_cert(d, "other-ca", "stranger", "clientAuth")
        test_tls_and_tokens(binary, work, d)
        test_mtls(binary, work, d)
        test_exposed_warning(binary, work)
        test_bad_files(binary, work, d)
    finally:
        if FAILURES:
            print(f"check.py: work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failed:\n  " + "\n  ".join(FAILURES))
        sys.exit(1)
    print("all security checks passed")


if __name__ == "__main__":
    main()
