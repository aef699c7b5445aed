package idforge_test

// The client's buffers against real servers: background refills within their bound, a full
// outage, the age limit, goroutines sharing one client, close and cancel (docs/clients.md,
// "The local buffer"); each test mirrors one of clients/python/tests/test_servers.py.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	idforge "idforge.dev/client"
)

func TestTheBufferRefillsInTheBackgroundWithinItsBound(t *testing.T) {
	a, _ := servers(t)
	c := newClient(t, []string{a.http()}, idforge.WithBatch(20), idforge.WithRefillBelow(10),
		idforge.WithTimeout(slowOK))
	ids := map[uint64]bool{}
	take := func(n int) {
		for i := 0; i < n; i++ {
			v, err := c.Snowflake(bg)
			check(t, err)
			ids[v] = true
		}
	}
	take(1)
	if n := c.Buffered(idforge.KindSnowflake, ""); n != 19 {
		t.Fatalf("buffered %d", n)
	}
	take(5)
	time.Sleep(100 * time.Millisecond) // 14 left: not below 10, no refill
	if n := c.Buffered(idforge.KindSnowflake, ""); n != 14 {
		t.Fatalf("buffered %d", n)
	}
	take(5) // 9 left: below 10
	deadline := time.Now().Add(2 * time.Second)
	for c.Buffered(idforge.KindSnowflake, "") != 29 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.Buffered(idforge.KindSnowflake, ""); n != 29 { // batch + refill_below at most
		t.Fatalf("buffered %d after the refill", n)
	}
	take(1) // 28 left: not below 10, no refill
	time.Sleep(100 * time.Millisecond)
	if n := c.Buffered(idforge.KindSnowflake, ""); n != 28 {
		t.Fatalf("buffered %d", n)
	}
	more, err := c.Snowflakes(bg, 28)
	check(t, err)
	for _, v := range more {
		ids[v] = true
	}
	if len(ids) != 40 {
		t.Fatalf("%d distinct", len(ids))
	}
	if st := c.Stats().Buffers[0]; st.Kind != idforge.KindSnowflake || st.Refills != 2 {
		t.Fatalf("buffer state %+v", st)
	}
}

// -- a full outage -----------------------------------------------------------------

func TestTheBufferServesAFullOutageUntilEmptyThenNamesEveryServer(t *testing.T) {
	a, b := servers(t)
	c := newClient(t, []string{a.http(), b.resp()}, idforge.WithTimeout(100*time.Millisecond),
		idforge.WithBatch(40), idforge.WithRefillBelow(20), idforge.WithMaxAge(10*time.Second),
		idforge.WithBackoff(100*time.Millisecond, 30*time.Second))
	firstSeg, err := c.Segment(bg, "outage")
	check(t, err)
	firstSF, err := c.Snowflake(bg)
	check(t, err)
	if c.Buffered(idforge.KindSegment, "outage") != 39 || c.Buffered(idforge.KindSnowflake, "") != 39 {
		t.Fatal("39 buffered each")
	}
	a.sigstop(t)
	b.sigstop(t)
	for _, kind := range []string{"segment", "snowflake"} {
		call, first := func() (uint64, error) { return c.Segment(bg, "outage") }, firstSeg
		if kind == "snowflake" {
			call, first = func() (uint64, error) { return c.Snowflake(bg) }, firstSF
		}
		served := map[uint64]bool{first: true}
		var err error
		var t0 time.Time
		for err == nil && len(served) < 100 {
			// Slow enough that the background refill (below 20 left) fails on both
			// servers while IDs are left.
			time.Sleep(15 * time.Millisecond)
			t0 = time.Now()
			var v uint64
			if v, err = call(); err == nil {
				served[v] = true
			}
		}
		waited := time.Since(t0)
		if len(served) != 40 {
			t.Fatalf("%s: %d served (every buffered ID: 40 with the first)", kind, len(served))
		}
		u := asUnavailable(t, err)
		msg := err.Error()
		if !strings.Contains(msg, a.http()) || !strings.Contains(msg, b.resp()) ||
			!strings.Contains(msg, "timed out after 100 ms") {
			t.Fatalf("%s: %s", kind, msg)
		}
		if len(u.Servers) != 2 || u.Servers[0].URL != a.http() || u.Servers[1].URL != b.resp() {
			t.Fatalf("%s: servers %+v", kind, u.Servers)
		}
		if waited > 1200*time.Millisecond {
			t.Fatalf("%s: the last call waited %v", kind, waited)
		}
	}
	a.sigcont()
	b.sigcont()
	// Back: the next call gets an ID again (every server backing off: the one whose
	// period ends first is tried).
	deadline := time.Now().Add(3 * time.Second)
	for {
		v, err := c.Segment(bg, "outage")
		if err == nil {
			if v <= firstSeg {
				t.Fatalf("%d after %d", v, firstSeg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAnEmptyBufferTriesAServerStillBackingOff(t *testing.T) {
	a, _ := servers(t)
	c := newClient(t, []string{a.http()}, idforge.WithTimeout(300*time.Millisecond), idforge.WithBatch(10),
		idforge.WithRefillBelow(5), idforge.WithBackoff(time.Minute, time.Minute))
	ids := map[uint64]bool{}
	take := func(n int) {
		for i := 0; i < n; i++ {
			v, err := c.Snowflake(bg)
			check(t, err)
			ids[v] = true
		}
	}
	take(1) // 9 left
	a.sigstop(t)
	take(5) // 4 left: a refill, A times out
	deadline := time.Now().Add(5 * time.Second)
	for failures(c)[0] == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	a.sigcont()
	if left := c.Stats().Servers[0].BackoffLeft; left < 50*time.Second {
		t.Fatalf("backing off %v", left)
	}
	// No background refill while A backs off; the empty buffer tries A anyway.
	take(4 + 10)
	if len(ids) != 20 || failures(c)[0] != 0 {
		t.Fatalf("%d IDs, failures %v", len(ids), failures(c))
	}
}

func TestOldTimeOrderedIDsAreDroppedSegmentIDsKept(t *testing.T) {
	a, _ := servers(t)
	c := newClient(t, []string{a.http()}, idforge.WithBatch(50), idforge.WithMaxAge(200*time.Millisecond),
		idforge.WithTimeout(slowOK))
	old, err := c.Snowflake(bg)
	check(t, err)
	seg, err := c.Segment(bg, "item")
	check(t, err)
	time.Sleep(300 * time.Millisecond)
	now := time.Now().UnixMilli()
	fresh, err := c.Snowflake(bg)
	check(t, err)
	pf, _ := idforge.Parse(fresh, "twitter")
	po, _ := idforge.Parse(old, "twitter")
	if pf.UnixMs <= now-150 || pf.UnixMs <= po.UnixMs+250 {
		t.Fatalf("fresh %d, old %d, now %d", pf.UnixMs, po.UnixMs, now)
	}
	if n := c.Buffered(idforge.KindSnowflake, ""); n != 49 { // a new batch, less this one
		t.Fatalf("buffered %d", n)
	}
	// The new batch's age counts from its request: it is served, not dropped.
	if _, err := c.Snowflake(bg); err != nil || c.Buffered(idforge.KindSnowflake, "") != 48 {
		t.Fatalf("buffered %d, %v", c.Buffered(idforge.KindSnowflake, ""), err)
	}
	if st := c.Stats().Buffers[0]; st.Dropped != 49 || st.Refills != 2 {
		t.Fatalf("buffer state %+v", st)
	}
	next, err := c.Segment(bg, "item")
	check(t, err)
	if next != seg+1 { // no age limit
		t.Fatalf("segment %d after %d", next, seg)
	}
}

func TestGoroutinesShareOneClientAndTheBufferStaysBounded(t *testing.T) {
	a, b := servers(t)
	const batch, below = 64, 32
	c := newClient(t, []string{a.resp(), b.http()}, idforge.WithBatch(batch), idforge.WithRefillBelow(below),
		idforge.WithTimeout(slowOK))
	var (
		mu   sync.Mutex
		all  = map[uint64]bool{}
		errs []error
		most int
		wg   sync.WaitGroup
	)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine, high := make([]uint64, 0, 1500), 0
			for i := 0; i < 1500; i++ {
				var v uint64
				var err error
				if i%2 == 1 {
					v, err = c.Snowflake(bg)
				} else {
					v, err = c.Segment(bg, "order")
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mine = append(mine, v)
				if n := c.Buffered(idforge.KindSnowflake, ""); n > high {
					high = n
				}
				if n := c.Buffered(idforge.KindSegment, "order"); n > high {
					high = n
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range mine {
				all[v] = true
			}
			if high > most {
				most = high
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(all) != 6*1500 {
		t.Fatalf("%d distinct IDs of %d", len(all), 6*1500)
	}
	if most > batch+below {
		t.Fatalf("a buffer held %d", most)
	}
}

func TestBusyGoroutinesDoNotStarveAWaitingOne(t *testing.T) {
	// More callers than a batch feeds: each refill hands its IDs to the callers
	// waiting for it first; otherwise a waiting caller can see every refill emptied by
	// running goroutines and give up after timeout x servers.
	a, _ := servers(t)
	c := newClient(t, []string{a.resp()}, idforge.WithBatch(16), idforge.WithTimeout(time.Second))
	const goroutines, each = 8, 15000
	results := make([][]uint64, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			results[g], errs[g] = c.Snowflakes(bg, each)
		}(g)
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for g := range results {
		check(t, errs[g])
		for _, v := range results[g] {
			seen[v] = true
		}
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d distinct", len(seen))
	}
}

func TestClosedClient(t *testing.T) {
	a, _ := servers(t)
	c := newClient(t, []string{a.http()}, idforge.WithTimeout(slowOK))
	_, err := c.Snowflake(bg)
	check(t, err)
	check(t, c.Close())
	_, err = c.Snowflake(bg)
	var e *idforge.Error
	if !errors.As(err, &e) || e.Code != "closed" || !errors.Is(err, idforge.ErrClosed) {
		t.Fatalf("want closed, got %v", err)
	}
	_, err = c.Segments(bg, "order", 2)
	if !errors.Is(err, idforge.ErrClosed) {
		t.Fatalf("want closed, got %v", err)
	}
	// A call waiting on a server that does not answer ends at Close, and so does
	// its request.
	silent := newFake(t, nil, false)
	c2 := newClient(t, []string{fmt.Sprintf("http://127.0.0.1:%d", silent.port())}, idforge.WithTimeout(slowOK))
	done := make(chan error, 1)
	go func() { _, err := c2.Snowflake(bg); done <- err }()
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	check(t, c2.Close())
	if err := <-done; !errors.Is(err, idforge.ErrClosed) || time.Since(t0) > time.Second {
		t.Fatalf("want closed at once, got %v after %v", err, time.Since(t0))
	}
}

func TestACancelledCallIsNoServerFailure(t *testing.T) {
	for _, scheme := range []string{"http", "redis"} {
		silent := newFake(t, nil, false)
		for _, buffer := range []bool{true, false} {
			c := newClient(t, []string{fmt.Sprintf("%s://127.0.0.1:%d", scheme, silent.port())},
				idforge.WithTimeout(slowOK), idforge.WithBuffer(buffer))
			ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
			t0 := time.Now()
			_, err := c.Snowflake(ctx)
			cancel()
			var e *idforge.Error
			if !errors.As(err, &e) || e.Code != idforge.CodeCanceled ||
				!errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > time.Second {
				t.Fatalf("%s buffer=%v: %v after %v", scheme, buffer, err, time.Since(t0))
			}
			if !buffer && failures(c)[0] != 0 {
				t.Fatalf("%s: the caller's deadline counted as a failure", scheme)
			}
		}
	}
}
