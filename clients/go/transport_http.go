package idforge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	maxBodyBytes   = 16 << 20
	idleConns      = 8 // kept per server; more concurrent requests open and close their own
	userAgent      = "idforge-go"
	maxHeaderBytes = 64 << 10
)

// httpTransport is the JSON API of every http:// server of one client, through
// net/http with keep-alive. A kept-alive connection the server has closed meanwhile
// is replaced within the same request: net/http drops an idle connection the server
// closes, and retries a GET on a new connection when a reused one fails before any
// byte of the answer (both before the request's deadline, which its context holds).
type httpTransport struct {
	tr     *http.Transport
	client *http.Client
}

func newHTTPTransport() *httpTransport {
	tr := &http.Transport{
		Proxy:                  nil, // never an HTTP_PROXY of the environment
		DialContext:            (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    idleConns,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxHeaderBytes,
		ForceAttemptHTTP2:      false,
	}
	return &httpTransport{tr: tr, client: &http.Client{
		Transport: tr,
		// A redirect is not an idforge answer: it counts as the server failing.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (t *httpTransport) close() { t.tr.CloseIdleConnections() }

var httpRoutes = map[Kind]string{
	KindSnowflake: "/v1/snowflake",
	KindSegment:   "/v1/segment/",
	KindUUID7:     "/v1/uuid7",
	KindULID:      "/v1/ulid",
}

func (t *httpTransport) fetch(ctx context.Context, base string, kind Kind, tag string, count int) (answer, error) {
	path := httpRoutes[kind]
	if kind == KindSegment {
		path += url.PathEscape(tag)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base+path+"?count="+strconv.Itoa(count), nil)
	if err != nil {
		return answer{}, errInvalid(err.Error())
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	resp.Body.Close()
	if err != nil {
		return answer{}, err
	}
	if len(body) > maxBodyBytes {
		return answer{}, fail("the answer is too large")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		code, message := httpError(body, resp.StatusCode)
		if wrongRequestStatus(resp.StatusCode) {
			return answer{}, &Error{Code: code, Message: message, Server: base, Status: resp.StatusCode}
		}
		return answer{}, fail(fmt.Sprintf("HTTP %d %s: %s", resp.StatusCode, code, message))
	}
	a, why := decodeIDs(body, kind)
	if why != "" {
		return answer{}, fail(fmt.Sprintf("a malformed answer (%s): %q", why, clip(string(body), 80)))
	}
	return a, nil
}

// decodeIDs reads {"ids":[...]}: decimal strings for Snowflake and segment IDs (a
// bare JSON integer is taken too), strings for UUIDv7 and ULID.
func decodeIDs(body []byte, kind Kind) (answer, string) {
	if a, ok := decodeFlat(body, kind); ok {
		return a, ""
	}
	var doc struct {
		IDs []json.RawMessage `json:"ids"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return answer{}, err.Error()
	}
	if len(doc.IDs) == 0 {
		return answer{}, "no ids"
	}
	var a answer
	if kind.numeric() {
		a.nums = make([]uint64, len(doc.IDs))
	} else {
		a.strs = make([]string, len(doc.IDs))
	}
	for i, raw := range doc.IDs {
		raw = bytes.TrimSpace(raw)
		var text string
		if len(raw) > 0 && raw[0] == '"' {
			if err := json.Unmarshal(raw, &text); err != nil {
				return answer{}, err.Error()
			}
		} else if kind.numeric() {
			text = string(raw)
		} else {
			return answer{}, "an ID is not text"
		}
		if kind.numeric() {
			n, ok := parseDecimal(text)
			if !ok {
				return answer{}, fmt.Sprintf("ID %q is not a 64-bit unsigned number", clip(text, 40))
			}
			a.nums[i] = n
		} else {
			if !validText(text) {
				return answer{}, fmt.Sprintf("ID %q is not a %s", clip(text, 40), kind)
			}
			a.strs[i] = text
		}
	}
	return a, ""
}

// decodeFlat reads the answer idforge writes, {"kind":"snowflake","ids":["1",...]}:
// one object whose values are strings without escapes, numbers, or (under "ids")
// an array of them, with any whitespace. It checks all of its syntax, and says
// false for anything else (escapes, nesting, a bad ID), which encoding/json then
// reads or refuses with its reason. It is several times faster than encoding/json,
// which matters: a refill decodes a whole batch while callers wait.
func decodeFlat(body []byte, kind Kind) (answer, bool) {
	p := flatParser{b: body}
	var a answer
	found := false
	if !p.byte('{') {
		return answer{}, false
	}
	if p.byte('}') {
		return answer{}, false
	}
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return answer{}, false
		}
		if string(key) == "ids" {
			if found || !p.byte('[') {
				return answer{}, false
			}
			found = true
			if p.byte(']') {
				return answer{}, false // no IDs: encoding/json's path says so
			}
			for {
				if kind.numeric() {
					text, ok := p.str()
					if !ok {
						if text, ok = p.num(); !ok {
							return answer{}, false
						}
					}
					n, ok := parseDecimalBytes(text)
					if !ok {
						return answer{}, false
					}
					a.nums = append(a.nums, n)
				} else {
					text, ok := p.str()
					if !ok || !validText(string(text)) {
						return answer{}, false
					}
					a.strs = append(a.strs, string(text))
				}
				if p.byte(']') {
					break
				}
				if !p.byte(',') {
					return answer{}, false
				}
			}
		} else if _, ok := p.str(); !ok {
			if _, ok := p.num(); !ok {
				return answer{}, false
			}
		}
		if p.byte('}') {
			break
		}
		if !p.byte(',') {
			return answer{}, false
		}
	}
	p.space()
	return a, found && p.i == len(p.b)
}

type flatParser struct {
	b []byte
	i int
}

func (p *flatParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *flatParser) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes (its bytes, unquoted).
func (p *flatParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			p.i++
			return p.b[start : p.i-1], true
		}
		if c < ' ' || c > '~' || c == '\\' {
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// num reads an unsigned integer.
func (p *flatParser) num() ([]byte, bool) {
	p.space()
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.b[start:p.i], p.i > start
}

// httpError reads {"error":{"code":"...","message":"..."}}, or makes do with the text.
func httpError(body []byte, status int) (code, message string) {
	var doc struct {
		Error *struct {
			Code    json.RawMessage `json:"code"`
			Message json.RawMessage `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.Error != nil &&
		len(doc.Error.Code) > 0 && len(doc.Error.Message) > 0 {
		return jsonText(doc.Error.Code), jsonText(doc.Error.Message)
	}
	text := strings.TrimSpace(strings.ToValidUTF8(string(body[:min(len(body), 200)]), "\uFFFD"))
	if text == "" {
		text = "HTTP " + strconv.Itoa(status)
	}
	return "http_" + strconv.Itoa(status), text
}

func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
