// Command idforge-parse decodes Snowflake IDs without a server and prints the JSON
// line of `idforge parse --json`.
//
//	idforge-parse ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS]
//	idforge-parse --stdin
//
// With --stdin it reads lines, each the arguments of one case separated by single
// spaces, and prints one line for each: the JSON line, or "error: MESSAGE".
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	idforge "idforge.dev/client"
)

const usage = "usage: idforge-parse ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS]\n" +
	"       idforge-parse --stdin   (one case per line, arguments separated by single spaces)"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, usage)
		return 0
	}
	if len(args) == 1 && args[0] == "--stdin" {
		return runLines(stdin, stdout, stderr)
	}
	line, err := decode(args)
	if err != nil {
		fmt.Fprintf(stderr, "idforge-parse: %s\n%s\n", message(err), usage)
		return 2
	}
	fmt.Fprintln(stdout, line)
	return 0
}

func runLines(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	out := bufio.NewWriter(stdout)
	for in.Scan() {
		text := strings.TrimSuffix(in.Text(), "\r")
		line, err := decode(strings.Split(text, " "))
		if err != nil {
			line = "error: " + message(err)
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "idforge-parse: %v\n", err)
		return 1
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(stderr, "idforge-parse: %v\n", err)
		return 1
	}
	return 0
}

// message is an error's text on one line, without the package's "idforge: code: "
// prefix.
func message(err error) string {
	text := err.Error()
	var e *idforge.Error
	if errors.As(err, &e) {
		text = e.Message
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(text)
}

// decode reads the arguments as `idforge parse` does (each option at most once;
// --opt VALUE or --opt=VALUE) and gives the JSON line.
func decode(args []string) (string, error) {
	var id, layout, epoch, tick *string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, inline, hasInline := arg, "", false
		if strings.HasPrefix(arg, "--") {
			// CLI11: --opt=VALUE; an empty VALUE is no value (the next argument is).
			if eq := strings.IndexByte(arg, '='); eq > 0 {
				name, inline, hasInline = arg[:eq], arg[eq+1:], eq+1 < len(arg)
			}
		}
		var slot **string
		switch name {
		case "-l", "--layout":
			slot = &layout
		case "--epoch":
			slot = &epoch
		case "--tick-ms":
			slot = &tick
		case "--json":
			if hasInline {
				return "", fmt.Errorf("--json takes no value")
			}
			continue
		default:
			if id != nil || (strings.HasPrefix(arg, "-") && arg != "-") {
				return "", fmt.Errorf("unexpected argument %q", arg)
			}
			a := arg
			id = &a
			continue
		}
		if *slot != nil {
			return "", fmt.Errorf("%s is given twice", name)
		}
		value := inline
		if !hasInline {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", name)
			}
			i++
			value = args[i]
		}
		*slot = &value
	}
	if id == nil {
		return "", fmt.Errorf("no ID given")
	}
	var options []idforge.ParseOption
	if epoch != nil {
		ms, err := idforge.ParseTime(*epoch)
		if err != nil {
			return "", fmt.Errorf("--epoch: %s", message(err))
		}
		if ms < 0 {
			return "", fmt.Errorf("--epoch must not be before 1970-01-01")
		}
		options = append(options, idforge.EpochMs(ms))
	}
	n, err := idforge.ParseID(*id)
	if err != nil {
		return "", err
	}
	if tick != nil {
		ms, err := idforge.ParseTickMs(*tick)
		if err != nil {
			return "", err
		}
		options = append(options, idforge.TickMs(ms))
	}
	spec := ""
	if layout != nil {
		spec = *layout
	}
	parsed, err := idforge.Parse(n, spec, options...)
	if err != nil {
		return "", err
	}
	return parsed.JSON(), nil
}
