"""The client against two real `idforge serve` processes (docs/clients.md)."""

import re
import threading
import time
import unittest

from _support import Cluster, FakeServer, free_port  # also puts the package on sys.path

from idforge_client import Client, IdforgeError, IdforgeUnavailable

UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}\Z")

# Requests that are not about timeouts get a generous one: make test runs much at
# once on a few cores, and a starved server must not look like a dead one.
SLOW_OK = 3000

cluster = None


def setUpModule():
    global cluster
    cluster = Cluster(tags=("order", "bulk", "stock", "item", "outage"))


def tearDownModule():
    if cluster is not None:
        cluster.close()


def node_of(snowflake_id):
    d = Client.parse(snowflake_id)
    return d["datacenter"], d["worker"]


class ServersTest(unittest.TestCase):
    def setUp(self):
        cluster.heal()
        self.a, self.b = cluster.a, cluster.b

    def tearDown(self):
        cluster.heal()

    # -- both protocols ----------------------------------------------------------------

    def test_http_and_redis_servers_give_every_kind(self):
        node_a = self.a.node()
        for url in (self.a.http, self.a.resp):
            for buffer in (True, False):
                with self.subTest(url=url, buffer=buffer), Client(
                        [url], buffer=buffer, batch=32, timeout_ms=SLOW_OK) as c:
                    sf = c.snowflake()
                    self.assertIsInstance(sf, int)
                    self.assertEqual(node_of(sf), node_a)
                    more = c.snowflakes(40)
                    self.assertEqual(len(set(more + [sf])), 41)
                    self.assertEqual(more, sorted(more))  # one server: in order
                    seg = c.segment("order")
                    self.assertIsInstance(seg, int)
                    self.assertGreater(seg, 0)
                    segs = c.segments("order", 5)
                    self.assertEqual(segs, list(range(seg + 1, seg + 6)))
                    self.assertRegex(c.uuid7(), UUID7)
                    self.assertRegex(c.ulid(), ULID)
                    self.assertEqual(len(set(c.uuid7s(3) + c.ulids(3))), 6)

    def test_the_two_servers_never_issue_the_same_id(self):
        self.assertNotEqual(self.a.node(), self.b.node())
        with Client([self.a.http], batch=100, timeout_ms=SLOW_OK) as ca, \
                Client([self.b.resp], batch=100, timeout_ms=SLOW_OK) as cb:
            ids = []
            for _ in range(300):
                ids += [ca.segment("stock"), cb.segment("stock")]
            self.assertEqual(len(set(ids)), len(ids))

    # -- kill -9 and restart -----------------------------------------------------------

    def test_pulling_through_kill_9_and_restart_loses_no_request_and_repeats_no_id(self):
        a, b = self.a, self.b
        node_a = a.node()
        stop = threading.Event()
        results = []  # one list per puller
        errors = []
        calls = []

        def pull(client, kinds):
            got, n = [], 0
            results.append(got)
            try:
                while not stop.is_set():
                    for kind in kinds:
                        n += 1
                        value = client.snowflake() if kind == "sf" else client.segment("order")
                        got.append((kind, value, time.time()))
            except Exception as e:  # noqa: BLE001 - every failure fails the test
                errors.append(repr(e))
            calls.append(n)

        # A killed server refuses at once; the timeout only covers a starved one.
        timeout = dict(timeout_ms=SLOW_OK, backoff_ms=200, max_backoff_ms=1000)
        # Buffered, small batches (many refills); and one request per call. Both start
        # on A, over both protocols.
        buffered = Client([a.http, b.resp], batch=16, **timeout)
        direct = Client([a.resp, b.http], buffer=False, **timeout)
        threads = [threading.Thread(target=pull, args=(buffered, ("sf", "seg"))),
                   threading.Thread(target=pull, args=(buffered, ("seg", "sf"))),
                   threading.Thread(target=pull, args=(direct, ("sf", "seg")))]
        for t in threads:
            t.start()
        try:
            time.sleep(0.3)
            a.kill9()
            time.sleep(0.3)
            a.start()  # same data dir, identity and ports
            restarted = time.time()
            time.sleep(0.4)
            b.kill9()  # now only the restarted A can answer
            time.sleep(0.4)
            b.start()
            time.sleep(0.2)
        finally:
            stop.set()
            for t in threads:
                t.join(10)
            buffered.close()
            direct.close()
        self.assertEqual(errors, [])
        got = [r for rs in results for r in rs]
        self.assertEqual(len(got), sum(calls))  # every call returned an ID
        for kind in ("sf", "seg"):
            ids = [v for k, v, _ in got if k == kind]
            self.assertGreater(len(ids), 100)
            self.assertEqual(len(ids), len(set(ids)), f"a repeated {kind} ID")
        # The restarted A served (IDs of its node, made after its restart), through
        # both clients.
        after = [v for k, v, t in got if k == "sf" and t > restarted + 0.4]
        self.assertTrue(after)
        self.assertTrue(all(node_of(v) == node_a for v in after[-10:]))
        self.assertTrue(any(Client.parse(v)["unix_ms"] > restarted * 1000 for v in after))

    def test_a_kept_alive_connection_the_server_closed_is_not_a_failure(self):
        a = self.a
        node_a = a.node()
        clients = [Client([a.http, self.b.resp], buffer=False, timeout_ms=SLOW_OK),
                   Client([a.resp, self.b.http], buffer=False, timeout_ms=SLOW_OK)]
        try:
            for c in clients:
                self.assertEqual(node_of(c.snowflake()), node_a)  # a kept-alive connection
            a.kill9()  # closes them all
            a.start()
            for c in clients:
                # A again, on a new connection: its old one is no reason to skip it.
                self.assertEqual(node_of(c.snowflake()), node_a)
                self.assertEqual([s["failures"] for s in c.server_states()], [0, 0])
        finally:
            for c in clients:
                c.close()

    # -- SIGSTOP -----------------------------------------------------------------------

    def test_a_stopped_server_costs_one_timeout_then_is_skipped(self):
        a, b = self.a, self.b
        node_a, node_b = a.node(), b.node()
        timeout_ms = 500
        with Client([a.http, b.resp], timeout_ms=timeout_ms, buffer=False,
                    backoff_ms=5000) as c:
            self.assertEqual(node_of(c.snowflake()), node_a)  # A answers first
            a.sigstop()
            try:
                t0 = time.monotonic()
                first = c.snowflake()
                first_s = time.monotonic() - t0
                rest = [c.snowflake() for _ in range(30)]
                rest_s = time.monotonic() - t0 - first_s
                states = c.server_states()
            finally:
                a.sigcont()
            # The first request waited for A's timeout, then B answered it; the other
            # 30 went straight to B (one timeout each would be 15 s).
            self.assertGreaterEqual(first_s, timeout_ms / 1000 * 0.9)
            self.assertLess(first_s, 2 * timeout_ms / 1000)
            self.assertLess(rest_s, 5 * timeout_ms / 1000, "a timeout per request")
            self.assertEqual({node_of(x) for x in [first] + rest}, {node_b})
            self.assertEqual(states[0]["failures"], 1)
            self.assertIn("timed out after 500 ms", states[0]["last_error"])
            self.assertTrue(states[1]["current"])
            # A is well again, but requests stay on the server that answered last.
            self.assertEqual(node_of(c.snowflake()), node_b)

    def test_a_stopped_server_during_background_refills_costs_the_caller_nothing(self):
        # Snowflake IDs: a server stopped while it held the shared SQLite store's lock
        # would hold up the other's segment ranges too (an artefact of the test setup).
        a, b = self.a, self.b
        timeout_ms = 500
        with Client([a.resp, b.http], timeout_ms=timeout_ms, batch=100, refill_below=70,
                    backoff_ms=5000) as c:
            ids = [c.snowflake()]
            a.sigstop()
            try:
                slowest = 0.0
                for _ in range(100):
                    time.sleep(0.01)  # 70 IDs last longer than A's timeout
                    t0 = time.monotonic()
                    ids.append(c.snowflake())
                    slowest = max(slowest, time.monotonic() - t0)
                states = c.server_states()
            finally:
                a.sigcont()
            self.assertEqual(len(set(ids)), 101)
            # The refill thread met A's timeout and went on to B; no caller waited.
            self.assertEqual(states[0]["failures"], 1)
            self.assertTrue(states[1]["current"])
            self.assertLess(slowest, timeout_ms / 1000 / 2)

    def test_the_buffer_refills_in_the_background_within_its_bound(self):
        with Client([self.a.http], batch=20, refill_below=10, timeout_ms=SLOW_OK) as c:
            ids = [c.snowflake()]
            self.assertEqual(c.buffered("snowflake"), 19)
            ids += [c.snowflake() for _ in range(10)]  # 9 left: below 10
            deadline = time.monotonic() + 2
            while c.buffered("snowflake") != 29 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(c.buffered("snowflake"), 29)  # batch + refill_below at most
            ids.append(c.snowflake())  # 28 left: not below 10, no refill
            time.sleep(0.1)
            self.assertEqual(c.buffered("snowflake"), 28)
            ids += c.snowflakes(28)
            self.assertEqual(len(set(ids)), 40)

    # -- a full outage -----------------------------------------------------------------

    def test_the_buffer_serves_a_full_outage_until_empty_then_names_every_server(self):
        a, b = self.a, self.b
        timeout_s = 0.1
        c = Client([a.http, b.resp], timeout_ms=100, batch=40, refill_below=20,
                   max_age_ms=10000, backoff_ms=100)
        try:
            first_seg, first_sf = c.segment("outage"), c.snowflake()
            self.assertEqual(c.buffered("segment", "outage"), 39)
            self.assertEqual(c.buffered("snowflake"), 39)
            a.sigstop()
            b.sigstop()
            try:
                for kind, call, first in (("segment", lambda: c.segment("outage"), first_seg),
                                          ("snowflake", c.snowflake, first_sf)):
                    served = []
                    with self.assertRaises(IdforgeUnavailable) as cm:
                        while True:
                            # Slow enough that the background refill (below 20 left)
                            # fails on both servers while IDs are left.
                            time.sleep(0.015)
                            t0 = time.monotonic()
                            served.append(call())
                    waited = time.monotonic() - t0
                    self.assertEqual(len(served), 39, kind)  # every buffered ID
                    self.assertEqual(len(set(served + [first])), 40)
                    message = str(cm.exception)
                    self.assertIn(a.http, message)
                    self.assertIn(b.resp, message)
                    self.assertIn("timed out after 100 ms", message)
                    self.assertEqual({u for u, _ in cm.exception.errors}, {a.http, b.resp})
                    self.assertIsInstance(cm.exception, IdforgeError)
                    self.assertLess(waited, 2 * timeout_s + 1.0, kind)
            finally:
                a.sigcont()
                b.sigcont()
            # Back: the next call gets an ID again (every server backing off: the one
            # whose period ends first is tried).
            deadline = time.monotonic() + 3
            while True:
                try:
                    self.assertGreater(c.segment("outage"), first_seg)
                    break
                except IdforgeUnavailable:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            c.close()

    def test_an_empty_buffer_tries_a_server_still_backing_off(self):
        a = self.a
        with Client([a.http], timeout_ms=300, batch=10, refill_below=5,
                    backoff_ms=60000, max_backoff_ms=60000) as c:
            ids = [c.snowflake()]  # 9 left
            a.sigstop()
            try:
                ids += [c.snowflake() for _ in range(5)]  # 4 left: a refill, A times out
                deadline = time.monotonic() + 5
                while c.server_states()[0]["failures"] == 0 and time.monotonic() < deadline:
                    time.sleep(0.01)
            finally:
                a.sigcont()
            self.assertGreater(c.server_states()[0]["backing_off_ms"], 50000)
            # No background refill while A backs off; the empty buffer tries A anyway.
            ids += [c.snowflake() for _ in range(4 + 10)]
            self.assertEqual(len(set(ids)), 20)
            self.assertEqual(c.server_states()[0]["failures"], 0)

    def test_no_server_at_all_fails_at_once_naming_each_server(self):
        dead = [f"http://127.0.0.1:{free_port()}", f"redis://127.0.0.1:{free_port()}"]
        c = Client(dead, buffer=False, backoff_ms=1000, max_backoff_ms=3000)
        with self.assertRaises(IdforgeUnavailable) as cm:
            c.snowflake()
        self.assertEqual(cm.exception.errors,
                         [(dead[0], "failed: connection refused"),
                          (dead[1], "failed: connection refused")])
        # Both back off now: a waiting caller tries them anyway, the one whose period
        # ends first first, rather than failing untried.
        with self.assertRaises(IdforgeUnavailable) as cm:
            c.snowflake()
        self.assertEqual(cm.exception.errors,
                         [(dead[0], "failed: connection refused"),
                          (dead[1], "failed: connection refused")])
        states = c.server_states()
        self.assertEqual([s["failures"] for s in states], [2, 2])
        self.assertGreater(states[0]["backing_off_ms"], 1500)  # doubled: 2000 ms
        for _ in range(4):
            with self.assertRaises(IdforgeUnavailable):
                c.snowflake()
        states = c.server_states()
        self.assertEqual(sum(s["failures"] for s in states), 12)  # both, every call
        self.assertLessEqual(max(s["backing_off_ms"] for s in states), 3000)  # the cap
        # With the buffer, an empty buffer fails the same way.
        with Client(dead, timeout_ms=200) as c2, self.assertRaises(IdforgeUnavailable):
            c2.segment("order")

    def test_any_other_error_answer_moves_on_to_the_next_server(self):
        def http(status, body):
            return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n{body}").encode()

        cases = [
            ("http", http("503 Service Unavailable", '{"error":{"code":"unavailable",'
                          '"message":"segment store down"}}'), "HTTP 503 unavailable"),
            ("http", http("500 Internal Server Error", '{"error":{"code":"internal",'
                          '"message":"boom"}}'), "HTTP 500 internal"),
            ("http", http("401 Unauthorized", "proxy says no"), "HTTP 401"),
            ("http", http("200 OK", '{"ids":[]}'), "malformed"),
            ("http", http("200 OK", '{"kind":"snowflake","ids":["1","2"]}'),
             "answered 2 IDs, asked for 1"),
            ("http", b"SSH-2.0-OpenSSH\r\n", "not an HTTP answer"),
            ("redis", b"-ERR lease_lost: the worker lease is gone\r\n", "lease_lost"),
            ("redis", b"-ERR io_error: disk\r\n", "io_error"),
            ("redis", b"-ERR unknown command 'ID.SNOWFLAKE'\r\n", "unknown command"),
            ("redis", b"+OK\r\n", "unexpected answer"),
        ]
        node_a = self.a.node()
        for scheme, answer, why in cases:
            with self.subTest(why=why):
                fake = FakeServer(answer)
                url = f"{scheme}://127.0.0.1:{fake.port}"
                try:
                    with Client([url, self.a.http], buffer=False, timeout_ms=SLOW_OK) as c:
                        self.assertEqual(node_of(c.snowflake()), node_a)
                        state = c.server_states()[0]
                        self.assertEqual(state["failures"], 1)
                        self.assertIn(why, state["last_error"])
                        self.assertEqual(fake.requests, 1)
                finally:
                    fake.close()

    # -- wrong requests ----------------------------------------------------------------

    def test_a_wrong_request_is_an_error_at_once_without_failover(self):
        a, b = self.a, self.b

        def refused_on_b():
            return sum(b.metric("idforge_requests_total", protocol=p, route="segment",
                                status=st) for p in ("http", "resp") for st in (400, 404))

        for servers in ([a.http, b.http], [a.resp, b.resp]):
            for buffer in (True, False):
                with self.subTest(servers=servers, buffer=buffer):
                    before = refused_on_b()
                    c = Client(servers, buffer=buffer, timeout_ms=SLOW_OK)
                    t0 = time.monotonic()
                    with self.assertRaises(IdforgeError) as cm:
                        c.segment("no_such_tag")
                    self.assertLess(time.monotonic() - t0, 2.0)
                    e = cm.exception
                    self.assertNotIsInstance(e, IdforgeUnavailable)
                    self.assertEqual(e.code, "not_found")
                    self.assertIn("no_such_tag", e.message)
                    self.assertEqual(e.server, servers[0])
                    with self.assertRaises(IdforgeError) as cm:
                        c.segment("bad tag")
                    self.assertEqual(cm.exception.code, "invalid_argument")
                    # B never heard of them; A is not counted as failed.
                    self.assertEqual(refused_on_b(), before)
                    self.assertEqual([s["failures"] for s in c.server_states()], [0, 0])
                    c.close()
        with Client([a.resp, b.http], batch=20000) as c, self.assertRaises(IdforgeError) as cm:
            c.snowflake()  # above the server's limits.max_count
        self.assertEqual(cm.exception.code, "out_of_range")

    # -- the buffer --------------------------------------------------------------------

    def test_old_time_ordered_ids_are_dropped_segment_ids_kept(self):
        with Client([self.a.http], batch=50, max_age_ms=200, timeout_ms=SLOW_OK) as c:
            old = c.snowflake()
            seg = c.segment("item")
            time.sleep(0.3)
            t_ms = time.time() * 1000
            fresh = c.snowflake()
            self.assertGreater(Client.parse(fresh)["unix_ms"], t_ms - 150)
            self.assertGreater(Client.parse(fresh)["unix_ms"],
                               Client.parse(old)["unix_ms"] + 250)
            self.assertEqual(c.buffered("snowflake"), 49)  # a new batch, less this one
            self.assertEqual(c.segment("item"), seg + 1)  # no age limit

    def test_threads_share_one_client_and_the_buffer_stays_bounded(self):
        batch, below = 64, 32
        ids, errors = [], []
        most = [0]

        with Client([self.a.resp, self.b.http], batch=batch, refill_below=below,
                    timeout_ms=SLOW_OK) as c:
            def work():
                try:
                    mine = []
                    for i in range(1500):
                        mine.append(c.snowflake() if i % 2 else c.segment("order"))
                        most[0] = max(most[0], c.buffered("snowflake"),
                                      c.buffered("segment", "order"))
                    ids.extend(mine)
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

            threads = [threading.Thread(target=work) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        self.assertEqual(errors, [])
        self.assertEqual(len(ids), 6 * 1500)
        self.assertEqual(len(set(ids)), len(ids))
        self.assertLessEqual(most[0], batch + below)

    def test_busy_threads_do_not_starve_a_waiting_one(self):
        # More callers than a batch feeds: each refill hands its IDs to the callers
        # waiting for it first; otherwise a waiting caller can see every refill emptied
        # by running threads and give up after timeout_ms x servers.
        ids, errors = [], []
        with Client([self.a.resp], batch=16, timeout_ms=1000) as c:
            def work():
                try:
                    ids.extend([c.snowflake() for _ in range(15000)])
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

            threads = [threading.Thread(target=work) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(len(set(ids)), 8 * 15000)

    def test_closed_client(self):
        c = Client([self.a.http], timeout_ms=SLOW_OK)
        c.snowflake()
        c.close()
        with self.assertRaises(IdforgeError) as cm:
            c.snowflake()
        self.assertEqual(cm.exception.code, "closed")


if __name__ == "__main__":
    unittest.main()
