#!/usr/bin/python3
"""IDs per second from the Python client (not a test; prints a table).

    /usr/bin/python3 clients/python/bench.py [--n 1000000] [--m 20000]

Starts one `idforge serve` (IDFORGE_BIN, default build/idforge) on free ports, with
a tag `bench`, and measures in one run:
  - next() with the buffer (snowflake(), segment("bench")) against a plain in-process
    counter (itertools.count), the ceiling of any Python call that hands out a number;
  - next() without the buffer (one request per ID, over redis:// and http://) against
    one raw Redis-protocol INCR per ID on one socket, as redis-cli does (and redis-cli
    itself, `redis-cli -r M INCR bench`, when it is installed).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "tests"))

from idforge_client import Client  # noqa: E402
from _support import Cluster  # noqa: E402


def rate(n: int, fn) -> float:
    t0 = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t0)


def raw_incr(port: int, n: int) -> None:
    """One INCR per ID, waiting for each answer: what redis-cli does."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        cmd = b"*2\r\n$4\r\nINCR\r\n$5\r\nbench\r\n"
        f = s.makefile("rb")
        for _ in range(n):
            s.sendall(cmd)
            line = f.readline()
            if line[:1] != b":":
                raise RuntimeError(f"INCR answered {line!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="IDs per buffered run")
    ap.add_argument("--m", type=int, default=20_000, help="IDs per unbuffered run")
    args = ap.parse_args()

    cluster = Cluster(tags=("bench",))
    server = cluster.a
    cluster.b.terminate()  # one server is enough here
    rows = []
    try:
        counter = itertools.count()

        def count(n):
            nxt = counter.__next__
            for _ in range(n):
                nxt()

        rows.append(("in-process counter (itertools.count)", rate(args.n, count)))
        for batch in (256, 4096):
            with Client([server.resp], batch=batch) as c:
                c.snowflake()  # connect and fill

                def sf(n, c=c):
                    nxt = c.snowflake
                    for _ in range(n):
                        nxt()

                def seg(n, c=c):
                    nxt = c.segment
                    for _ in range(n):
                        nxt("bench")

                rows.append((f"snowflake() with the buffer, batch {batch}", rate(args.n, sf)))
                c.segment("bench")
                rows.append((f"segment() with the buffer, batch {batch}", rate(args.n, seg)))

        with Client([server.resp], batch=256) as c:
            c.snowflake()

            def four(n):
                def work():
                    for _ in range(n // 4):
                        c.snowflake()
                ts = [threading.Thread(target=work) for _ in range(4)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
            rows.append(("snowflake() with the buffer, 4 threads, one client", rate(args.n, four)))

        for url in (server.resp, server.http):
            with Client([url], buffer=False) as c:
                c.segment("bench")

                def one(n, c=c):
                    for _ in range(n):
                        c.segment("bench")

                rows.append((f"segment() without the buffer ({url.split(':')[0]}://)",
                             rate(args.m, one)))
        rows.append(("raw RESP INCR per ID, one socket (redis-cli style)",
                     rate(args.m, lambda n: raw_incr(server.resp_port, n))))
        cli = shutil.which("redis-cli")
        if cli:
            def redis_cli(n):
                subprocess.run([cli, "-p", str(server.resp_port), "-r", str(n), "INCR", "bench"],
                               stdout=subprocess.DEVNULL, check=True)
            rows.append(("redis-cli -r M INCR bench", rate(args.m, redis_cli)))
    finally:
        cluster.close()

    width = max(len(name) for name, _ in rows)
    print(f"python {sys.version.split()[0]} ({sys.executable}), {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; n={args.n}, m={args.m}")
    for name, r in rows:
        print(f"{name:<{width}}  {r:>12,.0f} IDs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
