package idforge_test

// The client against two real `idforge serve` processes: both protocols, kill -9 and restart,
// kept-alive connections, a stopped server (docs/clients.md); each test mirrors one of
// clients/python/tests/test_servers.py. Buffers: buffer_test.go; answers and errors:
// answers_test.go.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	idforge "idforge.dev/client"
)

var (
	uuid7Pattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ulidPattern  = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)
	bg           = context.Background()
)

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func failures(c *idforge.Client) []int {
	var out []int
	for _, s := range c.Stats().Servers {
		out = append(out, s.Failures)
	}
	return out
}

func asUnavailable(t *testing.T, err error) *idforge.UnavailableError {
	t.Helper()
	var u *idforge.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("want an UnavailableError, got %v", err)
	}
	var e *idforge.Error
	if !errors.As(err, &e) || e.Code != idforge.CodeUnavailable || !errors.Is(err, idforge.ErrUnavailable) {
		t.Fatalf("an UnavailableError is an *Error with code unavailable: %v", err)
	}
	return u
}

// -- both protocols ----------------------------------------------------------------

func TestHTTPAndRedisServersGiveEveryKind(t *testing.T) {
	a, _ := servers(t)
	nodeA := a.node(t)
	for _, url := range []string{a.http(), a.resp()} {
		for _, buffer := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s buffer=%v", url[:4], buffer), func(t *testing.T) {
				c := newClient(t, []string{url}, idforge.WithBuffer(buffer), idforge.WithBatch(32),
					idforge.WithTimeout(slowOK))
				sf, err := c.Snowflake(bg)
				check(t, err)
				if nodeOf(t, sf) != nodeA {
					t.Fatalf("snowflake %d is not of node %v", sf, nodeA)
				}
				more, err := c.Snowflakes(bg, 40)
				check(t, err)
				seen := map[uint64]bool{sf: true}
				for _, v := range more {
					seen[v] = true
				}
				if len(seen) != 41 || !sort.SliceIsSorted(more, func(i, j int) bool { return more[i] < more[j] }) {
					t.Fatalf("41 distinct IDs in order from one server: %v", more)
				}
				seg, err := c.Segment(bg, "order")
				check(t, err)
				segs, err := c.Segments(bg, "order", 5)
				check(t, err)
				for i, v := range segs {
					if v != seg+1+uint64(i) {
						t.Fatalf("segments after %d: %v", seg, segs)
					}
				}
				u, err := c.UUID7(bg)
				check(t, err)
				l, err := c.ULID(bg)
				check(t, err)
				if !uuid7Pattern.MatchString(u) || !ulidPattern.MatchString(l) {
					t.Fatalf("uuid7 %q, ulid %q", u, l)
				}
				us, err := c.UUID7s(bg, 3)
				check(t, err)
				ls, err := c.ULIDs(bg, 3)
				check(t, err)
				texts := map[string]bool{}
				for _, s := range append(us, ls...) {
					texts[s] = true
				}
				if len(texts) != 6 {
					t.Fatalf("6 distinct: %v %v", us, ls)
				}
			})
		}
	}
}

func TestTheTwoServersNeverIssueTheSameID(t *testing.T) {
	a, b := servers(t)
	if a.node(t) == b.node(t) {
		t.Fatal("both servers have the same node")
	}
	ca := newClient(t, []string{a.http()}, idforge.WithBatch(100), idforge.WithTimeout(slowOK))
	cb := newClient(t, []string{b.resp()}, idforge.WithBatch(100), idforge.WithTimeout(slowOK))
	seen := map[uint64]bool{}
	for i := 0; i < 300; i++ {
		for _, c := range []*idforge.Client{ca, cb} {
			v, err := c.Segment(bg, "stock")
			check(t, err)
			if seen[v] {
				t.Fatalf("segment ID %d twice", v)
			}
			seen[v] = true
		}
	}
}

// -- kill -9 and restart -----------------------------------------------------------

func TestPullingThroughKill9AndRestartLosesNoCallAndRepeatsNoID(t *testing.T) {
	a, b := servers(t)
	nodeA := a.node(t)
	type got struct {
		kind string
		id   uint64
		at   time.Time
	}
	var (
		mu      sync.Mutex
		results []got
		errs    []string
		calls   int
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	pull := func(c *idforge.Client, kinds []string) {
		defer wg.Done()
		var mine []got
		n := 0
		defer func() {
			mu.Lock()
			results = append(results, mine...)
			calls += n
			mu.Unlock()
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, kind := range kinds {
				n++
				var v uint64
				var err error
				if kind == "sf" {
					v, err = c.Snowflake(bg)
				} else {
					v, err = c.Segment(bg, "order")
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					return
				}
				mine = append(mine, got{kind, v, time.Now()})
			}
		}
	}
	// A killed server refuses at once; the timeout only covers a starved one.
	opts := []idforge.Option{idforge.WithTimeout(slowOK),
		idforge.WithBackoff(200*time.Millisecond, 1000*time.Millisecond)}
	// Buffered, small batches (many refills); and one request per call. Both start on
	// A, over both protocols.
	buffered := newClient(t, []string{a.http(), b.resp()}, append(opts, idforge.WithBatch(16))...)
	direct := newClient(t, []string{a.resp(), b.http()}, append(opts, idforge.WithBuffer(false))...)
	wg.Add(3)
	go pull(buffered, []string{"sf", "seg"})
	go pull(buffered, []string{"seg", "sf"})
	go pull(direct, []string{"sf", "seg"})
	time.Sleep(300 * time.Millisecond)
	a.kill9()
	time.Sleep(300 * time.Millisecond)
	check(t, a.start()) // same data dir, identity and ports
	restarted := time.Now()
	time.Sleep(400 * time.Millisecond)
	b.kill9() // now only the restarted A can answer
	time.Sleep(400 * time.Millisecond)
	check(t, b.start())
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()

	if len(errs) > 0 {
		t.Fatalf("calls failed: %v", errs)
	}
	if len(results) != calls {
		t.Fatalf("%d calls, %d IDs", calls, len(results))
	}
	for _, kind := range []string{"sf", "seg"} {
		seen := map[uint64]bool{}
		for _, r := range results {
			if r.kind != kind {
				continue
			}
			if seen[r.id] {
				t.Fatalf("a repeated %s ID %d", kind, r.id)
			}
			seen[r.id] = true
		}
		if len(seen) <= 100 {
			t.Fatalf("only %d %s IDs", len(seen), kind)
		}
	}
	// The restarted A served (IDs of its node, made after its restart), through both
	// clients.
	var after []got
	for _, r := range results {
		if r.kind == "sf" && r.at.After(restarted.Add(400*time.Millisecond)) {
			after = append(after, r)
		}
	}
	sort.Slice(after, func(i, j int) bool { return after[i].at.Before(after[j].at) })
	if len(after) < 10 {
		t.Fatalf("only %d Snowflake IDs after A's restart", len(after))
	}
	made := false
	for _, r := range after {
		p, _ := idforge.Parse(r.id, "twitter")
		made = made || p.UnixMs > restarted.UnixMilli()
	}
	for _, r := range after[len(after)-10:] {
		if nodeOf(t, r.id) != nodeA {
			t.Fatalf("the last IDs are not A's: %d", r.id)
		}
	}
	if !made {
		t.Fatal("no ID made by the restarted A")
	}
}

func TestAKeptAliveConnectionTheServerClosedIsNotAFailure(t *testing.T) {
	a, b := servers(t)
	nodeA := a.node(t)
	clients := []*idforge.Client{
		newClient(t, []string{a.http(), b.resp()}, idforge.WithBuffer(false), idforge.WithTimeout(slowOK)),
		newClient(t, []string{a.resp(), b.http()}, idforge.WithBuffer(false), idforge.WithTimeout(slowOK)),
	}
	for _, c := range clients {
		v, err := c.Snowflake(bg) // a kept-alive connection
		check(t, err)
		if nodeOf(t, v) != nodeA {
			t.Fatal("not A")
		}
	}
	a.kill9() // closes them all
	check(t, a.start())
	for _, c := range clients {
		// A again, on a new connection: its old one is no reason to skip it.
		v, err := c.Snowflake(bg)
		check(t, err)
		if nodeOf(t, v) != nodeA || fmt.Sprint(failures(c)) != "[0 0]" {
			t.Fatalf("node %v, failures %v", nodeOf(t, v), failures(c))
		}
	}
	// A server that closes every connection after its answer, without a word: the
	// next request meets a connection closed meanwhile and takes a new one.
	for _, tc := range []struct {
		scheme string
		answer []byte
	}{
		{"http", httpAnswer("200 OK", `{"kind":"snowflake","ids":["5"]}`)},
		{"redis", []byte("*1\r\n:5\r\n")},
	} {
		fake := newFake(t, tc.answer, true)
		c := newClient(t, []string{fmt.Sprintf("%s://127.0.0.1:%d", tc.scheme, fake.port()), a.http()},
			idforge.WithBuffer(false), idforge.WithTimeout(slowOK))
		for i := 0; i < 5; i++ {
			v, err := c.Snowflake(bg)
			check(t, err)
			if v != 5 {
				t.Fatalf("%s: %d from %v", tc.scheme, v, c.Stats().Servers)
			}
			time.Sleep(5 * time.Millisecond) // the close arrives while the client is idle
		}
		if fmt.Sprint(failures(c)) != "[0 0]" || fake.requests.Load() != 5 {
			t.Fatalf("%s: failures %v, %d requests", tc.scheme, failures(c), fake.requests.Load())
		}
	}
}

// -- SIGSTOP -----------------------------------------------------------------------

func TestAStoppedServerCostsOneTimeoutThenIsSkipped(t *testing.T) {
	a, b := servers(t)
	nodeA, nodeB := a.node(t), b.node(t)
	timeout := 500 * time.Millisecond
	c := newClient(t, []string{a.http(), b.resp()}, idforge.WithTimeout(timeout),
		idforge.WithBuffer(false), idforge.WithBackoff(5*time.Second, 30*time.Second))
	v, err := c.Snowflake(bg)
	check(t, err)
	if nodeOf(t, v) != nodeA {
		t.Fatal("A answers first")
	}
	a.sigstop(t)
	t0 := time.Now()
	first, err := c.Snowflake(bg)
	firstTook := time.Since(t0)
	check(t, err)
	var rest []uint64
	for i := 0; i < 30; i++ {
		v, err := c.Snowflake(bg)
		check(t, err)
		rest = append(rest, v)
	}
	restTook := time.Since(t0) - firstTook
	st := c.Stats()
	a.sigcont()
	// The first request waited for A's timeout, then B answered it; the others went
	// straight to B (one timeout each would be 15 s).
	if firstTook < timeout*9/10 || firstTook > 2*timeout {
		t.Fatalf("the first call took %v", firstTook)
	}
	if restTook > 5*timeout {
		t.Fatalf("a timeout per request: %v", restTook)
	}
	for _, v := range append(rest, first) {
		if nodeOf(t, v) != nodeB {
			t.Fatalf("%d is not B's", v)
		}
	}
	if st.Servers[0].Failures != 1 || !strings.Contains(st.Servers[0].LastError, "timed out after 500 ms") ||
		!st.Servers[1].Current {
		t.Fatalf("states %+v", st.Servers)
	}
	// A is well again, but requests stay on the server that answered last.
	v, err = c.Snowflake(bg)
	check(t, err)
	if nodeOf(t, v) != nodeB {
		t.Fatal("left B")
	}
}

func TestAStoppedServerDuringBackgroundRefillsCostsTheCallerNothing(t *testing.T) {
	// Snowflake IDs: a server stopped while it held the shared SQLite store's lock
	// would hold up the other's segment ranges too (an artefact of the test setup).
	a, b := servers(t)
	timeout := 500 * time.Millisecond
	c := newClient(t, []string{a.resp(), b.http()}, idforge.WithTimeout(timeout), idforge.WithBatch(100),
		idforge.WithRefillBelow(70), idforge.WithBackoff(5*time.Second, 30*time.Second))
	v, err := c.Snowflake(bg)
	check(t, err)
	ids := map[uint64]bool{v: true}
	a.sigstop(t)
	var slowest time.Duration
	for i := 0; i < 100; i++ {
		time.Sleep(10 * time.Millisecond) // 70 IDs last longer than A's timeout
		t0 := time.Now()
		v, err := c.Snowflake(bg)
		if took := time.Since(t0); took > slowest {
			slowest = took
		}
		check(t, err)
		ids[v] = true
	}
	st := c.Stats()
	a.sigcont()
	if len(ids) != 101 {
		t.Fatalf("%d distinct IDs", len(ids))
	}
	// The refiller met A's timeout and went on to B; no caller waited.
	if st.Servers[0].Failures != 1 || !st.Servers[1].Current {
		t.Fatalf("states %+v", st.Servers)
	}
	if slowest > timeout/2 {
		t.Fatalf("a call waited %v", slowest)
	}
}
