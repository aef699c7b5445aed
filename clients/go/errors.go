package idforge

import (
	"strings"
)

// Error codes the client gives itself; the others (not_found, invalid_argument,
// out_of_range, already_exists, ...) are the server's.
const (
	CodeUnavailable     = "unavailable"      // no server could answer: see UnavailableError
	CodeClosed          = "closed"           // a call on a closed Client
	CodeInvalidArgument = "invalid_argument" // a bad option, URL, tag, ID or layout (also the server's)
	CodeOutOfRange      = "out_of_range"     // an ID wider than its layout (also the server's)
	CodeCanceled        = "canceled"         // the caller's context ended first
)

// Error is every error of this package. A server's answer that the request itself is
// wrong (HTTP 400, 404, 409; RESP -ERR invalid_argument, out_of_range, not_found)
// carries the server's Code and Message, its URL in Server and, over HTTP, the
// Status. Such a request is never retried on another server: each would answer the
// same.
//
// Use errors.As(err, &e) with e of type *Error to read the code of any error of a
// call; an *UnavailableError is found that way too (Code "unavailable").
// errors.Is(err, ErrClosed) and errors.Is(err, ErrUnavailable) test the code alone,
// and a cancelled call's error is also errors.Is(err, context.Canceled) (or
// context.DeadlineExceeded).
type Error struct {
	Code    string // the server's error code, or one of the Code constants
	Message string // the server's text, or the client's
	Server  string // the URL of the server that answered, "" when none did
	Status  int    // the HTTP status; 0 for the Redis protocol and the client's own errors

	cause error
}

// Sentinels for errors.Is: they match any *Error with the same Code.
var (
	ErrClosed      = &Error{Code: CodeClosed, Message: "the client is closed"}
	ErrUnavailable = &Error{Code: CodeUnavailable, Message: "no idforge server could answer"}
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("idforge: ")
	b.WriteString(e.Code)
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Server != "" {
		b.WriteString(" (from ")
		b.WriteString(e.Server)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap gives the context's error of a cancelled call, nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is ErrClosed or ErrUnavailable with this error's Code.
func (e *Error) Is(target error) bool {
	if target == ErrClosed || target == ErrUnavailable {
		return e.Code == target.(*Error).Code
	}
	return false
}

// ServerError is one server of an UnavailableError and why it gave no IDs.
type ServerError struct {
	URL string
	// "failed: connection refused", "failed: timed out after 1000 ms", "skipped:
	// backing off 800 ms more after 2 failures in a row (last: ...)", "last failed:
	// ...", "not tried".
	Why string
}

// UnavailableError says that no server could answer: each failed, timed out or was
// backing off. Servers lists every server of the client, in the client's order, and
// why; the message says the same. errors.As to an *Error finds it as Code
// "unavailable".
type UnavailableError struct {
	Message string
	Servers []ServerError

	err *Error
}

func newUnavailable(message string, servers []ServerError) *UnavailableError {
	return &UnavailableError{Message: message, Servers: servers,
		err: &Error{Code: CodeUnavailable, Message: message}}
}

func (e *UnavailableError) Error() string { return "idforge: " + CodeUnavailable + ": " + e.Message }

// Unwrap gives the same error as an *Error with Code "unavailable".
func (e *UnavailableError) Unwrap() error { return e.err }

func joinServerErrors(list []ServerError) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = s.URL + " " + s.Why
	}
	return strings.Join(parts, "; ")
}

func errClosed() error {
	return &Error{Code: CodeClosed, Message: "the client is closed"}
}

func errInvalid(message string) error {
	return &Error{Code: CodeInvalidArgument, Message: message}
}

func errCanceled(cause error) error {
	return &Error{Code: CodeCanceled, Message: cause.Error(), cause: cause}
}

// failure is a server that did not answer usefully: the request moves on to the
// next server. It never leaves the package.
type failure struct{ reason string }

func (f *failure) Error() string { return f.reason }

func fail(reason string) error { return &failure{reason} }

// copyError gives each caller woken by one failed refill its own error value.
func copyError(err error) error {
	switch e := err.(type) {
	case *UnavailableError:
		return newUnavailable(e.Message, append([]ServerError(nil), e.Servers...))
	case *Error:
		c := *e
		return &c
	}
	return err
}
