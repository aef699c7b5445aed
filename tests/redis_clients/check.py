#!/usr/bin/python3
"""Real Redis client libraries against a real `idforge serve` (docs/api.md, "What
clients send"): each library takes IDs of its own tag with the forms applications use
(INCR, INCRBY, a transaction, a pipeline) and must get exactly the values Redis would
give a fresh counter; the IDs they name (INCRBY n answers the last of n) must be each
ID of the tag once. Then the refused forms must come back with idforge's reasons, and
an INCRBY on a tag striped over two stores with the error that names ID.NEXT. The
server's access log (one line per command) shows what each library sent; the
increment commands among them are checked too, so the table in docs/api.md is tested.

Usage: check.py IDFORGE_BIN   (run by check.sh, which installs the npm packages first)
Env: IDFORGE_REDIS_CLIENTS: a comma-separated subset of the library names below, and
     big-ids (integer replies above 2^53 in the Node.js libraries).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from serve_process import stop_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # Debian's, with python3-redis

# What each step of every client script asks for: (result key, IDs each answer names).
# INCR and INCRBY 1 name one ID; INCRBY n names the n IDs up to its answer.
STEPS = [("incr", [1]), ("incr_by_5", [5]), ("transaction", [1, 3, 1]),
         ("pipeline", [1, 2]), ("after", [1])]
# On a fresh tag from 1, with Redis's meaning of each answer.
EXPECTED = {"incr": 1, "incr_by_5": 6, "transaction": [7, 10, 11], "pipeline": [12, 14],
            "after": 15}

# The refusals every script asks for, by the text each error must hold (clients differ
# in whether they keep Redis's "ERR " prefix).
COMMON_ERRORS = {
    "incr_by_0": "IDs never go down or repeat: INCRBY takes an increment of 1 or more, got 0",
    "decr": "IDs never go down: DECR",  # redis-py sends DECRBY tag 1
    "striped_incr_by_5": "IDs not contiguous: the 5 IDs taken from tag '{tag}' cross a range "
                         "boundary or come from striped stores, so INCRBY cannot answer them as "
                         "one value; they are skipped. Use ID.NEXT {tag} 5, which lists the IDs "
                         "it takes",
}
PY_ERRORS = {
    "incr_by_minus_1": "INCRBY takes an increment of 1 or more, got -1",
    "incr_by_10001": "out_of_range: count 10001 is above the limit of 10000 per request",
    "incrbyfloat": "IDs are whole numbers: INCRBYFLOAT is not served",
    "get": "IDs are not stored values: GET is not served",
    "set": "IDs are not stored values: SET is not served",
    "exec_abort": "unknown command 'NOPE'",  # redis-py raises the error that aborted EXEC
}

# The increment commands each library sends, as the server's access log shows them, in
# order (queued commands appear when EXEC runs them, before EXEC's own line).
INCREMENT_COMMANDS = {"incr", "incrby", "decr", "decrby", "incrbyfloat", "get", "set",
                      "multi", "exec", "discard"}
TYPICAL_SENT = ["incr", "incrby", "multi", "incr", "incrby", "incr", "exec",
                "incr", "incrby", "incrby", "decr", "incr"]
PY_SENT = ["incrby", "incrby", "multi", "incrby", "incrby", "incrby", "exec",
           "incrby", "incrby", "incrby", "decrby", "incrby", "incrby", "incrbyfloat", "get",
           "set", "multi", "exec", "incrby"]


def node(library):
    return ["node", os.path.join(HERE, "node_client.mjs"), library]


# name, tag, command (PORT STRIPED_PORT TAG are appended), extra errors, commands sent.
LIBRARIES = [
    ("redis-py", "py", [PYTHON, "-B", os.path.join(HERE, "redis_py_client.py")], PY_ERRORS,
     PY_SENT),
    ("node-redis-4", "node4", node("node-redis-4"), {}, TYPICAL_SENT),
    ("node-redis", "node", node("node-redis"), {}, TYPICAL_SENT),
    ("ioredis", "ioredis", node("ioredis"), {}, TYPICAL_SENT),
    ("redis-rb", "rb", ["ruby", os.path.join(HERE, "redis_rb_client.rb")], {}, TYPICAL_SENT),
    ("phpredis", "php", ["php", os.path.join(HERE, "phpredis_client.php")], {}, TYPICAL_SENT),
]


class Server:
    """One `idforge serve` on loopback ports, with every command in its access log.
    `step`: the tags' step, and the most it may grow to."""

    def __init__(self, binary, work, name, tags, stores, step, starts=None):
        self.dir = os.path.join(work, name)
        os.mkdir(self.dir, 0o700)
        store_flags = [f for s in stores for f in ("--store", f"sqlite:{self.dir}/{s}.db")]
        for tag in tags:
            start = (starts or {}).get(tag, 1)
            subprocess.run([binary, "tag", "create", tag, "--data-dir", self.dir, "--step",
                            str(step), "--start", str(start), *store_flags], check=True,
                           stdout=subprocess.DEVNULL)
        self.out_path = os.path.join(work, f"{name}.out")
        self.log_path = os.path.join(work, f"{name}.log")
        self.proc = subprocess.Popen(
            [binary, "serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--data-dir",
             self.dir, "--registry", "static:0/1", "--access-log-sample", "1",
             "--log-format", "json", "--max-step", str(step), *store_flags],
            stdout=open(self.out_path, "w"), stderr=open(self.log_path, "w"))
        self.port = None
        for _ in range(200):  # it prints "idforge serve: resp redis://HOST:PORT" once it listens
            with open(self.out_path) as f:
                for line in f:
                    if line.startswith("idforge serve: resp redis://"):
                        self.port = int(line.strip().rsplit(":", 1)[1])
            if self.port or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            sys.exit(f"check.py: idforge serve ({name}) did not listen:\n" + self.log())

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def log_size(self):
        return os.path.getsize(self.log_path)

    def commands_since(self, offset):
        """The commands the access log shows after byte `offset`: (name, status) pairs."""
        with open(self.log_path) as f:
            f.seek(offset)
            lines = [json.loads(line) for line in f if line.startswith("{")]
        return [(e["command"], e["status"]) for e in lines if e.get("event") == "access"]

    def stop(self):
        """What went wrong with the server, if anything, once stopped (serve_process.py)."""
        return stop_server(self.proc, self.log)


def owned_ids(results):
    """Every ID the answers name: one for INCR, (last - n, last] for INCRBY n."""
    ids = []
    for key, counts in STEPS:
        answers = results[key] if isinstance(results[key], list) else [results[key]]
        if len(answers) != len(counts):
            return None
        for last, n in zip(answers, counts):
            ids.extend(range(int(last) - n + 1, int(last) + 1))
    return ids


def check_library(name, tag, command, extra_errors, sent, main, striped):
    """Runs one library's script; returns the list of failures."""
    offset = main.log_size()
    started = time.monotonic()
    try:
        run = subprocess.run([*command, str(main.port), str(striped.port), tag],
                             capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:
        return [f"no answer within {e.timeout} s:\n{e.stdout or ''}{e.stderr or ''}"], e.timeout, []
    took = time.monotonic() - started
    if run.returncode != 0 or not run.stdout.strip():
        return [f"exited {run.returncode}:\n{run.stdout}{run.stderr}"], took, []
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    failures = []
    results = {k: outcome["results"].get(k) for k in EXPECTED}
    if results != EXPECTED:
        failures.append(f"values {results}, expected {EXPECTED}")
    ids = owned_ids(outcome["results"])
    if ids is None or sorted(ids) != list(range(1, 16)):
        failures.append(f"the IDs named are not each of 1..15 once: {ids}")
    for key, text in {**COMMON_ERRORS, **extra_errors}.items():
        text = text.format(tag=tag)
        got = outcome["errors"].get(key)
        if got is None or text not in got:
            failures.append(f"error of {key}: {got!r}, expected it to hold {text!r}")
    seen = main.commands_since(offset)
    increments = [c.lower() for c, _ in seen if c.lower() in INCREMENT_COMMANDS]
    if increments != sent:
        failures.append(f"increment commands sent {increments}, expected {sent}")
    others = sorted({f"{c.lower()}{'' if s == 200 else f' ({s})'}" for c, s in seen
                     if c.lower() not in INCREMENT_COMMANDS})
    return failures, took, others


# Integer replies above 2^53 in the Node.js libraries (big_ids.mjs): the first ID of a tag
# created at 2^53 + 1, by default and with each library's option. The defaults round it
# (docs/clients.md says so and names the options; a library that stops rounding fails
# this, and the doc must change with it).
BIG_START = 2**53 + 1
BIG_EXPECTED = {
    "node-redis-4": str(2**53),  # no option: Number only
    "node-redis": str(2**53),
    "node-redis-bigint": str(2**53),  # a BigInt made from the rounded Number
    "node-redis-string": str(BIG_START),  # withTypeMapping({[RESP_TYPES.NUMBER]: String})
    "ioredis": str(2**53),
    "ioredis-string": str(BIG_START),  # new Redis({stringNumbers: true})
}


def check_big_ids(server):
    """Runs big_ids.mjs; returns the list of failures."""
    try:
        run = subprocess.run(["node", os.path.join(HERE, "big_ids.mjs"), str(server.port)],
                             capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:
        return [f"no answer within {e.timeout} s"]
    if run.returncode != 0 or not run.stdout.strip():
        return [f"exited {run.returncode}:\n{run.stdout}{run.stderr}"]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    return [f"{case}: {got.get(case)!r}, expected {want!r}"
            for case, want in BIG_EXPECTED.items() if got.get(case) != want]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check.py IDFORGE_BIN")
    binary = os.path.abspath(sys.argv[1])
    chosen = os.environ.get("IDFORGE_REDIS_CLIENTS")
    libraries = [lib for lib in LIBRARIES if not chosen or lib[0] in chosen.split(",")]
    node_major = int(subprocess.run(["node", "-p", "process.versions.node.split('.')[0]"],
                                    capture_output=True, text=True).stdout or 0)
    work = tempfile.mkdtemp(prefix="idforge-redis-clients-")
    servers = []
    passed = failed = skipped = 0
    try:
        tags = [lib[1] for lib in libraries]
        big = node_major >= 20 and (not chosen or "big-ids" in chosen.split(","))
        big_tags = {f"big-{case}": BIG_START for case in BIG_EXPECTED} if big else {}
        # A step of 1 that never grows: nearly every INCRBY and transaction waits on the
        # store, also in the middle of an EXEC.
        main_server = Server(binary, work, "main", tags + list(big_tags), ["segments"], 1,
                             big_tags)
        servers.append(main_server)
        # Two stores of 1,000 IDs a range: store i hands out the IDs = i mod 2, so no two
        # IDs of a range are contiguous.
        striped = Server(binary, work, "striped", tags, ["a", "b"], 1000)
        servers.append(striped)
        for name, tag, command, extra_errors, sent in libraries:
            if name == "node-redis" and node_major < 20:
                print(f"SKIP {name}: its current major needs Node.js 20, this is {node_major}")
                skipped += 1
                continue
            failures, took, others = check_library(name, tag, command, extra_errors, sent,
                                                   main_server, striped)
            if failures:
                failed += 1
                print(f"FAIL {name} ({took:.2f} s)")
                for failure in failures:
                    print(f"  {failure}")
            else:
                passed += 1
                print(f"ok   {name} ({took:.2f} s); also sent: {', '.join(others) or 'nothing'}")
        if big:
            failures = check_big_ids(main_server)
            if failures:
                failed += 1
                print("FAIL big-ids (integer replies above 2^53)")
                for failure in failures:
                    print(f"  {failure}")
            else:
                passed += 1
                print("ok   big-ids: node-redis and ioredis round 2^53 + 1 by default; "
                      "a String type mapping and stringNumbers keep it exact")
        if failed:
            print("main server's log:\n" + main_server.log()[-4000:])
    finally:
        for server in servers:
            trouble = server.stop()
            if trouble:
                failed += 1
                print(f"FAIL idforge serve ({os.path.basename(server.dir)}): {trouble}")
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
