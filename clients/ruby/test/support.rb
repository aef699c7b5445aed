# frozen_string_literal: true

# Real `idforge serve` processes for the client's tests, started as
# clients/python/tests/_support.py starts them: two servers share a worker-id registry
# (local:SHARED/workers: different worker ids) and a segment store
# (sqlite:SHARED/segments.db: shared counters), each with its own data dir and
# identity, so together they never issue the same ID.

require "fileutils"
require "json"
require "net/http"
require "socket"
require "tmpdir"

module IdforgeTest
  RUBY_ROOT = File.expand_path("..", __dir__) # clients/ruby
  REPO_ROOT = File.expand_path("../..", RUBY_ROOT)
  IDFORGE_BIN = ENV["IDFORGE_BIN"].to_s.empty? ? File.join(REPO_ROOT, "build", "idforge") : ENV["IDFORGE_BIN"]
  VECTORS = File.join(REPO_ROOT, "tests", "data", "snowflake_vectors.txt")
  PARSE_TOOL = File.join(RUBY_ROOT, "bin", "idforge-parse")
  ADMIN_TOKEN = "ruby-client-test-token"

  HTTP_LINE = %r{idforge serve: http http://127\.0\.0\.1:(\d+)/}.freeze
  RESP_LINE = %r{idforge serve: resp redis://127\.0\.0\.1:(\d+)}.freeze

  def self.now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # A port with nothing listening on it (connections are refused).
  def self.free_port
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    server.close
    port
  end

  # Answers every request (anything received) with the same bytes: for the answers a
  # real server gives only when something is broken (a 503, a proxy's 401, ...).
  class FakeServer
    attr_reader :port

    def initialize(answer)
      @answer = answer.b
      @requests = 0
      @lock = Mutex.new
      @server = TCPServer.new("127.0.0.1", 0)
      @port = @server.addr[1]
      @conns = []
      @thread = Thread.new { accept_loop }
      @thread.report_on_exception = false
    end

    def requests
      @lock.synchronize { @requests }
    end

    def close
      @server.close
      @thread.join(1)
      @lock.synchronize { @conns.each { |c| c.close rescue nil } } # rubocop:disable Style/RescueModifier
    end

    private

    def accept_loop
      loop do
        conn = @server.accept
        @lock.synchronize { @conns << conn }
        Thread.new(conn) { |c| serve(c) }.report_on_exception = false
      end
    rescue IOError, SystemCallError
      nil
    end

    def serve(conn)
      while conn.readpartial(65_536)
        @lock.synchronize { @requests += 1 }
        conn.write(@answer)
      end
    rescue IOError, SystemCallError
      nil
    ensure
      conn.close rescue nil # rubocop:disable Style/RescueModifier
    end
  end

  # One `idforge serve` process.
  class ServerProc
    attr_reader :name, :http_port, :resp_port, :pid

    def initialize(root, shared, name)
      @name = name
      @data_dir = File.join(root, name)
      @shared = shared
      @out_path = File.join(root, "#{name}.out")
      @err_path = File.join(root, "#{name}.err")
      @pid = nil
      @http_port = 0
      @resp_port = 0
      @stopped = false
    end

    def http
      "http://127.0.0.1:#{@http_port}"
    end

    def resp
      "redis://127.0.0.1:#{@resp_port}"
    end

    def stopped?
      @stopped
    end

    def running?
      return false if @pid.nil?

      Process.waitpid(@pid, Process::WNOHANG).nil?
    rescue Errno::ECHILD
      false
    end

    # Starts on the ports it had (0 the first time: any free one). Call it from the
    # main thread: setpriv's parent-death signal follows the thread that started it.
    def start(timeout_s = 10.0)
      args = [IDFORGE_BIN, "serve",
              "--http", "127.0.0.1:#{@http_port}",
              "--resp", "127.0.0.1:#{@resp_port}",
              "--data-dir", @data_dir,
              "--registry", "local:#{@shared}/workers",
              "--store", "sqlite:#{@shared}/segments.db",
              "--identity", "ruby-test-#{@name}",
              "--admin-token", ADMIN_TOKEN,
              "--io-threads", "1", "--worker-threads", "2",
              # A loaded machine can delay the thread that renews the time
              # reservation; wait for it rather than answer 503.
              "--max-wait-ms", "250",
              "--log-level", "warn"]
      # A server outlives nothing: killed with the test process through util-linux's
      # setpriv, which execs it under the same pid.
      setpriv = ENV.fetch("PATH", "").split(":").map { |d| File.join(d, "setpriv") }.find { |f| File.executable?(f) }
      args = [setpriv, "--pdeathsig", "KILL", "--"] + args if setpriv
      File.write(@out_path, "")
      @pid = Process.spawn(*args, out: @out_path, err: [@err_path, "a"], in: File::NULL)
      @stopped = false
      deadline = IdforgeTest.now + timeout_s
      loop do
        text = File.read(@out_path)
        h = HTTP_LINE.match(text)
        r = RESP_LINE.match(text)
        if h && r
          @http_port = h[1].to_i
          @resp_port = r[1].to_i
          return
        end
        if !running? || IdforgeTest.now > deadline
          kill9
          raise "idforge serve #{@name} did not start: #{File.read(@err_path).then { |t| t[-2000..] || t }}"
        end
        sleep 0.01
      end
    end

    def kill9
      if running?
        Process.kill(:KILL, @pid)
        Process.wait(@pid)
      end
      @stopped = false
    rescue Errno::ECHILD, Errno::ESRCH
      @stopped = false
    end

    # SIGSTOP, and wait until every thread of the process has stopped.
    def sigstop
      Process.kill(:STOP, @pid)
      @stopped = true
      deadline = IdforgeTest.now + 5
      while IdforgeTest.now < deadline
        states = Dir.children("/proc/#{@pid}/task").filter_map do |tid|
          File.read("/proc/#{@pid}/task/#{tid}/stat").rpartition(")").last.split.first
        rescue SystemCallError
          nil
        end
        return if !states.empty? && states.all? { |s| %w[T t].include?(s) }

        sleep 0.001
      end
      raise "idforge serve #{@name} did not stop"
    end

    def sigcont
      Process.kill(:CONT, @pid) if running?
      @stopped = false
    end

    def terminate
      return unless running?

      sigcont
      Process.kill(:TERM, @pid)
      deadline = IdforgeTest.now + 5
      sleep 0.01 while running? && IdforgeTest.now < deadline
      kill9
    end

    def get_json(path, token: false, body: nil)
      uri = URI("#{http}#{path}")
      req = body.nil? ? Net::HTTP::Get.new(uri) : Net::HTTP::Post.new(uri)
      req["Authorization"] = "Bearer #{ADMIN_TOKEN}" if token
      if body
        req["Content-Type"] = "application/json"
        req.body = JSON.generate(body)
      end
      res = Net::HTTP.start(uri.host, uri.port, open_timeout: 5, read_timeout: 5) { |h| h.request(req) }
      raise "#{path}: HTTP #{res.code} #{res.body}" unless res.is_a?(Net::HTTPSuccess)

      JSON.parse(res.body)
    end

    # The value of one sample of /metrics (0 when absent).
    def metric(name, **labels)
      want = labels.map { |k, v| %(#{k}="#{v}") }.join(",")
      key = want.empty? ? name : "#{name}{#{want}}"
      body = Net::HTTP.get(URI("#{http}/metrics"))
      body.each_line do |line|
        k, _, value = line.strip.rpartition(" ")
        return value.to_f if k == key
      end
      0.0
    end

    # [datacenter, worker] of its Snowflake IDs.
    def node
      lease = get_json("/v1/status")["lease"]
      [lease["datacenter"], lease["worker"]]
    end

    def wait_ready(timeout_s = 5.0)
      deadline = IdforgeTest.now + timeout_s
      loop do
        begin
          return if Net::HTTP.get_response(URI("#{http}/readyz")).code == "200"
        rescue IOError, SystemCallError
          nil
        end
        raise "idforge serve #{@name} is not ready" if IdforgeTest.now > deadline

        sleep 0.02
      end
    end
  end

  # Two servers, A and B, and tags created through the admin API.
  class Cluster
    attr_reader :a, :b

    def initialize(tags)
      raise "no idforge binary at #{IDFORGE_BIN} (set IDFORGE_BIN)" unless File.executable?(IDFORGE_BIN)

      # On a tmpfs when there is one: the servers fsync their high-water marks, and a
      # disk busy with builds can stall an fsync long enough for a 503.
      tmp_root = File.writable?("/dev/shm") ? "/dev/shm" : Dir.tmpdir
      @root = Dir.mktmpdir("idforge-rbclient-", tmp_root)
      shared = File.join(@root, "shared")
      FileUtils.mkdir_p(shared)
      @a = ServerProc.new(@root, shared, "a")
      @b = ServerProc.new(@root, shared, "b")
      begin
        @a.start
        @b.start
        # A small step: the two servers take many ranges from the shared store.
        tags.each { |tag| @a.get_json("/v1/admin/tags", token: true, body: { tag: tag, step: 100, start: "1" }) }
        @a.wait_ready
        @b.wait_ready
      rescue StandardError
        close
        raise
      end
    end

    def servers
      [@a, @b]
    end

    # Both running and not stopped (after a test that stopped or killed one).
    def heal
      servers.each do |s|
        s.sigcont if s.stopped?
        s.start unless s.running?
      end
    end

    def close
      servers.each(&:terminate)
      FileUtils.rm_rf(@root)
    end
  end
end
