package idforge_test

// Real `idforge serve` processes for the client's tests, as
// clients/python/tests/_support.py starts them: two servers share a worker-id
// registry (local:SHARED/workers: different worker ids) and a segment store
// (sqlite:SHARED/segments.db: shared counters), each with its own data dir and
// identity, so together they never issue the same ID.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	idforge "idforge.dev/client"
)

const adminToken = "go-client-test-token"

// slowOK: requests that are not about timeouts get a generous one: a busy machine
// must not make a starved server look like a dead one.
const slowOK = 3000 * time.Millisecond

var (
	httpLine = regexp.MustCompile(`idforge serve: http http://127\.0\.0\.1:(\d+)/`)
	respLine = regexp.MustCompile(`idforge serve: resp redis://127\.0\.0\.1:(\d+)`)
)

func idforgeBin() string {
	if bin := os.Getenv("IDFORGE_BIN"); bin != "" {
		return bin
	}
	abs, _ := filepath.Abs(filepath.Join("..", "..", "build", "idforge"))
	return abs
}

func vectorsPath() string {
	abs, _ := filepath.Abs(filepath.Join("..", "..", "tests", "data", "snowflake_vectors.txt"))
	return abs
}

type serverProc struct {
	name, dataDir, shared, outPath, errPath string
	httpPort, respPort                      int

	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
}

func (s *serverProc) http() string { return fmt.Sprintf("http://127.0.0.1:%d", s.httpPort) }
func (s *serverProc) resp() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.respPort) }

func (s *serverProc) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// start starts the server on the ports it had (0 the first time: any free one).
func (s *serverProc) start() error {
	args := []string{idforgeBin(), "serve",
		"--http", fmt.Sprintf("127.0.0.1:%d", s.httpPort),
		"--resp", fmt.Sprintf("127.0.0.1:%d", s.respPort),
		"--data-dir", s.dataDir,
		"--registry", "local:" + s.shared + "/workers",
		"--store", "sqlite:" + s.shared + "/segments.db",
		"--identity", "go-test-" + s.name,
		"--admin-token", adminToken,
		"--io-threads", "1", "--worker-threads", "2",
		// A loaded machine can delay the thread that renews the time reservation;
		// wait for it rather than answer 503.
		"--max-wait-ms", "250",
		"--log-level", "warn"}
	// A server outlives nothing: killed with the test process through util-linux's
	// setpriv, which execs it under the same pid.
	if setpriv, err := exec.LookPath("setpriv"); err == nil {
		args = append([]string{setpriv, "--pdeathsig", "KILL", "--"}, args...)
	}
	out, err := os.Create(s.outPath)
	if err != nil {
		return err
	}
	errFile, err := os.OpenFile(s.errPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		out.Close()
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = out, errFile
	err = cmd.Start()
	out.Close()
	errFile.Close()
	if err != nil {
		return err
	}
	s.cmd, s.exited, s.stopped = cmd, make(chan struct{}), false
	exited := s.exited
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, _ := os.ReadFile(s.outPath)
		h, r := httpLine.FindSubmatch(text), respLine.FindSubmatch(text)
		if h != nil && r != nil {
			s.httpPort, _ = strconv.Atoi(string(h[1]))
			s.respPort, _ = strconv.Atoi(string(r[1]))
			return nil
		}
		if !s.running() || time.Now().After(deadline) {
			s.kill9()
			tail, _ := os.ReadFile(s.errPath)
			if len(tail) > 2000 {
				tail = tail[len(tail)-2000:]
			}
			return fmt.Errorf("idforge serve %s did not start: %s", s.name, tail)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *serverProc) kill9() {
	if s.running() {
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.stopped = false
}

// sigstop stops the server and waits until every thread of the process has stopped.
func (s *serverProc) sigstop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGSTOP)
	s.stopped = true
	taskDir := fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := os.ReadDir(taskDir)
		all := len(tasks) > 0
		for _, task := range tasks {
			stat, err := os.ReadFile(filepath.Join(taskDir, task.Name(), "stat"))
			if err != nil {
				continue
			}
			text := string(stat)
			fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
			if len(fields) == 0 || (fields[0] != "T" && fields[0] != "t") {
				all = false
			}
		}
		if all {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("idforge serve %s did not stop", s.name)
}

func (s *serverProc) sigcont() {
	if s.running() {
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
	s.stopped = false
}

func (s *serverProc) terminate() {
	if !s.running() {
		return
	}
	s.sigcont()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.kill9()
	}
}

var plainHTTP = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

func (s *serverProc) getJSON(path string, body interface{}) (map[string]interface{}, error) {
	method, reader := http.MethodGet, io.Reader(nil)
	if body != nil {
		data, _ := json.Marshal(body)
		method, reader = http.MethodPost, bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.http()+path, reader)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := plainHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, data)
	}
	var out map[string]interface{}
	return out, json.Unmarshal(data, &out)
}

// metric is the value of one sample of /metrics (0 when absent); labels in the
// order the server writes them.
func (s *serverProc) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	var want []string
	for i := 0; i+1 < len(labels); i += 2 {
		want = append(want, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	key := name
	if len(want) > 0 {
		key += "{" + strings.Join(want, ",") + "}"
	}
	resp, err := plainHTTP.Get(s.http() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && line[:i] == key {
			v, _ := strconv.ParseFloat(line[i+1:], 64)
			return v
		}
	}
	return 0
}

// node is the (datacenter, worker) of its Snowflake IDs.
func (s *serverProc) node(t *testing.T) [2]uint64 {
	t.Helper()
	status, err := s.getJSON("/v1/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	lease := status["lease"].(map[string]interface{})
	return [2]uint64{uint64(lease["datacenter"].(float64)), uint64(lease["worker"].(float64))}
}

func (s *serverProc) waitReady() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := plainHTTP.Get(s.http() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("idforge serve %s is not ready", s.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cluster is two servers, A and B, and tags created through the admin API.
type cluster struct {
	a, b *serverProc
	root string
}

func startCluster(tags ...string) (*cluster, error) {
	bin := idforgeBin()
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("no idforge binary at %s (set IDFORGE_BIN)", bin)
	}
	// On a tmpfs when there is one: the servers fsync their high-water marks, and a
	// disk busy with builds can stall an fsync long enough for a 503.
	dir := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		dir = "/dev/shm"
	}
	root, err := os.MkdirTemp(dir, "idforge-goclient-")
	if err != nil {
		return nil, err
	}
	shared := filepath.Join(root, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		return nil, err
	}
	proc := func(name string) *serverProc {
		return &serverProc{name: name, dataDir: filepath.Join(root, name), shared: shared,
			outPath: filepath.Join(root, name+".out"), errPath: filepath.Join(root, name+".err")}
	}
	c := &cluster{a: proc("a"), b: proc("b"), root: root}
	err = func() error {
		if err := c.a.start(); err != nil {
			return err
		}
		if err := c.b.start(); err != nil {
			return err
		}
		for _, tag := range tags {
			// A small step: the two servers take many ranges from the shared store.
			if _, err := c.a.getJSON("/v1/admin/tags",
				map[string]interface{}{"tag": tag, "step": 100, "start": "1"}); err != nil {
				return err
			}
		}
		if err := c.a.waitReady(); err != nil {
			return err
		}
		return c.b.waitReady()
	}()
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// heal: both running and not stopped (after a test that stopped or killed one).
func (c *cluster) heal(t *testing.T) {
	for _, s := range []*serverProc{c.a, c.b} {
		if s.stopped {
			s.sigcont()
		}
		if !s.running() {
			if err := s.start(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (c *cluster) close() {
	c.a.terminate()
	c.b.terminate()
	os.RemoveAll(c.root)
}

var (
	theCluster *cluster
	clusterErr error
	clusterMu  sync.Mutex
)

// servers gives the shared cluster, started by the first test that needs it, healed
// before and after the test.
func servers(t *testing.T) (*serverProc, *serverProc) {
	t.Helper()
	clusterMu.Lock()
	if theCluster == nil && clusterErr == nil {
		theCluster, clusterErr = startCluster("order", "bulk", "stock", "item", "outage")
	}
	c, err := theCluster, clusterErr
	clusterMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	c.heal(t)
	t.Cleanup(func() { c.heal(t) })
	return c.a, c.b
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theCluster != nil {
		theCluster.close()
	}
	os.Exit(code)
}

// freePort is a port with nothing listening on it (connections are refused).
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// fakeServer answers every read with the same bytes (nothing when answer is nil):
// the answers a real server gives only when something is broken. closeAfter closes
// each connection after one answer.
type fakeServer struct {
	l          net.Listener
	answer     []byte
	closeAfter bool
	requests   atomic.Int64
	mu         sync.Mutex
	conns      []net.Conn
}

func newFake(t *testing.T, answer []byte, closeAfter bool) *fakeServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{l: l, answer: answer, closeAfter: closeAfter}
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fakeServer) port() int { return f.l.Addr().(*net.TCPAddr).Port }

func (f *fakeServer) accept() {
	for {
		conn, err := f.l.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, conn)
		f.mu.Unlock()
		go f.serve(conn)
	}
}

func (f *fakeServer) serve(conn net.Conn) {
	defer conn.Close()
	buf := make([]byte, 65536)
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
		f.requests.Add(1)
		if f.answer == nil {
			continue
		}
		if _, err := conn.Write(f.answer); err != nil || f.closeAfter {
			return
		}
	}
}

func (f *fakeServer) close() {
	f.l.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
}

func httpAnswer(status, body string) []byte {
	return []byte(fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		status, len(body), body))
}

// nodeOf is the (datacenter, worker) of a twitter-layout Snowflake ID.
func nodeOf(t *testing.T, id uint64) [2]uint64 {
	t.Helper()
	p, err := idforge.Parse(id, "twitter")
	if err != nil {
		t.Fatal(err)
	}
	dc, _ := p.Get("datacenter")
	w, _ := p.Get("worker")
	return [2]uint64{dc, w}
}

func newClient(t *testing.T, servers []string, options ...idforge.Option) *idforge.Client {
	t.Helper()
	c, err := idforge.New(servers, options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
