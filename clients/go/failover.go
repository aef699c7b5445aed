package idforge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// errNothingTried: a background refill found every server backing off and tried none.
var errNothingTried = errors.New("every server is backing off")

// request fetches count IDs from the first server that answers: from the one that
// answered last, in list order, skipping those backing off, each at most once and
// each within the timeout (and what is left before deadline, when one is given).
// mustTry (a caller waits for the IDs): when every server left is backing off, those
// are tried too, the one whose period ends first first. It returns the IDs and when
// the request that brought them was sent.
func (c *Client) request(ctx context.Context, kind Kind, tag string, count int, mustTry bool,
	deadline time.Time) (answer, time.Time, error) {
	n := len(c.servers)
	c.mu.Lock()
	start := c.current
	c.mu.Unlock()
	tried := make([]string, n) // why each server failed this request; "" when not tried
	triedOne := false
	// ask sends the request to server i: done when it answered or said the request itself
	// is wrong (err), else its failure is kept for the error that names every server.
	var got answer
	var sentAt time.Time
	ask := func(i int) (done bool, err error) {
		a, sent, why, err := c.attempt(ctx, i, kind, tag, count, deadline)
		if err != nil {
			return true, err
		}
		if why == "" {
			got, sentAt = a, sent
			return true, nil
		}
		tried[i], triedOne = why, true
		return false, nil
	}
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if c.backingOff(i) {
			continue
		}
		if !deadline.IsZero() && time.Until(deadline) <= time.Millisecond {
			break
		}
		if done, err := ask(i); done {
			return got, sentAt, err
		}
	}
	if !triedOne && !mustTry {
		return answer{}, time.Time{}, errNothingTried
	}
	if mustTry {
		// Every server left is backing off: a waiting caller tries them too, the one
		// whose period ends first first, so that a server just back answers rather
		// than the call failing untried there.
		c.mu.Lock()
		var rest []int
		for i := range c.servers {
			if tried[i] == "" {
				rest = append(rest, i)
			}
		}
		sort.SliceStable(rest, func(x, y int) bool {
			return c.servers[rest[x]].until.Before(c.servers[rest[y]].until)
		})
		c.mu.Unlock()
		for _, i := range rest {
			if triedOne && !deadline.IsZero() && time.Until(deadline) <= time.Millisecond {
				break
			}
			if done, err := ask(i); done {
				return got, sentAt, err
			}
		}
	}
	servers := c.serverErrors(tried)
	return answer{}, time.Time{}, newUnavailable(
		"no idforge server could give "+what(kind, tag)+": "+joinServerErrors(servers), servers)
}

func (c *Client) backingOff(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Before(c.servers[i].until)
}

// attempt is one request to server i. It gives the IDs, or why the server failed, or
// an error that ends the request: a wrong request (the server's answer) or ctx ended.
func (c *Client) attempt(ctx context.Context, i int, kind Kind, tag string, count int,
	deadline time.Time) (answer, time.Time, string, error) {
	s := c.servers[i]
	sent := time.Now()
	timeout := c.cfg.timeout
	if !deadline.IsZero() {
		if left := deadline.Sub(sent).Round(time.Millisecond); left < timeout {
			timeout = left
		}
		if timeout < time.Millisecond {
			timeout = time.Millisecond
		}
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	a, err := s.fetch(actx, kind, tag, count, timeout)
	cancel()
	if err == nil {
		c.answered(i)
		return a, sent, "", nil
	}
	if cause := ended(ctx); cause != nil {
		// The caller gave up, or the client was closed: not the server's failure.
		return answer{}, time.Time{}, "", errCanceled(cause)
	}
	var f *failure
	if errors.As(err, &f) {
		c.failed(s, f.reason, sent)
		return answer{}, time.Time{}, f.reason, nil
	}
	var e *Error
	if errors.As(err, &e) {
		c.answered(i) // the server is well; the request is wrong
		return answer{}, time.Time{}, "", e
	}
	c.failed(s, err.Error(), sent)
	return answer{}, time.Time{}, err.Error(), nil
}

// ended gives why ctx has ended, also when its deadline has passed a moment before
// its timer says so (a connection's deadline may fire first); nil while it runs.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *Client) answered(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.servers[i]
	s.failures, s.until, s.lastError = 0, time.Time{}, ""
	c.current = i
}

func (c *Client) failed(s *server, reason string, started time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	s.lastError = reason
	if !s.lastFailure.IsZero() && !s.lastFailure.Before(started) {
		return // a failure another goroutine saw during this same attempt: counted
	}
	s.failures++
	backoff := c.cfg.backoff
	for k := 1; k < s.failures && backoff < c.cfg.maxBackoff; k++ {
		backoff *= 2
	}
	if backoff > c.cfg.maxBackoff {
		backoff = c.cfg.maxBackoff
	}
	s.until = now.Add(backoff)
	s.lastFailure = now
}

// serverErrors says for every server, in list order, why it gave no IDs: its
// failure in this request (tried), its back-off, its last failure or "not tried".
func (c *Client) serverErrors(tried []string) []ServerError {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ServerError, len(c.servers))
	for i, s := range c.servers {
		why := "not tried"
		switch {
		case tried != nil && tried[i] != "":
			why = "failed: " + tried[i]
		case s.until.After(now):
			plural := "s"
			if s.failures == 1 {
				plural = ""
			}
			why = fmt.Sprintf("skipped: backing off %d ms more after %d failure%s in a row (last: %s)",
				s.until.Sub(now).Round(time.Millisecond).Milliseconds(), s.failures, plural, s.lastError)
		case s.lastError != "":
			why = "last failed: " + s.lastError
		}
		out[i] = ServerError{URL: s.url, Why: strings.TrimSpace(why)}
	}
	return out
}
