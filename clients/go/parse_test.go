package idforge_test

// Decoding without a server: every vector of tests/data/snowflake_vectors.txt, and
// the same keys, values and refusals as `idforge parse --json` (docs/clients.md).

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	idforge "idforge.dev/client"
)

var presetFields = map[string][]string{
	"twitter":   {"datacenter", "worker", "sequence"},
	"discord":   {"worker", "process", "increment"},
	"instagram": {"shard", "sequence"},
	"sonyflake": {"sequence", "machine"},
	"baidu":     {"worker", "sequence"},
}

type vector struct {
	layout string
	epoch  string
	tick   string // "" when the line gives none
	id     string
	unixMs int64
	fields []uint64
}

// loadVectors reads "layout[@tick] epoch_ms id unix_ms field..." lines.
func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open(vectorsPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	in := bufio.NewScanner(f)
	for in.Scan() {
		line := in.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		parts := strings.Fields(line)
		if len(parts) == 0 {
			continue
		}
		if len(parts) < 5 {
			t.Fatalf("a short vector line: %q", line)
		}
		v := vector{layout: parts[0], epoch: parts[1], id: parts[2]}
		if at := strings.IndexByte(v.layout, '@'); at >= 0 {
			v.layout, v.tick = v.layout[:at], v.layout[at+1:]
		}
		v.unixMs, _ = strconv.ParseInt(parts[3], 10, 64)
		for _, text := range parts[4:] {
			n, err := strconv.ParseUint(text, 10, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			v.fields = append(v.fields, n)
		}
		out = append(out, v)
	}
	if len(out) < 10 {
		t.Fatalf("only %d vectors", len(out))
	}
	return out
}

func cliArgs(layout, epoch, tick string) []string {
	args := []string{"--layout", layout}
	if epoch != "" {
		args = append(args, "--epoch", epoch)
	}
	if tick != "" {
		args = append(args, "--tick-ms", tick)
	}
	return args
}

// idforgeParse is the C++ `idforge parse --json`: its line and whether it succeeded.
func idforgeParse(t *testing.T, id string, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command(idforgeBin(), append([]string{"parse", id, "--json"}, args...)...).Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("idforge parse: %v", err)
	}
	return strings.TrimSpace(string(out)), err == nil
}

// goParse is Parse with the CLI's text arguments.
func goParse(id, layout, epoch, tick string) (*idforge.Parsed, error) {
	n, err := idforge.ParseID(id)
	if err != nil {
		return nil, err
	}
	var options []idforge.ParseOption
	if epoch != "" {
		ms, err := idforge.ParseTime(epoch)
		if err != nil {
			return nil, err
		}
		options = append(options, idforge.EpochMs(ms))
	}
	if tick != "" {
		ms, err := idforge.ParseTickMs(tick)
		if err != nil {
			return nil, err
		}
		options = append(options, idforge.TickMs(ms))
	}
	return idforge.Parse(n, layout, options...)
}

func TestEveryVectorDecodesToItsFieldsAndAsIdforgeParse(t *testing.T) {
	for _, v := range loadVectors(t) {
		for _, epoch := range []string{v.epoch, ""} { // its epoch, and the layout's own
			p, err := goParse(v.id, v.layout, epoch, v.tick)
			if err != nil {
				t.Fatalf("%+v: %v", v, err)
			}
			want, ok := idforgeParse(t, v.id, cliArgs(v.layout, epoch, v.tick)...)
			if !ok || p.JSON() != want {
				t.Fatalf("%s %s epoch %q:\n go      %s\n idforge %s", v.layout, v.id, epoch, p.JSON(), want)
			}
			if epoch == "" {
				continue
			}
			if strconv.FormatUint(p.ID, 10) != v.id || p.UnixMs != v.unixMs {
				t.Fatalf("%+v: %+v", v, p)
			}
			names := presetFields[v.layout]
			if names == nil {
				for _, f := range p.Fields {
					names = append(names, f.Name)
				}
			}
			if len(names) != len(v.fields) {
				t.Fatalf("%+v: fields %+v", v, p.Fields)
			}
			for i, name := range names {
				if got, ok := p.Get(name); !ok || got != v.fields[i] {
					t.Fatalf("%+v: %s is %d", v, name, got)
				}
			}
			// Parse of the number and of the text agree; encoding/json writes the line.
			options := []idforge.ParseOption{idforge.EpochMs(mustInt(t, epoch))}
			if v.tick != "" {
				options = append(options, idforge.TickMs(mustInt(t, v.tick)))
			}
			q, err := idforge.ParseDecimal(v.id, v.layout, options...)
			if err != nil || q.JSON() != p.JSON() {
				t.Fatalf("ParseDecimal: %v %v", q, err)
			}
			data, err := json.Marshal(p)
			if err != nil || string(data) != want {
				t.Fatalf("json.Marshal: %s %v", data, err)
			}
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Cases beyond the vectors: custom specs, reserved names, limits, and refusals
// (those of clients/python/tests/test_parse.py and tests/clients/cross_language.sh).
var parseCases = [][4]string{ // id, layout, epoch, tick
	{"0", "twitter", "", ""},
	{"9223372036854775807", "twitter", "", ""},
	{"18446744073709551615", "discord", "", ""},
	{"18446744073709551615", "instagram", "", ""},
	{"72057594037927935", "sonyflake", "", ""},
	{"5", "Twitter", "", ""},
	{"9223372036854775807", "TWITTER", "", ""},
	{"175928847299117063", "Discord", "0", ""},
	{"5", "twitter", "0", "2"},
	{"123456789012345", "baidu", "1735689600000", ""},
	{"2968681395003392", "baidu", "", "1"},
	{"12", "time:41,seq:12,worker:5", "", ""},
	{"5", "time:41, id:5 ,sequence:12", "", ""}, // a reserved name, spaces
	{"910499571847892992", "time:41,id:10,sequence:12", "1", ""},
	{"77", "time:30,layout:3,unix_ms:3,sequence:12", "0", "1000"},
	{"1", "time:41,id:5,field_id:5,sequence:12", "", ""}, // the same key twice
	{"9223372036854775807", "time:51,seq:12", "", ""},    // past year 9999
	{"9223372036854775807", "time:51,seq:12", "0", ""},
	{"9223372036854775807", "time:63,sequence:1", "0", ""},
	{"123456789012345", "time:30,worker:20,seq:13", "", "86400000"},
	{"4095", "sequence:12,time:20", "", "86400000"},
	{"1", "time:1,sequence:1", "", ""},
	{"3", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,sequence:1", "", ""},
	{"007", "", "", ""},
	{"1", "twitter", "2020-01-01T00:00:00.1234+0530", ""},
	{"1", "twitter", "-0", ""},
	{"1", " time:41,sequence:12 ", "", ""},
	{"1", "time: 041 ,sequence:12", "", ""},
	// refused
	{"18446744073709551615", "twitter", "", ""}, // 64 bits in a 63-bit layout
	{"9223372036854775808", "twitter", "", ""},
	{"18446744073709551616", "twitter", "", ""},
	{"abc", "twitter", "", ""},
	{"x1", "twitter", "", ""},
	{"-1", "twitter", "", ""},
	{"", "twitter", "", ""},
	{" 1", "twitter", "", ""},
	{"1", "nope", "", ""},
	{"1", " twitter", "", ""},
	{"1", "  ", "", ""},
	{"1", "time:41,worker:10", "", ""}, // no sequence
	{"1", "time:41,worker:5", "", ""},
	{"1", "worker:10,sequence:12", "", ""}, // no time
	{"1", "time:41,time:5,sequence:12", "", ""},
	{"1", "time:41,seq:5,sequence:12", "", ""},
	{"1", "time:41,Worker:5,sequence:12", "", ""},
	{"1", "time:41,worker:0,sequence:12", "", ""},
	{"1", "time:64,sequence:1", "", ""},
	{"1", "time:41,worker:12,sequence:12", "", ""}, // 65 bits
	{"1", "time:41,,sequence:12", "", ""},
	{"1", "time:41,worker,sequence:12", "", ""},
	{"1", "time:41,worker:x,sequence:12", "", ""},
	{"1", "time:41,worker:5:3,sequence:12", "", ""},
	{"1", "time:0041,sequence:12", "", ""},
	{"3", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,sequence:1", "", ""},
	{"1", "time:63,sequence:1", "", "1000"}, // runs past int64 ms
	{"1", "twitter", "", "0"},
	{"1", "twitter", "", "86400001"},
	{"1", "twitter", "-5", ""},
	{"1", "twitter", "9223372036854775807", ""},
	{"1", "twitter", "9223372036854775808", ""},
	{"1", "twitter", "2020-02-30", ""},
	{"1", "twitter", " 5", ""},
	{"1", "twitter", "2020-01-01T24:00", ""},
}

func TestSameAnswersAndRefusalsAsIdforgeParse(t *testing.T) {
	for _, tc := range parseCases {
		id, layout, epoch, tick := tc[0], tc[1], tc[2], tc[3]
		var args []string
		if layout != "" {
			args = append(args, "--layout", layout)
		}
		if epoch != "" {
			args = append(args, "--epoch", epoch)
		}
		if tick != "" {
			args = append(args, "--tick-ms", tick)
		}
		want, ok := idforgeParse(t, id, args...)
		p, err := goParse(id, layout, epoch, tick)
		switch {
		case ok && err != nil:
			t.Errorf("%q %v: idforge prints %s, Go refuses: %v", id, args, want, err)
		case ok && p.JSON() != want:
			t.Errorf("%q %v:\n go      %s\n idforge %s", id, args, p.JSON(), want)
		case !ok && err == nil:
			t.Errorf("%q %v: idforge refuses, Go prints %s", id, args, p.JSON())
		case !ok:
			var e *idforge.Error
			if !errors.As(err, &e) || (e.Code != idforge.CodeInvalidArgument && e.Code != idforge.CodeOutOfRange) {
				t.Errorf("%q %v: %v is not an *Error", id, args, err)
			}
		}
	}
}

func TestParseOptionsAndTimes(t *testing.T) {
	p, err := idforge.Parse(910499571847892992, "")
	check(t, err)
	if w, _ := p.Get("worker"); w != 25 || p.Time != "2017-09-20T13:43:08.849Z" || p.Layout != "twitter" {
		t.Fatalf("%+v", p)
	}
	for _, bad := range [][]idforge.ParseOption{{idforge.EpochMs(-1)}, {idforge.TickMs(0)}, {idforge.TickMs(86400001)}} {
		if _, err := idforge.Parse(1, "twitter", bad...); err == nil {
			t.Fatal("a bad epoch or tick")
		}
	}
	for ms, want := range map[int64]string{0: "1970-01-01T00:00:00.000Z", -1: "1969-12-31T23:59:59.999Z",
		-62167219200000: "0000-01-01T00:00:00.000Z", 253402300799999: "9999-12-31T23:59:59.999Z",
		253402300800000: "253402300800000", -62167219200001: "-62167219200001"} {
		if got := idforge.FormatTime(ms); got != want {
			t.Fatalf("FormatTime(%d) = %s", ms, got)
		}
	}
	for text, want := range map[string]int64{"2010-11-04T01:42:54.657Z": 1288834974657, "2017-09-20": 1505865600000,
		"2017-09-20 15:43:08+02:00": 1505914988000, "2017-09-20t13:43z": 1505914980000, "-1": -1,
		"2017-09-20T13:43:08,8499-0130": 1505920388849} {
		if got, err := idforge.ParseTime(text); err != nil || got != want {
			t.Fatalf("ParseTime(%q) = %d, %v", text, got, err)
		}
	}
	if got := strings.Join(idforge.LayoutPresets(), ","); got != "twitter,discord,instagram,sonyflake,baidu" {
		t.Fatal(got)
	}
}
