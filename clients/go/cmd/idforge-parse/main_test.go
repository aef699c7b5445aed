package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func idforgeBin() string {
	if bin := os.Getenv("IDFORGE_BIN"); bin != "" {
		return bin
	}
	abs, _ := filepath.Abs(filepath.Join("..", "..", "..", "..", "build", "idforge"))
	return abs
}

// The cases of tests/clients/cross_language.sh: every vector with its epoch and with
// the layout's own, and the edge cases; plus the argument forms of the CLI.
func cases(t *testing.T) [][]string {
	vectors, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "tests", "data", "snowflake_vectors.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	in := bufio.NewScanner(bytes.NewReader(vectors))
	for in.Scan() {
		line := in.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		layout, tick := f[0], []string(nil)
		if at := strings.IndexByte(layout, '@'); at >= 0 {
			layout, tick = layout[:at], []string{"--tick-ms", layout[at+1:]}
		}
		out = append(out, append([]string{f[2], "--layout", layout, "--epoch", f[1]}, tick...))
		out = append(out, append([]string{f[2], "--layout", layout}, tick...))
	}
	if len(out) < 20 {
		t.Fatalf("only %d vector cases", len(out))
	}
	for _, line := range []string{
		"0", "18446744073709551615 --layout discord", "9223372036854775807 --layout TWITTER",
		"175928847299117063 --layout Discord --epoch 0", "910499571847892992 --layout time:41,id:10,sequence:12 --epoch 1",
		"9223372036854775807 --layout time:63,sequence:1 --epoch 0",
		"123456789012345 --layout time:30,worker:20,seq:13 --tick-ms 86400000",
		"2968681395003392 --layout baidu --tick-ms 1", "9223372036854775808 --layout twitter",
		"1 --layout nosuchlayout", "1 --layout time:41,worker:5", "1 --tick-ms 0", "x1",
		"1 --layout=discord", "1 -l discord", "1 --json", "1 --layout= discord", "1 --layout=", "1 --epoch",
		"1 2", "1 --layout instagram --layout discord", "1 --foo", "--layout x", "1 --epoch 2020-01-01",
		"1  --layout twitter", "1 --epoch=-5", "007 --tick-ms 007", "",
	} {
		out = append(out, strings.Split(line, " "))
	}
	return out
}

func TestBothFormsPrintWhatIdforgeParsePrints(t *testing.T) {
	var stdin, wantLines bytes.Buffer
	for _, args := range cases(t) {
		want, err := exec.Command(idforgeBin(), append([]string{"parse", "--json"}, args...)...).Output()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		refused := err != nil
		var out, errOut bytes.Buffer
		code := run(args, nil, &out, &errOut)
		switch {
		case refused && (code == 0 || out.Len() > 0 || errOut.Len() == 0):
			t.Errorf("%q: idforge refuses; exit %d, printed %q", args, code, out.String())
		case !refused && (code != 0 || out.String() != string(want)):
			t.Errorf("%q: exit %d\n go      %s idforge %s", args, code, out.String(), want)
		}
		stdin.WriteString(strings.Join(args, " ") + "\n")
		if refused {
			wantLines.WriteString("error\n")
		} else {
			wantLines.Write(want)
		}
	}
	// --stdin: one line out per line in, an error as "error: MESSAGE".
	var out, errOut bytes.Buffer
	if code := run([]string{"--stdin"}, &stdin, &out, &errOut); code != 0 {
		t.Fatalf("--stdin exit %d: %s", code, errOut.String())
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := strings.Split(strings.TrimSuffix(wantLines.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("--stdin: %d lines for %d", len(got), len(want))
	}
	for i := range got {
		if want[i] == "error" && strings.HasPrefix(got[i], "error: ") && len(got[i]) > 7 {
			continue
		}
		if got[i] != want[i] {
			t.Errorf("--stdin line %d: %q, want %q", i+1, got[i], want[i])
		}
	}
}
