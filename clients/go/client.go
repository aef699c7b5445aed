package idforge

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Client issues IDs from a list of idforge servers, through the loss of any of them
// (docs/clients.md). It is safe for concurrent use: make one per process and share
// it between goroutines; Close it to stop its goroutines and close its connections.
type Client struct {
	cfg     config
	servers []*server
	http    *httpTransport

	mu      sync.Mutex // the servers' failover state and current
	current int        // the server that answered last

	sf, uuid7, ulid *buffer
	segMu           sync.RWMutex
	segments        map[string]*buffer

	// Goroutines: one background refiller (started by the first refill) and one per
	// refill a caller starts on an empty buffer. ctx ends them all at Close.
	ctx      context.Context
	cancel   context.CancelFunc
	closed   atomic.Bool
	goMu     sync.Mutex
	stopping bool
	wg       sync.WaitGroup
	queue    refillQueue
}

// New makes a client of servers, each "http://HOST:PORT" (the JSON API; port 80 when
// left out) or "redis://HOST:PORT" (the Redis protocol; port 6380 when left out). It
// connects to none yet. A bad URL or option is an *Error with Code
// "invalid_argument".
func New(servers []string, options ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range options {
		o(&cfg)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, errInvalid("a Client needs at least one server URL")
	}
	c := &Client{cfg: cfg, segments: map[string]*buffer{}}
	for _, raw := range servers {
		if c.http == nil {
			c.http = newHTTPTransport()
		}
		s, err := newServer(raw, c.http)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, s)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.sf = newBuffer(KindSnowflake, "", cfg.maxAge)
	c.uuid7 = newBuffer(KindUUID7, "", cfg.maxAge)
	c.ulid = newBuffer(KindULID, "", cfg.maxAge)
	c.queue.wake = make(chan struct{}, 1)
	return c, nil
}

// Snowflake gives the next Snowflake ID.
func (c *Client) Snowflake(ctx context.Context) (uint64, error) {
	v, err := c.next(ctx, KindSnowflake, "")
	return v.n, err
}

// Segment gives the next segment ID of tag.
func (c *Client) Segment(ctx context.Context, tag string) (uint64, error) {
	if tag == "" {
		return 0, errInvalid("a segment tag is a non-empty string")
	}
	v, err := c.next(ctx, KindSegment, tag)
	return v.n, err
}

// UUID7 gives the next UUIDv7, as text.
func (c *Client) UUID7(ctx context.Context) (string, error) {
	v, err := c.next(ctx, KindUUID7, "")
	return v.s, err
}

// ULID gives the next ULID, as text.
func (c *Client) ULID(ctx context.Context) (string, error) {
	v, err := c.next(ctx, KindULID, "")
	return v.s, err
}

// Snowflakes gives n Snowflake IDs: from the buffer, or without one in requests of up
// to batch IDs. On an error the IDs already taken are dropped (a gap).
func (c *Client) Snowflakes(ctx context.Context, n int) ([]uint64, error) {
	a, err := c.many(ctx, KindSnowflake, "", n)
	return a.nums, err
}

// Segments gives n segment IDs of tag, as Snowflakes does.
func (c *Client) Segments(ctx context.Context, tag string, n int) ([]uint64, error) {
	if tag == "" {
		return nil, errInvalid("a segment tag is a non-empty string")
	}
	a, err := c.many(ctx, KindSegment, tag, n)
	return a.nums, err
}

// UUID7s gives n UUIDv7s, as Snowflakes does.
func (c *Client) UUID7s(ctx context.Context, n int) ([]string, error) {
	a, err := c.many(ctx, KindUUID7, "", n)
	return a.strs, err
}

// ULIDs gives n ULIDs, as Snowflakes does.
func (c *Client) ULIDs(ctx context.Context, n int) ([]string, error) {
	a, err := c.many(ctx, KindULID, "", n)
	return a.strs, err
}

// Servers gives the servers' URLs, as the client writes them (scheme://host:port).
func (c *Client) Servers() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.url
	}
	return out
}

// ServerState is one server's failover state.
type ServerState struct {
	URL         string
	Failures    int           // failures in a row
	BackoffLeft time.Duration // until it is tried again; 0 when it is not backing off
	LastError   string        // of its last failure; "" once it answered
	Current     bool          // it answered last: requests go to it first
}

// BufferState is one buffer's state.
type BufferState struct {
	Kind      Kind
	Tag       string // segment buffers only
	Size      int    // IDs it holds
	Refilling bool   // a refill is under way
	Refills   uint64 // refills that brought IDs
	Dropped   uint64 // IDs dropped by the age limit
	LastError string // of the last refill, "" when it brought IDs
}

// Stats is a snapshot of the servers (in list order) and the buffers.
type Stats struct {
	Servers []ServerState
	Buffers []BufferState
}

// Stats shows each server's failures, back-off left and last error, and each
// buffer's size, refills, dropped IDs and last error.
func (c *Client) Stats() Stats {
	var st Stats
	now := time.Now()
	c.mu.Lock()
	for i, s := range c.servers {
		left := s.until.Sub(now)
		if left < 0 {
			left = 0
		}
		st.Servers = append(st.Servers, ServerState{URL: s.url, Failures: s.failures,
			BackoffLeft: left, LastError: s.lastError, Current: i == c.current})
	}
	c.mu.Unlock()
	for _, b := range c.allBuffers() {
		st.Buffers = append(st.Buffers, b.snapshot())
	}
	return st
}

// Buffered gives how many IDs the buffer of kind (and tag, for segment IDs) holds.
func (c *Client) Buffered(kind Kind, tag string) int {
	b := c.lookup(kind, tag, false)
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size
}

// Close stops the client's goroutines (a request under way ends at once), drops the
// buffered IDs (never issued again by the servers: a gap) and closes the connections.
// Calls after it, and calls waiting at the time, fail with Code "closed". It always returns
// nil.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.cancel()
	for _, b := range c.allBuffers() {
		b.mu.Lock()
		b.chunks, b.size = nil, 0
		b.mu.Unlock()
	}
	c.goMu.Lock()
	c.stopping = true
	c.goMu.Unlock()
	c.wg.Wait()
	if c.http != nil {
		c.http.close()
	}
	for _, s := range c.servers {
		if s.resp != nil {
			s.resp.close()
		}
	}
	return nil
}

// spawn runs f in a goroutine Close waits for; false once the client is closing.
func (c *Client) spawn(f func()) bool {
	c.goMu.Lock()
	defer c.goMu.Unlock()
	if c.stopping {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

func (c *Client) lookup(kind Kind, tag string, create bool) *buffer {
	switch kind {
	case KindSnowflake:
		return c.sf
	case KindUUID7:
		return c.uuid7
	case KindULID:
		return c.ulid
	case KindSegment:
	default:
		return nil
	}
	c.segMu.RLock()
	b := c.segments[tag]
	c.segMu.RUnlock()
	if b != nil || !create {
		return b
	}
	c.segMu.Lock()
	defer c.segMu.Unlock()
	if b = c.segments[tag]; b == nil {
		b = newBuffer(KindSegment, tag, c.cfg.segmentMaxAge)
		c.segments[tag] = b
	}
	return b
}

// allBuffers: Snowflake, UUIDv7, ULID, then the segment buffers by tag.
func (c *Client) allBuffers() []*buffer {
	c.segMu.RLock()
	segments := make([]*buffer, 0, len(c.segments))
	for _, b := range c.segments {
		segments = append(segments, b)
	}
	c.segMu.RUnlock()
	sort.Slice(segments, func(i, j int) bool { return segments[i].tag < segments[j].tag })
	return append([]*buffer{c.sf, c.uuid7, c.ulid}, segments...)
}

func (c *Client) next(ctx context.Context, kind Kind, tag string) (id, error) {
	if c.closed.Load() {
		return id{}, errClosed()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !c.cfg.buffered() {
		a, _, err := c.request(ctx, kind, tag, 1, true, time.Time{})
		if err != nil {
			return id{}, err
		}
		return a.first(), nil
	}
	b := c.lookup(kind, tag, true)
	b.mu.Lock()
	v, ok := c.takeLocked(b)
	b.mu.Unlock()
	if ok {
		return v, nil
	}
	return c.wait(ctx, b)
}

func (c *Client) many(ctx context.Context, kind Kind, tag string, n int) (answer, error) {
	if n < 0 {
		return answer{}, errInvalid(fmt.Sprintf("n must be >= 0, got %d", n))
	}
	if c.closed.Load() {
		return answer{}, errClosed()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var out answer
	if kind.numeric() {
		out.nums = make([]uint64, 0, n)
	} else {
		out.strs = make([]string, 0, n)
	}
	for out.len() < n {
		if c.cfg.buffered() {
			v, err := c.next(ctx, kind, tag)
			if err != nil {
				return answer{}, err
			}
			out.add(v)
			continue
		}
		a, _, err := c.request(ctx, kind, tag, min(c.cfg.batch, n-out.len()), true, time.Time{})
		if err != nil {
			return answer{}, err
		}
		out.nums = append(out.nums, a.nums...)
		out.strs = append(out.strs, a.strs...)
	}
	return out, nil
}

// takeLocked takes the next ID of b (whose lock is held), dropping IDs past their age
// first, and queues a background refill when fewer than refill_below are left.
func (c *Client) takeLocked(b *buffer) (id, bool) {
	if b.maxAge > 0 && len(b.chunks) > 0 {
		b.expire(time.Now())
	}
	if b.size == 0 {
		return id{}, false
	}
	v := b.take()
	if b.size < c.cfg.refillBelow && b.state == idle {
		c.queueRefill(b)
	}
	return v, true
}

// wait serves a call that found its buffer empty: it waits for the refill under way,
// or starts one, for at most timeout x the number of servers. A refill hands its IDs
// to the callers waiting for it first, in the order they came.
func (c *Client) wait(ctx context.Context, b *buffer) (id, error) {
	limit := c.cfg.timeout * time.Duration(len(c.servers))
	deadline := time.Now().Add(limit)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if c.closed.Load() {
			b.mu.Unlock()
			return id{}, errClosed()
		}
		if v, ok := c.takeLocked(b); ok {
			b.mu.Unlock()
			return v, nil
		}
		if b.state != running {
			// Idle, or queued for the refiller: a refill of its own now, in the time
			// left (the refiller skips a buffer no longer queued).
			if time.Until(deadline) <= time.Millisecond {
				b.mu.Unlock()
				return id{}, c.timedOut(b, limit, "other callers took the IDs of the refills")
			}
			if !c.startRefill(b, true, deadline) {
				b.mu.Unlock()
				return id{}, errClosed()
			}
		}
		w := make(chan id, 1)
		b.waiters = append(b.waiters, w)
		finished := b.finished
		b.mu.Unlock()

		select {
		case v := <-w:
			return v, nil
		case <-finished:
			// Handed IDs arrive before finished closes.
			select {
			case v := <-w:
				return v, nil
			default:
			}
			b.mu.Lock()
			err, empty := b.err, b.size == 0
			b.mu.Unlock()
			if empty && err != nil {
				return id{}, copyError(err)
			}
		case <-timer.C:
			if v, ok := b.leave(w); ok {
				return v, nil
			}
			return id{}, c.timedOut(b, limit, "the refill in progress has not finished")
		case <-ctx.Done():
			if v, ok := b.leave(w); ok {
				return v, nil
			}
			return id{}, errCanceled(ctx.Err())
		case <-c.ctx.Done():
			return id{}, errClosed()
		}
	}
}

func (c *Client) timedOut(b *buffer, limit time.Duration, why string) error {
	servers := c.serverErrors(nil)
	return newUnavailable(fmt.Sprintf("no %s within %d ms (timeout x %d servers): %s; servers: %s",
		what(b.kind, b.tag), limit.Milliseconds(), len(c.servers), why, joinServerErrors(servers)), servers)
}

// startRefill marks b running (its lock held) and runs one refill in a goroutine of
// its own: must-try, for a caller waiting until deadline.
func (c *Client) startRefill(b *buffer, mustTry bool, deadline time.Time) bool {
	b.begin()
	ok := c.spawn(func() { c.refill(b, mustTry, deadline) })
	if !ok {
		b.end()
	}
	return ok
}

// refill is one request of batch IDs into b, whose state is running. mustTry=false
// (the background): when every server is backing off nothing is tried, and a caller
// that finds the buffer empty will try.
func (c *Client) refill(b *buffer, mustTry bool, deadline time.Time) {
	a, sent, err := c.request(c.ctx, b.kind, b.tag, c.cfg.batch, mustTry, deadline)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		b.refills++
		b.err, b.retryAt = nil, time.Time{}
		if !c.closed.Load() {
			b.fill(a, sent)
		}
	case err == errNothingTried || c.closed.Load():
		// A caller that finds the buffer empty tries, rather than failing.
		b.err, b.retryAt = nil, c.retryTime(nil)
	default:
		b.err, b.retryAt = err, c.retryTime(err)
	}
	b.end()
}

// retryTime is when a background refill may start again after one that brought no IDs.
func (c *Client) retryTime(err error) time.Time {
	now := time.Now()
	if e, ok := err.(*Error); ok && e.Code != CodeUnavailable {
		return now.Add(c.cfg.backoff) // a wrong request: not repeated on every call
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.servers[0].until
	for _, s := range c.servers[1:] {
		if s.until.Before(first) {
			first = s.until
		}
	}
	if first.Before(now) {
		return now
	}
	return first
}

// queueRefill queues a background refill of b (its lock held, idle, below
// refill_below) unless a failed one asked to wait.
func (c *Client) queueRefill(b *buffer) {
	if !b.retryAt.IsZero() && time.Now().Before(b.retryAt) {
		return
	}
	b.state = queued
	c.queue.push(b)
	c.queue.once.Do(func() { c.spawn(c.refiller) })
}

// refiller is the client's one background goroutine: it runs the queued refills, one
// at a time.
func (c *Client) refiller() {
	for {
		b := c.queue.pop()
		if b == nil {
			select {
			case <-c.queue.wake:
				continue
			case <-c.ctx.Done():
				return
			}
		}
		b.mu.Lock()
		if b.state != queued || c.closed.Load() {
			b.mu.Unlock()
			continue // a caller that found the buffer empty runs one already
		}
		b.begin()
		b.mu.Unlock()
		c.refill(b, false, time.Time{})
	}
}

type refillQueue struct {
	once  sync.Once
	mu    sync.Mutex
	items []*buffer
	wake  chan struct{}
}

func (q *refillQueue) push(b *buffer) {
	q.mu.Lock()
	q.items = append(q.items, b)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *refillQueue) pop() *buffer {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return nil
	}
	b := q.items[0]
	q.items[0] = nil
	q.items = q.items[1:]
	return b
}
