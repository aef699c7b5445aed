package idforge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Decoding Snowflake IDs without a server: the layouts, rules, keys and values of
// `idforge parse --json` (src/core/layout.cc, src/core/layout_text.cc,
// src/cli/decoded_output.cc).

const (
	idBits        = 64
	maxFieldBits  = 63
	maxFields     = 16
	maxTickMs     = 86_400_000 // `idforge parse --tick-ms` takes 1..86400000
	twitterEpoch  = 1288834974657
	specExample   = "time:41,datacenter:5,worker:5,sequence:12"
	roleTime      = "time"
	roleSequence  = "sequence"
	roleNode      = "node"
	defaultLayout = "twitter"
)

type layoutField struct {
	name string
	bits int
	role string
}

type layout struct {
	name      string
	epochMs   int64
	tickMs    int64
	fields    []layoutField
	shifts    []int
	totalBits int
}

func roleOf(name string) string {
	switch name {
	case "time":
		return roleTime
	case "sequence", "seq", "increment":
		return roleSequence
	}
	return roleNode
}

func fields(spec ...interface{}) []layoutField {
	out := make([]layoutField, 0, len(spec)/2)
	for i := 0; i < len(spec); i += 2 {
		name := spec[i].(string)
		out = append(out, layoutField{name, spec[i+1].(int), roleOf(name)})
	}
	return out
}

// The presets of docs/snowflake.md, "Layouts".
var presets = []struct {
	name    string
	epochMs int64
	tickMs  int64
	fields  []layoutField
}{
	{"twitter", twitterEpoch, 1, fields("time", 41, "datacenter", 5, "worker", 5, "sequence", 12)},
	{"discord", 1420070400000, 1, fields("time", 42, "worker", 5, "process", 5, "increment", 12)},
	{"instagram", 1314220021721, 1, fields("time", 41, "shard", 13, "sequence", 10)},
	{"sonyflake", 1409529600000, 10, fields("time", 39, "sequence", 8, "machine", 16)},
	{"baidu", 1463673600000, 1000, fields("time", 28, "worker", 22, "sequence", 13)},
}

// LayoutPresets gives the names of the preset layouts (any case is accepted).
func LayoutPresets() []string {
	out := make([]string, len(presets))
	for i, p := range presets {
		out[i] = p.name
	}
	return out
}

func parseError(code, message string) error { return &Error{Code: code, Message: message} }

func layoutError(name, what string) error {
	if name == "" {
		name = "(unnamed)"
	}
	return errInvalid("layout " + name + ": " + what)
}

func fieldError(name, what string) error {
	return errInvalid("layout field '" + name + "': " + what)
}

func validFieldName(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// newLayout makes the same checks as Layout::create, in the same order.
func newLayout(name string, epochMs, tickMs int64, fs []layoutField) (*layout, error) {
	if len(fs) == 0 || len(fs) > maxFields {
		return nil, layoutError(name, fmt.Sprintf(
			"has %d fields; a layout has 1..%d (one time, one sequence, any node fields)", len(fs), maxFields))
	}
	total, timeIndex, seqIndex := 0, -1, -1
	for i, f := range fs {
		if !validFieldName(f.name) {
			return nil, errInvalid(fmt.Sprintf(
				"layout field %q: a name is a lower-case letter then letters, digits or '_'", f.name))
		}
		for _, g := range fs[:i] {
			if g.name == f.name {
				return nil, fieldError(f.name, "the name is used twice")
			}
		}
		if f.bits < 1 || f.bits > maxFieldBits {
			return nil, fieldError(f.name, fmt.Sprintf("width %d is not in 1..%d", f.bits, maxFieldBits))
		}
		total += f.bits
		if total > idBits {
			return nil, fieldError(f.name, fmt.Sprintf(
				"the widths up to this field sum to %d bits, more than the 64 of an ID", total))
		}
		var slot *int
		switch f.role {
		case roleTime:
			slot = &timeIndex
		case roleSequence:
			slot = &seqIndex
		}
		if slot != nil {
			if *slot >= 0 {
				return nil, fieldError(f.name, fmt.Sprintf("a layout has one %s field and '%s' is already it",
					f.role, fs[*slot].name))
			}
			*slot = i
		}
	}
	if timeIndex < 0 {
		return nil, layoutError(name, "has no time field (a custom spec names it 'time')")
	}
	if seqIndex < 0 {
		return nil, layoutError(name, "has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')")
	}
	if tickMs < 1 {
		return nil, layoutError(name, fmt.Sprintf("tick_ms %d is not >= 1", tickMs))
	}
	if epochMs < 0 {
		return nil, layoutError(name, fmt.Sprintf("epoch_ms %d is before 1970", epochMs))
	}
	// The time of the largest tick must fit an int64 of Unix ms.
	t := fs[timeIndex]
	maxTick := uint64(1)<<uint(t.bits) - 1
	if maxTick > uint64(math.MaxInt64-epochMs)/uint64(tickMs) {
		return nil, fieldError(t.name, fmt.Sprintf("%d bits of %d ms ticks from epoch %d run past the largest int64 Unix ms",
			t.bits, tickMs, epochMs))
	}
	l := &layout{name: name, epochMs: epochMs, tickMs: tickMs, fields: fs,
		shifts: make([]int, len(fs)), totalBits: total}
	shift := 0
	for i := len(fs) - 1; i >= 0; i-- {
		l.shifts[i] = shift
		shift += fs[i].bits
	}
	return l, nil
}

func trimSpec(s string) string { return strings.Trim(s, " \t") }

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

func parseSpecFields(spec string) ([]layoutField, error) {
	var fs []layoutField
	for _, raw := range strings.Split(spec, ",") {
		item := trimSpec(raw)
		if item == "" {
			return nil, errInvalid(fmt.Sprintf("layout spec %q has an empty item; expected name:bits,... like %s",
				spec, specExample))
		}
		if strings.Count(item, ":") != 1 {
			return nil, errInvalid(fmt.Sprintf("layout spec item %q is not name:bits (e.g. worker:5)", item))
		}
		name, bitsText, _ := strings.Cut(item, ":")
		name, bitsText = trimSpec(name), trimSpec(bitsText)
		bits, ok := 0, bitsText != "" && len(bitsText) <= 3
		for i := 0; ok && i < len(bitsText); i++ {
			c := bitsText[i]
			ok = c >= '0' && c <= '9'
			bits = bits*10 + int(c-'0')
		}
		if !ok {
			return nil, errInvalid(fmt.Sprintf("layout spec item %q: width %q is not a number of bits", item, bitsText))
		}
		fs = append(fs, layoutField{name, bits, roleOf(name)})
	}
	return fs, nil
}

// resolveLayout reads a preset name (any case) or a custom spec, as
// resolve_layout_spec does; epochMs < 0 and tickMs <= 0 mean the layout's own.
func resolveLayout(spec string, epochMs, tickMs int64) (*layout, error) {
	if spec == "" {
		spec = defaultLayout
	}
	if !strings.Contains(spec, ":") {
		wanted := asciiLower(spec)
		for _, p := range presets {
			if p.name != wanted {
				continue
			}
			epoch, tick := p.epochMs, p.tickMs
			if epochMs >= 0 {
				epoch = epochMs
			}
			if tickMs > 0 {
				tick = tickMs
			}
			l, err := newLayout(p.name, epoch, tick, p.fields)
			if err != nil {
				return nil, errInvalid(fmt.Sprintf("invalid layout '%s': %s", spec, err.(*Error).Message))
			}
			return l, nil
		}
		return nil, errInvalid(fmt.Sprintf("unknown layout '%s' (presets: %s)", spec,
			strings.Join(LayoutPresets(), ", ")))
	}
	fs, err := parseSpecFields(trimSpec(spec))
	if err == nil {
		epoch, tick := int64(twitterEpoch), int64(1)
		if epochMs >= 0 {
			epoch = epochMs
		}
		if tickMs > 0 {
			tick = tickMs
		}
		var l *layout
		if l, err = newLayout("custom", epoch, tick, fs); err == nil {
			return l, nil
		}
	}
	return nil, errInvalid(fmt.Sprintf("invalid layout '%s': %s", spec, err.(*Error).Message))
}

// ParseOption is an option of Parse: EpochMs or TickMs.
type ParseOption func(*parseConfig)

type parseConfig struct {
	epochMs, tickMs int64
	hasEpoch        bool
	hasTick         bool
}

// EpochMs replaces the layout's epoch (Unix ms, 0 or later; the CLI's --epoch).
func EpochMs(ms int64) ParseOption {
	return func(c *parseConfig) { c.epochMs, c.hasEpoch = ms, true }
}

// TickMs replaces the layout's tick length (1..86400000 ms; the CLI's --tick-ms).
func TickMs(ms int64) ParseOption {
	return func(c *parseConfig) { c.tickMs, c.hasTick = ms, true }
}

// FieldValue is one non-time field of a decoded ID.
type FieldValue struct {
	Name  string // the key of `idforge parse --json`: the field's name, "field_" + it for id, layout, unix_ms, time
	Value uint64
}

// Parsed is a decoded Snowflake ID: the keys and values of `idforge parse --json`.
type Parsed struct {
	ID     uint64
	Layout string       // the preset's name, or "custom"
	UnixMs int64        // the time of the ID
	Time   string       // ISO-8601 UTC with ms; the ms as text outside the years 0000-9999
	Fields []FieldValue // each non-time field, in layout order
}

// Get gives the value of a field by its key (datacenter, worker, sequence, ...).
func (p *Parsed) Get(name string) (uint64, bool) {
	for _, f := range p.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// JSON gives the exact line of `idforge parse --json` (without the newline):
// {"id":"910499571847892992","layout":"twitter","unix_ms":1505914988849,...}.
func (p *Parsed) JSON() string {
	var b strings.Builder
	b.WriteString(`{"id":"`)
	b.WriteString(strconv.FormatUint(p.ID, 10))
	b.WriteString(`","layout":`)
	b.WriteString(strconv.Quote(p.Layout)) // [a-z0-9_]: JSON and Go quote alike
	b.WriteString(`,"unix_ms":`)
	b.WriteString(strconv.FormatInt(p.UnixMs, 10))
	b.WriteString(`,"time":"`)
	b.WriteString(p.Time)
	b.WriteString(`"`)
	for _, f := range p.Fields {
		b.WriteString(",")
		b.WriteString(strconv.Quote(f.Name))
		b.WriteString(":")
		b.WriteString(strconv.FormatUint(f.Value, 10))
	}
	b.WriteString("}")
	return b.String()
}

// MarshalJSON gives the same object as JSON, so that encoding/json writes it alike.
func (p *Parsed) MarshalJSON() ([]byte, error) { return []byte(p.JSON()), nil }

// Parse decodes a Snowflake ID with a layout: a preset (twitter, discord, instagram,
// sonyflake, baidu; any case; "" is twitter) or a custom spec
// "time:41,datacenter:5,worker:5,sequence:12", and EpochMs and TickMs to replace
// the layout's. No server is asked. A bad layout, epoch or tick, or an ID wider than
// the layout, is an *Error with Code "invalid_argument" or "out_of_range", as
// `idforge parse` refuses it.
func Parse(id uint64, layoutSpec string, options ...ParseOption) (*Parsed, error) {
	var pc parseConfig
	for _, o := range options {
		o(&pc)
	}
	epoch, tick := int64(-1), int64(-1)
	if pc.hasEpoch {
		if pc.epochMs < 0 {
			return nil, errInvalid("epoch_ms must not be before 1970-01-01")
		}
		epoch = pc.epochMs
	}
	if pc.hasTick {
		if pc.tickMs < 1 || pc.tickMs > maxTickMs {
			return nil, errInvalid(fmt.Sprintf("tick_ms must be from 1 to %d, got %d", maxTickMs, pc.tickMs))
		}
		tick = pc.tickMs
	}
	l, err := resolveLayout(layoutSpec, epoch, tick)
	if err != nil {
		return nil, err
	}
	if l.totalBits < idBits && id>>uint(l.totalBits) != 0 {
		return nil, parseError(CodeOutOfRange, fmt.Sprintf(
			"ID %d does not fit layout '%s', whose IDs have %d bits (largest %d)",
			id, l.name, l.totalBits, uint64(1)<<uint(l.totalBits)-1))
	}
	p := &Parsed{ID: id, Layout: l.name}
	for i, f := range l.fields {
		v := id >> uint(l.shifts[i]) & (uint64(1)<<uint(f.bits) - 1)
		if f.role == roleTime {
			p.UnixMs = l.epochMs + int64(v)*l.tickMs
			continue
		}
		key := f.name
		switch key {
		case "id", "layout", "unix_ms", "time":
			key = "field_" + key
		}
		// A later field with the same key (field_id next to a field named id)
		// replaces the value and keeps the place, as the CLI's JSON object does.
		replaced := false
		for j := range p.Fields {
			if p.Fields[j].Name == key {
				p.Fields[j].Value, replaced = v, true
			}
		}
		if !replaced {
			p.Fields = append(p.Fields, FieldValue{key, v})
		}
	}
	p.Time = FormatTime(p.UnixMs)
	return p, nil
}

// ParseDecimal is Parse of an ID given as decimal text (digits only, up to
// 18446744073709551615), as `idforge parse` reads it.
func ParseDecimal(id string, layoutSpec string, options ...ParseOption) (*Parsed, error) {
	n, err := ParseID(id)
	if err != nil {
		return nil, err
	}
	return Parse(n, layoutSpec, options...)
}

// ParseID reads an ID as `idforge parse` does: digits only (leading zeros allowed),
// no sign or space, at most 18446744073709551615.
func ParseID(text string) (uint64, error) {
	return parseNumber(text, "ID")
}

// parseNumber is the CLI's parse_number: the same refusals.
func parseNumber(text, what string) (uint64, error) {
	if text == "" {
		return 0, errInvalid(what + " is empty")
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, errInvalid(fmt.Sprintf("%s must be a non-negative whole number, got '%s'", what, text))
		}
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, parseError(CodeOutOfRange, fmt.Sprintf("%s '%s' is too large (the largest is %d)",
			what, text, uint64(math.MaxUint64)))
	}
	return n, nil
}

// ParseTickMs reads a --tick-ms value as the CLI does (a whole number, 1..86400000).
func ParseTickMs(text string) (int64, error) {
	n, err := parseNumber(text, "--tick-ms")
	if err != nil {
		return 0, err
	}
	if n == 0 || n > maxTickMs {
		return 0, errInvalid(fmt.Sprintf("--tick-ms must be from 1 to %d, got %d", maxTickMs, n))
	}
	return int64(n), nil
}
