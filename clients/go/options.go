package idforge

import (
	"fmt"
	"time"
)

// Option sets one option of New.
type Option func(*config)

type config struct {
	timeout       time.Duration
	batch         int
	refillBelow   int // -1: batch / 2
	maxAge        time.Duration
	segmentMaxAge time.Duration
	backoff       time.Duration
	maxBackoff    time.Duration
	buffer        bool
	errs          []string
}

func defaultConfig() config {
	return config{
		timeout:     1000 * time.Millisecond,
		batch:       256,
		refillBelow: -1,
		maxAge:      2000 * time.Millisecond,
		backoff:     500 * time.Millisecond,
		maxBackoff:  30000 * time.Millisecond,
		buffer:      true,
	}
}

// WithTimeout sets the time one request may take on one server, from connect to the
// last byte of the answer (timeout_ms; default 1 s, at least 1 ms).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithBatch sets how many IDs one request fetches into a buffer (batch; default 256).
// It must not exceed the server's limits.max_count, or every call fails with
// out_of_range.
func WithBatch(n int) Option {
	return func(c *config) { c.batch = n }
}

// WithRefillBelow starts a background refill when a buffer holds fewer than n IDs
// (refill_below; 0..batch, default batch / 2; 0: only when it is empty).
func WithRefillBelow(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.errs = append(c.errs, fmt.Sprintf("refill_below must be from 0 to batch, got %d", n))
			return
		}
		c.refillBelow = n
	}
}

// WithMaxAge drops Snowflake, UUIDv7 and ULID IDs fetched longer ago than d
// (max_age_ms; default 2 s; 0: no limit).
func WithMaxAge(d time.Duration) Option {
	return func(c *config) { c.maxAge = d }
}

// WithSegmentMaxAge drops segment IDs fetched longer ago than d (segment_max_age_ms;
// default 0: no limit).
func WithSegmentMaxAge(d time.Duration) Option {
	return func(c *config) { c.segmentMaxAge = d }
}

// WithBackoff sets how long a failed server is skipped: first for initial, doubling
// with each failure in a row up to max (backoff_ms and max_backoff_ms; default
// 500 ms and 30 s).
func WithBackoff(initial, max time.Duration) Option {
	return func(c *config) { c.backoff, c.maxBackoff = initial, max }
}

// WithBuffer(false) turns the buffers off: every call is one request (buffer;
// default true). A batch of 1 does the same.
func WithBuffer(on bool) Option {
	return func(c *config) { c.buffer = on }
}

func (c *config) check() error {
	if len(c.errs) > 0 {
		return errInvalid(c.errs[0])
	}
	switch {
	case c.timeout < time.Millisecond:
		return errInvalid(fmt.Sprintf("timeout must be at least 1 ms, got %v", c.timeout))
	case c.batch < 1:
		return errInvalid(fmt.Sprintf("batch must be >= 1, got %d", c.batch))
	case c.refillBelow > c.batch:
		return errInvalid(fmt.Sprintf("refill_below must be from 0 to batch (%d), got %d",
			c.batch, c.refillBelow))
	case c.maxAge < 0:
		return errInvalid(fmt.Sprintf("max_age must be >= 0, got %v", c.maxAge))
	case c.segmentMaxAge < 0:
		return errInvalid(fmt.Sprintf("segment_max_age must be >= 0, got %v", c.segmentMaxAge))
	case c.backoff < 0:
		return errInvalid(fmt.Sprintf("backoff must be >= 0, got %v", c.backoff))
	case c.maxBackoff < c.backoff:
		return errInvalid(fmt.Sprintf("max_backoff (%v) must be >= backoff (%v)",
			c.maxBackoff, c.backoff))
	}
	if c.refillBelow < 0 {
		c.refillBelow = c.batch / 2
	}
	return nil
}

// buffered: one request per call otherwise.
func (c *config) buffered() bool { return c.buffer && c.batch > 1 }
