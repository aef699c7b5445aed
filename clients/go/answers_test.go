package idforge_test

// What the client makes of each answer, from real servers and small fake ones: wrong
// requests, other errors, a wrong number of IDs, no server at all, bad URLs and options
// (docs/clients.md, "Servers and failover").

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	idforge "idforge.dev/client"
)

func TestNoServerAtAllFailsAtOnceNamingEachServer(t *testing.T) {
	dead := []string{fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), fmt.Sprintf("redis://127.0.0.1:%d", freePort(t))}
	c := newClient(t, dead, idforge.WithBuffer(false), idforge.WithBackoff(time.Second, 3*time.Second))
	want := fmt.Sprint([]idforge.ServerError{{URL: dead[0], Why: "failed: connection refused"},
		{URL: dead[1], Why: "failed: connection refused"}})
	for i := 0; i < 2; i++ {
		// The second time both back off: a waiting caller tries them anyway, the one
		// whose period ends first first, rather than failing untried.
		_, err := c.Snowflake(bg)
		if u := asUnavailable(t, err); fmt.Sprint(u.Servers) != want {
			t.Fatalf("call %d: %+v", i, u.Servers)
		}
	}
	st := c.Stats().Servers
	if st[0].Failures != 2 || st[1].Failures != 2 || st[0].BackoffLeft < 1500*time.Millisecond {
		t.Fatalf("states %+v", st) // doubled: 2000 ms
	}
	for i := 0; i < 4; i++ {
		_, err := c.Snowflake(bg)
		asUnavailable(t, err)
	}
	st = c.Stats().Servers
	if st[0].Failures+st[1].Failures != 12 { // both, every call
		t.Fatalf("states %+v", st)
	}
	if st[0].BackoffLeft > 3*time.Second || st[1].BackoffLeft > 3*time.Second {
		t.Fatalf("past the cap: %+v", st)
	}
	// With the buffer, an empty buffer fails the same way.
	c2 := newClient(t, dead, idforge.WithTimeout(200*time.Millisecond))
	_, err := c2.Segment(bg, "order")
	asUnavailable(t, err)
}

func TestAnUnavailableErrorNamesEachServerAndWhy(t *testing.T) {
	a, _ := servers(t)
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	c := newClient(t, []string{dead, a.resp()}, idforge.WithBatch(4), idforge.WithRefillBelow(2),
		idforge.WithTimeout(300*time.Millisecond), idforge.WithBackoff(time.Minute, time.Minute))
	for i := 0; i < 2; i++ { // the dead server fails and backs off; A answers: 2 left
		_, err := c.Snowflake(bg)
		check(t, err)
	}
	a.sigstop(t)
	var err error
	for i := 0; i < 3 && err == nil; i++ {
		// 1 left: a background refill; A times out in it, the dead server is skipped.
		// The call that finds the buffer empty waits for it and meets its error.
		_, err = c.Snowflake(bg)
		time.Sleep(20 * time.Millisecond) // the refiller takes the refill up
	}
	a.sigcont()
	u := asUnavailable(t, err)
	skipped := regexp.MustCompile(`^skipped: backing off [0-9]+ ms more after 1 failure in a row \(last: connection refused\)$`)
	if len(u.Servers) != 2 || u.Servers[0].URL != dead || !skipped.MatchString(u.Servers[0].Why) ||
		u.Servers[1] != (idforge.ServerError{URL: a.resp(), Why: "failed: timed out after 300 ms"}) {
		t.Fatalf("%+v", u.Servers)
	}
	want := "no idforge server could give snowflake IDs: " + dead + " skipped: backing off "
	if !strings.HasPrefix(u.Message, want) || !strings.HasSuffix(u.Message, "; "+a.resp()+" failed: timed out after 300 ms") {
		t.Fatal(u.Message)
	}
}

// -- broken answers ----------------------------------------------------------------

func TestAnyOtherErrorAnswerMovesOnToTheNextServer(t *testing.T) {
	a, _ := servers(t)
	nodeA := a.node(t)
	cases := []struct {
		scheme string
		answer []byte
		why    string
	}{
		{"http", httpAnswer("503 Service Unavailable",
			`{"error":{"code":"unavailable","message":"segment store down"}}`), "HTTP 503 unavailable"},
		{"http", httpAnswer("500 Internal Server Error", `{"error":{"code":"internal","message":"boom"}}`),
			"HTTP 500 internal"},
		{"http", httpAnswer("401 Unauthorized", "proxy says no"), "HTTP 401 http_401: proxy says no"},
		{"http", httpAnswer("403 Forbidden", "no"), "HTTP 403"},
		{"http", httpAnswer("429 Too Many Requests", `{"error":{"code":"too_many_requests","message":"rate"}}`),
			"HTTP 429 too_many_requests"},
		{"http", []byte("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n"), "HTTP 302"},
		{"http", httpAnswer("200 OK", `{"ids":[]}`), "malformed"},
		{"http", httpAnswer("200 OK", `{"ids":["12x"]}`), "malformed"},
		{"http", httpAnswer("200 OK", `<html>`), "malformed"},
		{"http", []byte("SSH-2.0-OpenSSH\r\n"), "malformed HTTP response"},
		{"redis", []byte("-ERR lease_lost: the worker lease is gone\r\n"), "lease_lost"},
		{"redis", []byte("-ERR io_error: disk\r\n"), "io_error"},
		{"redis", []byte("-ERR unknown command 'ID.SNOWFLAKE'\r\n"), "unknown command"},
		{"redis", []byte("-NOAUTH Authentication required.\r\n"), "NOAUTH"},
		{"redis", []byte("+OK\r\n"), "unexpected answer"},
		{"redis", []byte("*1\r\n$3\r\nabc\r\n"), "malformed"},
		{"redis", []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), "not a RESP answer"},
	}
	for _, tc := range cases {
		t.Run(tc.why, func(t *testing.T) {
			fake := newFake(t, tc.answer, false)
			c := newClient(t, []string{fmt.Sprintf("%s://127.0.0.1:%d", tc.scheme, fake.port()), a.http()},
				idforge.WithBuffer(false), idforge.WithTimeout(slowOK))
			v, err := c.Snowflake(bg)
			check(t, err)
			st := c.Stats().Servers[0]
			if nodeOf(t, v) != nodeA || st.Failures != 1 || !strings.Contains(st.LastError, tc.why) ||
				fake.requests.Load() != 1 {
				t.Fatalf("node %v, state %+v, %d requests", nodeOf(t, v), st, fake.requests.Load())
			}
		})
	}
}

func TestAServerThatAnswersAWrongNumberOfIDsIsAFailure(t *testing.T) {
	a, b := servers(t)
	nodeB := b.node(t)
	for _, tc := range []struct {
		scheme string
		answer []byte
	}{
		{"http", httpAnswer("200 OK", `{"kind":"snowflake","ids":["1","2"]}`)},
		{"redis", []byte("*2\r\n:1\r\n:2\r\n")},
	} {
		t.Run(tc.scheme, func(t *testing.T) {
			fake := newFake(t, tc.answer, false)
			c := newClient(t, []string{fmt.Sprintf("%s://127.0.0.1:%d", tc.scheme, fake.port()), b.resp(), a.http()},
				idforge.WithBuffer(false), idforge.WithTimeout(slowOK))
			for i := 0; i < 3; i++ {
				v, err := c.Snowflake(bg)
				check(t, err)
				if nodeOf(t, v) != nodeB {
					t.Fatalf("%d is not B's", v)
				}
			}
			st := c.Stats().Servers
			if st[0].Failures != 1 || st[0].LastError != "answered 2 IDs, asked for 1" ||
				st[0].BackoffLeft <= 0 || !st[1].Current || fake.requests.Load() != 1 {
				t.Fatalf("states %+v, %d requests", st, fake.requests.Load())
			}
			// Its back-off over, it is still not asked first: requests go to the
			// server that answered last.
			c2 := newClient(t, []string{fmt.Sprintf("%s://127.0.0.1:%d", tc.scheme, fake.port()), b.resp()},
				idforge.WithBuffer(false), idforge.WithTimeout(slowOK), idforge.WithBackoff(time.Millisecond, time.Millisecond))
			for i := 0; i < 3; i++ {
				_, err := c2.Snowflake(bg)
				check(t, err)
				time.Sleep(5 * time.Millisecond)
			}
			if fake.requests.Load() != 2 || !c2.Stats().Servers[1].Current {
				t.Fatalf("%d requests on the broken server, states %+v", fake.requests.Load(), c2.Stats().Servers)
			}
		})
	}
}

// -- wrong requests ----------------------------------------------------------------

func TestAWrongRequestIsAnErrorAtOnceWithoutFailover(t *testing.T) {
	a, b := servers(t)
	refusedOnB := func() float64 {
		sum := 0.0
		for _, p := range []string{"http", "resp"} {
			for _, status := range []string{"400", "404"} {
				sum += b.metric(t, "idforge_requests_total", "protocol", p, "route", "segment", "status", status)
			}
		}
		return sum
	}
	for _, list := range [][]string{{a.http(), b.http()}, {a.resp(), b.resp()}} {
		for _, buffer := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s buffer=%v", list[0][:4], buffer), func(t *testing.T) {
				before := refusedOnB()
				c := newClient(t, list, idforge.WithBuffer(buffer), idforge.WithTimeout(slowOK))
				t0 := time.Now()
				_, err := c.Segment(bg, "no_such_tag")
				if time.Since(t0) > 2*time.Second {
					t.Fatal("not at once")
				}
				var e *idforge.Error
				var u *idforge.UnavailableError
				if !errors.As(err, &e) || errors.As(err, &u) {
					t.Fatalf("want a plain *Error, got %v", err)
				}
				if e.Code != "not_found" || !strings.Contains(e.Message, "no_such_tag") || e.Server != list[0] {
					t.Fatalf("%+v", e)
				}
				if strings.HasPrefix(list[0], "http") && e.Status != 404 {
					t.Fatalf("status %d", e.Status)
				}
				_, err = c.Segment(bg, "bad tag")
				if !errors.As(err, &e) || e.Code != "invalid_argument" {
					t.Fatalf("want invalid_argument, got %v", err)
				}
				// B never heard of them; A is not counted as failed.
				if refusedOnB() != before || fmt.Sprint(failures(c)) != "[0 0]" {
					t.Fatalf("B refused %v more; failures %v", refusedOnB()-before, failures(c))
				}
			})
		}
	}
	c := newClient(t, []string{a.resp(), b.http()}, idforge.WithBatch(20000))
	_, err := c.Snowflake(bg) // above the server's limits.max_count
	var e *idforge.Error
	if !errors.As(err, &e) || e.Code != "out_of_range" {
		t.Fatalf("want out_of_range, got %v", err)
	}
}

func TestABackgroundRefillThatFailedWaitsBeforeItTriesAgain(t *testing.T) {
	// A server that gives segment IDs, then refuses the tag: each background refill
	// below refill_below would send the refused request again without the wait.
	var next, refused atomic.Int64
	var gone atomic.Bool
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() {
			refused.Add(1)
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"not_found","message":"unknown tag 'x'"}}`)
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("count"))
		ids := make([]string, n)
		for i := range ids {
			ids[i] = `"` + strconv.FormatInt(next.Add(1), 10) + `"`
		}
		io.WriteString(w, `{"kind":"segment","tag":"x","ids":[`+strings.Join(ids, ",")+`]}`)
	}))
	defer fake.Close()
	c := newClient(t, []string{fake.URL}, idforge.WithBatch(10), idforge.WithRefillBelow(5),
		idforge.WithBackoff(time.Minute, time.Minute), idforge.WithTimeout(slowOK))
	for i := 0; i < 2; i++ { // 8 left
		_, err := c.Segment(bg, "x")
		check(t, err)
	}
	gone.Store(true)
	for i := 0; i < 8; i++ { // below 5 from the 4th: one background refill, refused
		_, err := c.Segment(bg, "x")
		check(t, err)
		time.Sleep(10 * time.Millisecond)
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("the refused request was sent %d times", n)
	}
	// The buffer empty, a call sends it and fails at once with the server's answer.
	_, err := c.Segment(bg, "x")
	var e *idforge.Error
	if !errors.As(err, &e) || e.Code != "not_found" || refused.Load() != 2 {
		t.Fatalf("%v after %d requests", err, refused.Load())
	}
	if st := c.Stats().Buffers[3]; st.Tag != "x" || !strings.Contains(st.LastError, "not_found") {
		t.Fatalf("buffer state %+v", st)
	}
}

// -- the buffer --------------------------------------------------------------------

func TestNewRefusesBadURLsAndOptions(t *testing.T) {
	good, err := idforge.New([]string{"http://h", "redis://h", " HTTP://[::1]:81/ ", "redis://10.0.0.2:6381"})
	check(t, err)
	if got := fmt.Sprint(good.Servers()); got != "[http://h:80 redis://h:6380 http://[::1]:81 redis://10.0.0.2:6381]" {
		t.Fatal(got)
	}
	good.Close()
	for _, tc := range []struct {
		servers []string
		options []idforge.Option
	}{
		{nil, nil},
		{[]string{"https://h:1"}, nil},
		{[]string{"h:8080"}, nil},
		{[]string{"http://h:8080/prefix"}, nil},
		{[]string{"http://u:p@h:8080"}, nil},
		{[]string{"http://h:0"}, nil},
		{[]string{"http://h:99999"}, nil},
		{[]string{"redis://:6380"}, nil},
		{[]string{"http://h"}, []idforge.Option{idforge.WithBatch(0)}},
		{[]string{"http://h"}, []idforge.Option{idforge.WithBatch(10), idforge.WithRefillBelow(11)}},
		{[]string{"http://h"}, []idforge.Option{idforge.WithRefillBelow(-1)}},
		{[]string{"http://h"}, []idforge.Option{idforge.WithTimeout(0)}},
		{[]string{"http://h"}, []idforge.Option{idforge.WithMaxAge(-time.Second)}},
		{[]string{"http://h"}, []idforge.Option{idforge.WithBackoff(time.Second, time.Millisecond)}},
	} {
		_, err := idforge.New(tc.servers, tc.options...)
		var e *idforge.Error
		if !errors.As(err, &e) || e.Code != idforge.CodeInvalidArgument {
			t.Fatalf("%v: want invalid_argument, got %v", tc.servers, err)
		}
	}
	c := newClient(t, []string{"http://127.0.0.1:1"})
	if _, err := c.Segment(bg, ""); err == nil {
		t.Fatal("an empty tag")
	}
}
