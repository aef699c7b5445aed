#!/usr/bin/env python3
"""Many tags on one node (docs/benchmarks.md, "Many tags").

For each count of tags: one `idforge serve` on the default SQLite store in a fresh data
directory, the tags created through POST /v1/admin/tags, then one segment ID of each
asked for by 8 clients at once, as a fleet's first requests after a start arrive (every
request loads a tag: a range from the store, recorded in the fleet floor and the node's
served marks). The clients are C++ ones (bench/client/first_ids.cc: the C++ client, no
buffer, one kept-open HTTP connection each): Python's cost more per request than the store
costs per range. Printed: the time to the first ID of every tag, the server's CPU time,
its resident memory and memory mappings after, and the time and size of /metrics and
/v1/status. Beside it, the store's own rate: the UPDATE ... RETURNING the SQLite store
runs for a range, one transaction a tag, with the store's settings (WAL,
synchronous=FULL), from Python's sqlite3 on the same database without idforge (SQLite
commits one transaction at a time, so one client is its best). The two alternate in
blocks of 100 tags, so a noisy machine slows both alike; the ratio is idforge's time
over the store's. Then the same requests once more, every tag loaded: what a request
costs without a range to fetch, the floor under the first IDs on this machine.

Usage: bench/load/tags.py [--idforge build/idforge] [--tags 1000,10000,50000]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

TOKEN = "b" * 32
CLIENTS = 8
# The SQLite store's own allocation, kAllocateSql in src/store/sqlite/sqlite_store.cc: keep the two
# the same, or the baseline measures another statement.
ALLOCATE_SQL = (
    "UPDATE idforge_segments"
    " SET max_id = max_id + (CASE WHEN ?1 > 0 THEN ?1 ELSE step END), updated_at = ?2"
    " WHERE tag = ?3 AND max_id >= 0"
    " AND (CASE WHEN ?1 > 0 THEN ?1 ELSE step END) BETWEEN 1 AND 9223372036854775807 - max_id"
    " RETURNING max_id, (CASE WHEN ?1 > 0 THEN ?1 ELSE step END)")


def proc_cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def proc_status_mb(pid, key):
    text = open(f"/proc/{pid}/status").read()
    return int(text.split(key + ":")[1].split()[0]) / 1024


def timed_get(conn, path):
    start = time.monotonic()
    conn.request("GET", path)
    reply = conn.getresponse()
    body = reply.read()
    if reply.status != 200:
        sys.exit(f"tags.py: GET {path} answered {reply.status}: {body[:200]!r}")
    return time.monotonic() - start, body


def store_allocate(db, names):
    start = time.monotonic()
    for name in names:
        db.execute("BEGIN IMMEDIATE")
        db.execute(ALLOCATE_SQL, (0, int(time.time() * 1000), name)).fetchall()
        db.execute("COMMIT")
    return time.monotonic() - start


def serve_round(binary, first_ids, tags, data_dir):
    server = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--data-dir",
         data_dir, "--admin-token", TOKEN, "--log-level", "warn"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        while port is None:
            line = server.stdout.readline()
            if not line:
                sys.exit("tags.py: idforge serve ended before it listened")
            m = re.search(r"http http://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
        start = time.monotonic()
        for i in range(tags):
            conn.request("POST", "/v1/admin/tags", json.dumps({"tag": f"t{i}", "step": 1000}),
                         headers)
            reply = conn.getresponse()
            body = reply.read()
            if reply.status != 201:
                sys.exit(f"tags.py: creating t{i} answered {reply.status}: {body[:200]!r}")
        created_s = time.monotonic() - start
        db = sqlite3.connect(os.path.join(data_dir, "segments.db"), isolation_level=None,
                             timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        clients = subprocess.Popen(
            [first_ids, "--server", f"http://127.0.0.1:{port}", "--clients", str(CLIENTS)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

        def first_ids_of(a, b):
            """Seconds to one ID of each of t{a}..t{b-1}, and the requests answered late."""
            clients.stdin.write(f"{a} {b}\n")
            clients.stdin.flush()
            line = clients.stdout.readline()
            if not line:
                sys.exit(f"tags.py: {first_ids} failed on t{a}..t{b - 1}")
            took, late = line.split()
            return float(took), int(late)

        late = 0  # requests answered unavailable and asked again (first_ids.cc)
        first_s = store_s = cpu_s = 0.0
        for block in range(0, tags, 100):
            end = min(tags, block + 100)
            cpu_before = proc_cpu_seconds(server.pid)
            took, block_late = first_ids_of(block, end)
            first_s += took
            late += block_late
            cpu_s += proc_cpu_seconds(server.pid) - cpu_before
            store_s += store_allocate(db, [f"t{i}" for i in range(block, end)])
        db.close()
        # The same requests again, each tag loaded now: what HTTP and the clients cost
        # without a range to fetch, measured in the same run.
        loaded_s = 0.0
        for block in range(0, tags, 100):
            loaded_s += first_ids_of(block, min(tags, block + 100))[0]
        clients.stdin.close()
        clients.wait()
        rss = proc_status_mb(server.pid, "VmRSS")
        peak = proc_status_mb(server.pid, "VmHWM")
        maps = sum(1 for _ in open(f"/proc/{server.pid}/maps"))
        conn.close()  # idle through the first IDs: past limits.idle_timeout_ms, maybe
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        metrics_s, metrics = timed_get(conn, "/metrics")
        status_s, status = timed_get(conn, "/v1/status")
        one_s, _ = timed_get(conn, "/v1/status?tag=t0")
        return {"late": late, "created_s": created_s, "first_s": first_s, "store_s": store_s,
                "cpu_s": cpu_s, "loaded_s": loaded_s,
                "rss": rss,
                "peak": peak, "maps": maps, "metrics_ms": metrics_s * 1000,
                "metrics_kb": len(metrics) / 1024, "status_ms": status_s * 1000,
                "status_kb": len(status) / 1024, "one_tag_ms": one_s * 1000}
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idforge", default="build/idforge")
    parser.add_argument("--tags", default="1000,10000,50000")
    args = parser.parse_args()
    counts = [int(n) for n in args.tags.split(",")]
    binary = os.path.abspath(args.idforge)
    first_ids = os.path.join(os.path.dirname(binary), "bench", "client", "idforge_first_ids")
    for program in (binary, first_ids):
        if not os.access(program, os.X_OK):
            sys.exit(f"tags.py: {program} is not built; run make build")
    print(f"# {time.strftime('%Y-%m-%d')}, {os.uname().nodename}, {os.cpu_count()} cores")
    print("| tags | first ID of every tag | the store alone | ratio | an ID of a loaded tag "
          "| server CPU | RSS after "
          "| peak RSS | mappings | /metrics | /v1/status | /v1/status?tag= | answered late |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
          "| ---: |")
    for n in counts:
        work = tempfile.mkdtemp(prefix="idforge-tags-")
        try:
            r = serve_round(binary, first_ids, n, os.path.join(work, "data"))
            store_s = r["store_s"]
            print(f"| {n:,} | {r['first_s']:.1f} s | {store_s:.1f} s "
                  f"| {r['first_s'] / store_s:.2f} | {r['loaded_s']:.1f} s "
                  f"| {r['cpu_s']:.1f} s | {r['rss']:.0f} MB "
                  f"| {r['peak']:.0f} MB | {r['maps']:,} "
                  f"| {r['metrics_ms']:.0f} ms, {r['metrics_kb']:.0f} KB "
                  f"| {r['status_ms']:.0f} ms, {r['status_kb']:.0f} KB "
                  f"| {r['one_tag_ms']:.1f} ms | {r['late']} |", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
