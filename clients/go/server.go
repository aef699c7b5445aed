package idforge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind is a kind of ID a Client buffers.
type Kind string

// The kinds of ID: Snowflake and segment IDs are uint64, UUIDv7 and ULID text.
const (
	KindSnowflake Kind = "snowflake"
	KindSegment   Kind = "segment"
	KindUUID7     Kind = "uuid7"
	KindULID      Kind = "ulid"
)

func (k Kind) numeric() bool { return k == KindSnowflake || k == KindSegment }

func (k Kind) valid() bool {
	return k == KindSnowflake || k == KindSegment || k == KindUUID7 || k == KindULID
}

// what names the IDs of a request in messages.
func what(kind Kind, tag string) string {
	if kind == KindSegment {
		return "segment IDs of tag '" + tag + "'"
	}
	return string(kind) + " IDs"
}

// The answers that say the request itself is wrong (docs/clients.md): every server
// of a fleet would give the same, so they are not retried elsewhere.
var wrongRequestCodes = map[string]bool{"invalid_argument": true, "out_of_range": true, "not_found": true}

func wrongRequestStatus(status int) bool { return status == 400 || status == 404 || status == 409 }

// answer is the IDs of one request: nums for Snowflake and segment, strs otherwise.
type answer struct {
	nums []uint64
	strs []string
}

func (a answer) len() int { return len(a.nums) + len(a.strs) }

// server is one server of a client: its URL, its transport and its failover state
// (guarded by the client's mutex).
type server struct {
	url    string // canonical: scheme://host:port
	scheme string // "http" or "redis"
	addr   string // host:port for net.Dial
	http   *httpTransport
	resp   *respPool

	failures    int
	until       time.Time // end of its back-off
	lastFailure time.Time
	lastError   string
}

// parseServerURL reads http://HOST[:PORT] (port 80 when left out) or
// redis://HOST[:PORT] (port 6380, idforge's); IPv6 hosts as [::1].
func parseServerURL(raw string) (scheme, host string, port int, err error) {
	text := strings.TrimSpace(raw)
	bad := func(why string) error {
		return errInvalid(fmt.Sprintf("server %q: %s", raw, why))
	}
	u, perr := url.Parse(text)
	if perr != nil {
		var ue *url.Error
		if errors.As(perr, &ue) {
			perr = ue.Err
		}
		return "", "", 0, bad(perr.Error())
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "redis" {
		return "", "", 0, bad("the scheme must be http:// (the JSON API) or redis:// (the Redis protocol)")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", "", 0, bad("no host; give scheme://HOST:PORT")
	}
	if u.User != nil {
		return "", "", 0, bad("idforge servers take no user or password")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", "", 0, bad("give only scheme://HOST:PORT (no path, query or fragment)")
	}
	host = u.Hostname()
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", "", 0, bad("the port must be from 1 to 65535")
		}
		port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return "", "", 0, bad("an empty port")
	} else if scheme == "http" {
		port = 80
	} else {
		port = 6380
	}
	return scheme, host, port, nil
}

func newServer(raw string, http *httpTransport) (*server, error) {
	scheme, host, port, err := parseServerURL(raw)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	s := &server{url: scheme + "://" + addr, scheme: scheme, addr: addr}
	if scheme == "http" {
		s.http = http
	} else {
		s.resp = &respPool{addr: addr, url: s.url}
	}
	return s, nil
}

// fetch asks the server for count IDs within ctx's deadline. The error is a *failure
// (try the next server), an *Error (the request is wrong) or, when ctx ended before
// its deadline, ctx.Err().
func (s *server) fetch(ctx context.Context, kind Kind, tag string, count int, timeout time.Duration) (answer, error) {
	var a answer
	var err error
	if s.http != nil {
		a, err = s.http.fetch(ctx, s.url, kind, tag, count)
	} else {
		a, err = s.resp.fetch(ctx, kind, tag, count)
	}
	if err == nil {
		if a.len() != count {
			// docs/clients.md: any answer other than the IDs asked for is a failure.
			return answer{}, fail(fmt.Sprintf("answered %d IDs, asked for %d", a.len(), count))
		}
		return a, nil
	}
	var f *failure
	var e *Error
	if errors.As(err, &e) {
		return answer{}, e
	}
	if errors.As(err, &f) {
		return answer{}, f
	}
	if ctx.Err() == context.Canceled {
		return answer{}, context.Canceled
	}
	return answer{}, fail(describe(err, ctx, timeout))
}

// describe says in a few words why a connection failed.
func describe(err error, ctx context.Context, timeout time.Duration) string {
	var ne net.Error
	switch {
	case ctx.Err() == context.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("timed out after %d ms", timeout.Milliseconds())
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "connection closed while sending"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "cannot resolve host: " + dns.Err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Op + ": " + op.Err.Error()
	}
	return err.Error()
}

// parseDecimal reads an ID as the server writes it: digits only, up to 2^64 - 1.
func parseDecimal(text string) (uint64, bool) {
	if text == "" || len(text) > 20 {
		return 0, false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(text, 10, 64)
	return n, err == nil
}

// parseDecimalBytes is parseDecimal of bytes, without a copy.
func parseDecimalBytes(text []byte) (uint64, bool) {
	if len(text) == 0 || len(text) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// validText: a UUIDv7 or ULID is short printable ASCII.
func validText(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
