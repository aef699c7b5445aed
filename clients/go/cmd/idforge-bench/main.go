// Command idforge-bench measures the Go client: Snowflake IDs per second from the
// buffer (Client.Snowflake), against a plain in-process atomic counter in the same
// run, and with one request per ID (WithBuffer(false)).
//
//	idforge-bench [-url http://127.0.0.1:8080|redis://...] [-seconds 2] [-batch 256]
//
// Without -url it starts its own `idforge serve` ($IDFORGE_BIN, else idforge on the
// PATH, else build/idforge of the current folder or one above) in a temporary folder
// and stops it at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"time"

	idforge "idforge.dev/client"
)

func main() {
	url := flag.String("url", "", "a server (http://HOST:PORT or redis://HOST:PORT); default: start one")
	seconds := flag.Float64("seconds", 2, "seconds per measurement")
	batch := flag.Int("batch", 256, "the buffered client's batch")
	flag.Parse()
	if *url == "" {
		server, stop, err := startServer()
		if err != nil {
			fmt.Fprintln(os.Stderr, "idforge-bench:", err)
			os.Exit(1)
		}
		defer stop()
		*url = server
	}
	span := time.Duration(*seconds * float64(time.Second))
	fmt.Printf("server %s, %v per measurement, batch %d\n", *url, span, *batch)

	counter := count(span)
	buffered, err := measure(*url, span, idforge.WithBatch(*batch))
	if err != nil {
		fmt.Fprintln(os.Stderr, "idforge-bench:", err)
		os.Exit(1)
	}
	direct, err := measure(*url, span, idforge.WithBuffer(false))
	if err != nil {
		fmt.Fprintln(os.Stderr, "idforge-bench:", err)
		os.Exit(1)
	}
	fmt.Printf("in-process atomic counter:        %14.0f /s\n", counter)
	fmt.Printf("Snowflake() with the buffer:      %14.0f IDs/s  (%.3f of the counter)\n", buffered, buffered/counter)
	fmt.Printf("Snowflake() one request per ID:   %14.0f IDs/s  (%.5f of the counter; the buffer is %.0fx faster)\n",
		direct, direct/counter, buffered/direct)
}

var sink uint64

// count is increments per second of an atomic counter, read the way IDs are taken.
func count(span time.Duration) float64 {
	var n atomic.Uint64
	start := time.Now()
	var done uint64
	for {
		for i := 0; i < 4096; i++ {
			sink = n.Add(1)
		}
		done += 4096
		if elapsed := time.Since(start); elapsed >= span {
			return float64(done) / elapsed.Seconds()
		}
	}
}

// measure is Snowflake IDs per second from one goroutine with one client.
func measure(url string, span time.Duration, options ...idforge.Option) (float64, error) {
	c, err := idforge.New([]string{url}, options...)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Snowflake(ctx); err != nil { // connect, fill the buffer
		return 0, err
	}
	start := time.Now()
	var done uint64
	for {
		for i := 0; i < 64; i++ {
			v, err := c.Snowflake(ctx)
			if err != nil {
				return 0, err
			}
			sink = v
		}
		done += 64
		if elapsed := time.Since(start); elapsed >= span {
			return float64(done) / elapsed.Seconds(), nil
		}
	}
}

// findIdforge is $IDFORGE_BIN, idforge on the PATH, or build/idforge of the current
// folder or one above it (the repository's).
func findIdforge() string {
	if bin := os.Getenv("IDFORGE_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("idforge"); err == nil {
		return bin
	}
	dir, _ := os.Getwd()
	for dir != "" {
		bin := filepath.Join(dir, "build", "idforge")
		if st, err := os.Stat(bin); err == nil && !st.IsDir() {
			return bin
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return ""
}

// startServer starts `idforge serve` on free ports of 127.0.0.1 in a temporary folder.
func startServer() (string, func(), error) {
	bin := findIdforge()
	if bin == "" {
		return "", nil, fmt.Errorf("no idforge binary: set IDFORGE_BIN or give -url")
	}
	dir := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir = "/dev/shm"
	}
	root, err := os.MkdirTemp(dir, "idforge-gobench-")
	if err != nil {
		return "", nil, err
	}
	out := filepath.Join(root, "out")
	f, err := os.Create(out)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
		"--data-dir", filepath.Join(root, "data"), "--registry", "local:"+root+"/workers",
		"--store", "sqlite:"+root+"/segments.db", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = f, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	f.Close()
	if err != nil {
		os.RemoveAll(root)
		return "", nil, fmt.Errorf("%s: %w", bin, err)
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		os.RemoveAll(root)
	}
	line := regexp.MustCompile(`idforge serve: http (http://127\.0\.0\.1:\d+)/`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		text, _ := os.ReadFile(out)
		if m := line.FindSubmatch(text); m != nil {
			return string(m[1]), stop, nil
		}
	}
	stop()
	return "", nil, fmt.Errorf("%s serve did not start", bin)
}
