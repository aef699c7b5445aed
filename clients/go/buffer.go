package idforge

import (
	"sync"
	"time"
)

// id is one ID of a buffer: n for Snowflake and segment IDs, s for UUIDv7 and ULID.
type id struct {
	n uint64
	s string
}

func (a answer) first() id {
	if len(a.nums) > 0 {
		return id{n: a.nums[0]}
	}
	return id{s: a.strs[0]}
}

func (a *answer) add(v id) {
	if a.nums != nil {
		a.nums = append(a.nums, v.n)
	} else {
		a.strs = append(a.strs, v.s)
	}
}

// chunk is the IDs of one request still in a buffer, and when that request was sent.
type chunk struct {
	sent time.Time
	answer
}

const (
	idle    = iota
	queued  // for the background refiller
	running // a refill is under way
)

// buffer is the IDs of one kind (and tag), in the order the servers gave them.
type buffer struct {
	kind   Kind
	tag    string
	maxAge time.Duration // 0: no age limit

	mu       sync.Mutex
	chunks   []chunk
	size     int
	state    int
	finished chan struct{} // closed when the refill under way ends
	waiters  []chan id     // callers waiting on the empty buffer, in order
	err      error         // of the last refill; nil when it brought IDs
	retryAt  time.Time     // no background refill before it
	refills  uint64
	dropped  uint64
}

func newBuffer(kind Kind, tag string, maxAge time.Duration) *buffer {
	return &buffer{kind: kind, tag: tag, maxAge: maxAge}
}

// expire drops the chunks fetched longer than maxAge before now.
func (b *buffer) expire(now time.Time) {
	for len(b.chunks) > 0 && now.Sub(b.chunks[0].sent) > b.maxAge {
		n := b.chunks[0].len()
		b.size -= n
		b.dropped += uint64(n)
		b.chunks[0] = chunk{}
		b.chunks = b.chunks[1:]
	}
}

// take removes the next ID (size > 0).
func (b *buffer) take() id {
	c := &b.chunks[0]
	var v id
	if len(c.nums) > 0 {
		v.n, c.nums = c.nums[0], c.nums[1:]
	} else {
		v.s, c.strs = c.strs[0], c.strs[1:]
	}
	b.size--
	if c.len() == 0 {
		b.chunks[0] = chunk{}
		b.chunks = b.chunks[1:]
	}
	return v
}

// fill hands the IDs of a refill to the callers waiting first, in order, and keeps
// the rest.
func (b *buffer) fill(a answer, sent time.Time) {
	for len(b.waiters) > 0 && a.len() > 0 {
		b.waiters[0] <- a.first()
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		if len(a.nums) > 0 {
			a.nums = a.nums[1:]
		} else {
			a.strs = a.strs[1:]
		}
	}
	if n := a.len(); n > 0 {
		b.chunks = append(b.chunks, chunk{sent: sent, answer: a})
		b.size += n
	}
}

// begin marks a refill under way (lock held).
func (b *buffer) begin() {
	b.state = running
	b.finished = make(chan struct{})
}

// end marks it done and wakes every caller still waiting (lock held): each takes an
// ID from the buffer, meets the refill's error or starts another.
func (b *buffer) end() {
	b.state = idle
	b.waiters = nil
	close(b.finished)
}

// leave takes a caller that gives up off the waiting list; an ID handed to it in the
// meantime is still its own.
func (b *buffer) leave(w chan id) (id, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.waiters {
		if x == w {
			b.waiters = append(b.waiters[:i:i], b.waiters[i+1:]...)
			break
		}
	}
	select {
	case v := <-w:
		return v, true
	default:
		return id{}, false
	}
}

func (b *buffer) snapshot() BufferState {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BufferState{Kind: b.kind, Tag: b.tag, Size: b.size, Refilling: b.state == running,
		Refills: b.refills, Dropped: b.dropped}
	if b.err != nil {
		st.LastError = b.err.Error()
	}
	return st
}
