package idforge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Redis protocol (RESP2) of one redis:// server: a pool of kept-alive
// connections, one command and its reply per request.

var respCommands = map[Kind]string{
	KindSnowflake: "ID.SNOWFLAKE",
	KindSegment:   "ID.NEXT",
	KindUUID7:     "ID.UUID7",
	KindULID:      "ID.ULID",
}

const maxRespLine = 64 << 10

type respPool struct {
	addr string
	url  string

	mu     sync.Mutex
	idle   []*respConn
	closed bool
}

type respConn struct {
	nc   net.Conn
	in   *countingReader
	r    *bufio.Reader
	used bool // has answered before: kept alive
}

// countingReader counts the bytes of the current reply, so that a reused connection
// that fails before any of them can be told from one that failed mid-answer.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (p *respPool) take() *respConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return c
	}
	return nil
}

func (p *respPool) put(c *respConn) {
	c.used = true
	p.mu.Lock()
	if !p.closed && c.r.Buffered() == 0 && len(p.idle) < idleConns {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.nc.Close()
}

func (p *respPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

func (p *respPool) dial(ctx context.Context) (*respConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	in := &countingReader{r: nc}
	return &respConn{nc: nc, in: in, r: bufio.NewReaderSize(in, 16<<10)}, nil
}

// watch makes the connection's I/O return at once when ctx ends (the caller gave up
// or the client was closed); the deadline itself is the connection's deadline. The
// returned function stops the watch and waits for it.
func watch(ctx context.Context, nc net.Conn) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			nc.SetDeadline(time.Unix(1, 0))
		case <-stop:
		}
	}()
	return func() { close(stop); <-done }
}

func (p *respPool) fetch(ctx context.Context, kind Kind, tag string, count int) (answer, error) {
	deadline, _ := ctx.Deadline()
	cmd := encodeCommand(kind, tag, count)
	conn := p.take()
	for {
		fresh := conn == nil
		if fresh {
			var err error
			if conn, err = p.dial(ctx); err != nil {
				return answer{}, err
			}
		}
		conn.nc.SetDeadline(deadline)
		conn.in.n = 0
		stop := watch(ctx, conn.nc)
		a, err := conn.roundTrip(cmd, kind, count, p.url)
		stop()
		var wrong *Error
		switch {
		case err == nil:
			p.put(conn)
			return a, nil
		case errors.As(err, &wrong):
			p.put(conn) // a complete answer: the connection is fine
			return answer{}, err
		}
		conn.nc.Close()
		var f *failure
		if errors.As(err, &f) {
			return answer{}, err
		}
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout()
		if !fresh && conn.used && conn.in.n == 0 && !timedOut && ctx.Err() == nil {
			// A kept-alive connection the server has closed (its idle timeout, a
			// restart): one fresh connection within the same deadline.
			conn = nil
			continue
		}
		return answer{}, err
	}
}

func encodeCommand(kind Kind, tag string, count int) []byte {
	args := []string{respCommands[kind]}
	if kind == KindSegment {
		args = append(args, tag)
	}
	args = append(args, strconv.Itoa(count))
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

func (c *respConn) roundTrip(cmd []byte, kind Kind, count int, url string) (answer, error) {
	if _, err := c.nc.Write(cmd); err != nil {
		return answer{}, err
	}
	line, err := c.readLine()
	if err != nil {
		return answer{}, err
	}
	if len(line) == 0 {
		return answer{}, fail("an empty RESP line")
	}
	switch line[0] {
	case '-':
		// -ERR not_found: unknown tag 'x' ... (src/server/resp/resp_reply.cc)
		text := string(line[1:])
		word, rest, _ := strings.Cut(text, " ")
		code, message, colon := strings.Cut(rest, ":")
		code = strings.TrimSpace(code)
		if word == "ERR" && colon && wrongRequestCodes[code] {
			return answer{}, &Error{Code: code, Message: strings.TrimSpace(message), Server: url}
		}
		return answer{}, fail(clip(text, 200))
	case '*':
	case '+', ':', '$', '_', '#', ',', '(', '%', '~', '>', '=', '!', '|':
		return answer{}, fail(fmt.Sprintf("unexpected answer %q", clip(string(line), 80)))
	default:
		return answer{}, fail(fmt.Sprintf("not a RESP answer: %q", clip(string(line), 80)))
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil {
		return answer{}, fail(fmt.Sprintf("bad RESP length %q", clip(string(line), 40)))
	}
	if n != count {
		return answer{}, fail(fmt.Sprintf("answered %d IDs, asked for %d", n, count))
	}
	var a answer
	if kind.numeric() {
		a.nums = make([]uint64, n)
	} else {
		a.strs = make([]string, n)
	}
	for i := 0; i < n; i++ {
		line, err := c.readLine()
		if err != nil {
			return answer{}, err
		}
		if kind.numeric() {
			v, ok := uint64(0), false
			if len(line) > 1 && line[0] == ':' {
				v, ok = parseDecimalBytes(line[1:])
			}
			if !ok {
				return answer{}, fail(fmt.Sprintf("a malformed answer: %q is not a 64-bit unsigned integer",
					clip(string(line), 40)))
			}
			a.nums[i] = v
			continue
		}
		size := -1
		if len(line) > 1 && line[0] == '$' {
			if s, err := strconv.Atoi(string(line[1:])); err == nil && s >= 0 && s <= 64 {
				size = s
			}
		}
		if size < 0 {
			return answer{}, fail(fmt.Sprintf("a malformed answer: %q is not a %s", clip(string(line), 40), kind))
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(c.r, data); err != nil {
			return answer{}, err
		}
		text := string(data[:size])
		if string(data[size:]) != "\r\n" || !validText(text) {
			return answer{}, fail(fmt.Sprintf("a malformed answer: %q is not a %s", clip(text, 40), kind))
		}
		a.strs[i] = text
	}
	return a, nil
}

// readLine reads one line up to CRLF (without it). The line is valid until the next
// read.
func (c *respConn) readLine() ([]byte, error) {
	if part, err := c.r.ReadSlice('\n'); err == nil {
		if len(part) < 2 || part[len(part)-2] != '\r' {
			return nil, fail(fmt.Sprintf("not a RESP answer: %q", clip(string(part), 80)))
		}
		return part[:len(part)-2], nil
	} else if err != bufio.ErrBufferFull {
		if err == io.EOF && len(part) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	} else {
		return c.readLongLine(append([]byte(nil), part...))
	}
}

func (c *respConn) readLongLine(line []byte) ([]byte, error) {
	for {
		part, err := c.r.ReadSlice('\n')
		line = append(line, part...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) > maxRespLine {
			return nil, fail("an answer line is too long")
		}
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fail(fmt.Sprintf("not a RESP answer: %q", clip(string(line), 80)))
	}
	return line[:len(line)-2], nil
}
