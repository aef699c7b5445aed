package idforge

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The years idforge prints as ISO-8601: 0000-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z.
const (
	minISOMs = -62167219200000
	maxISOMs = 253402300799999
)

// FormatTime gives Unix ms as idforge prints a time: ISO-8601 UTC with milliseconds
// ("2017-09-20T13:43:08.849Z") in the years 0000-9999, the number as text outside.
func FormatTime(unixMs int64) string {
	if unixMs < minISOMs || unixMs > maxISOMs {
		return strconv.FormatInt(unixMs, 10)
	}
	t := time.UnixMilli(unixMs).UTC()
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.Year(), int(t.Month()), t.Day(),
		t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e6)
}

const timeExpected = "is neither Unix ms nor an ISO-8601 time like 2017-09-20T13:43:08.849Z, " +
	"2017-09-20 15:43:08+02:00 or 2017-09-20"

func timeError(text, why string) error {
	return errInvalid(fmt.Sprintf("time %q %s", text, why))
}

// ParseTime reads a time as `idforge` reads --epoch: decimal Unix ms ("1505914988849",
// "-1") or ISO-8601: "2017-09-20T13:43:08.849Z", "2017-09-20 13:43:08+02:00",
// "2017-09-20" (midnight UTC); 'T' or a space before the time, seconds and their
// fraction ('.' or ',', cut to ms) optional, the zone Z, ±HH:MM, ±HHMM or ±HH (none:
// UTC), years 0000-9999, no leap second, no surrounding space.
func ParseTime(text string) (int64, error) {
	if text == "" {
		return 0, timeError(text, timeExpected)
	}
	allDigits := true
	for i := 0; i < len(text); i++ {
		allDigits = allDigits && text[i] >= '0' && text[i] <= '9'
	}
	if allDigits || text[0] == '-' {
		digits := text
		negative := text[0] == '-'
		if negative {
			digits = text[1:]
		}
		if digits == "" {
			return 0, timeError(text, timeExpected)
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return 0, timeError(text, timeExpected)
			}
		}
		n, err := strconv.ParseUint(digits, 10, 64)
		limit := uint64(math.MaxInt64)
		if negative {
			limit++
		}
		if err != nil || n > limit {
			return 0, timeError(text, "does not fit a 64-bit count of milliseconds")
		}
		if negative {
			return int64(-n), nil // -2^63 wraps to itself
		}
		return int64(n), nil
	}

	s := scanner{text: text}
	year, ok1 := s.digits(4)
	ok2 := s.take('-')
	month, ok3 := s.digits(2)
	ok4 := s.take('-')
	day, ok5 := s.digits(2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return 0, timeError(text, timeExpected)
	}
	if month < 1 || month > 12 {
		return 0, timeError(text, fmt.Sprintf("has month %d, not 01..12", month))
	}
	if day < 1 || day > daysIn(year, month) {
		return 0, timeError(text, fmt.Sprintf("has day %d, which month %d of %d does not have", day, month, year))
	}
	ms := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).UnixMilli()
	if s.done() {
		return ms, nil
	}
	if !(s.take('T') || s.take('t') || s.take(' ')) {
		return 0, timeError(text, timeExpected)
	}
	hour, ok1 := s.digits(2)
	ok2 = s.take(':')
	minute, ok3 := s.digits(2)
	if !(ok1 && ok2 && ok3) {
		return 0, timeError(text, timeExpected)
	}
	second, fracMs := 0, 0
	if s.take(':') {
		var ok bool
		if second, ok = s.digits(2); !ok {
			return 0, timeError(text, timeExpected)
		}
		if s.take('.') || s.take(',') {
			if fracMs, ok = s.fractionMs(); !ok {
				return 0, timeError(text, timeExpected)
			}
		}
	}
	// Unix time has no leap seconds: 23:59:60 has no number to map to.
	if hour > 23 || minute > 59 || second > 59 {
		return 0, timeError(text, "has a time of day outside 00:00:00..23:59:59")
	}
	ms += int64(hour)*3600000 + int64(minute)*60000 + int64(second)*1000 + int64(fracMs)
	if s.done() || s.take('Z') || s.take('z') {
		if !s.done() {
			return 0, timeError(text, timeExpected)
		}
		return ms, nil
	}
	sign := s.peek()
	if !(s.take('+') || s.take('-')) {
		return 0, timeError(text, timeExpected)
	}
	offHours, ok := s.digits(2)
	if !ok {
		return 0, timeError(text, timeExpected)
	}
	offMinutes := 0
	if !s.done() {
		s.take(':')
		if offMinutes, ok = s.digits(2); !ok || !s.done() {
			return 0, timeError(text, timeExpected)
		}
	}
	if offHours > 23 || offMinutes > 59 {
		return 0, timeError(text, "has a zone offset outside -23:59..+23:59")
	}
	offset := int64(offHours)*3600000 + int64(offMinutes)*60000
	if sign == '+' {
		return ms - offset, nil // local = UTC + offset
	}
	return ms + offset, nil
}

func daysIn(year, month int) int {
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	if month == 2 && (year%4 == 0 && year%100 != 0 || year%400 == 0) {
		return 29
	}
	return days[month-1]
}

// scanner reads ISO-8601 text; each reader consumes nothing when it does not match.
type scanner struct {
	text string
	pos  int
}

func (s *scanner) done() bool { return s.pos == len(s.text) }

func (s *scanner) peek() byte {
	if s.done() {
		return 0
	}
	return s.text[s.pos]
}

func (s *scanner) take(c byte) bool {
	if s.peek() != c || s.done() {
		return false
	}
	s.pos++
	return true
}

func (s *scanner) digits(n int) (int, bool) {
	if len(s.text)-s.pos < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := s.text[s.pos+i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	s.pos += n
	return v, true
}

// fractionMs reads one or more digits as a fraction of a second, cut to ms.
func (s *scanner) fractionMs() (int, bool) {
	start, v := s.pos, 0
	for !s.done() && s.peek() >= '0' && s.peek() <= '9' {
		if s.pos-start < 3 {
			v = v*10 + int(s.peek()-'0')
		}
		s.pos++
	}
	n := s.pos - start
	if n == 0 {
		return 0, false
	}
	for i := n; i < 3; i++ {
		v *= 10
	}
	return v, true
}
