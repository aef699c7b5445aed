# frozen_string_literal: true

# The client against two real `idforge serve` processes (docs/clients.md), test for
# test as clients/python/tests/test_servers.py.

require "minitest/autorun"
require "idforge/client"
require_relative "support"

class ServersTest < Minitest::Test
  UUID7 = /\A[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\z/.freeze
  ULID = /\A[0-9A-HJKMNP-TV-Z]{26}\z/.freeze
  # Requests that are not about timeouts get a generous one: a loaded machine must not
  # make a starved server look like a dead one.
  SLOW_OK = 3000

  # One cluster for the whole run, started by the first test that needs it.
  def self.cluster
    @cluster ||= IdforgeTest::Cluster.new(%w[order bulk stock item outage])
  end
  Minitest.after_run { @cluster&.close }

  def setup
    ServersTest.cluster.heal
    @a = ServersTest.cluster.a
    @b = ServersTest.cluster.b
  end

  def teardown
    ServersTest.cluster.heal
  end

  def client(servers, **options)
    c = Idforge::Client.new(servers, **options)
    (@clients ||= []) << c
    c
  end

  def after_teardown
    (@clients || []).each(&:close)
    super
  end

  def node_of(snowflake_id)
    d = Idforge::Client.parse(snowflake_id)
    [d["datacenter"], d["worker"]]
  end

  def now
    IdforgeTest.now
  end

  # -- both protocols ----------------------------------------------------------------

  def test_http_and_redis_servers_give_every_kind
    node_a = @a.node
    [@a.http, @a.resp].each do |url|
      [true, false].each do |buffer|
        c = client([url], buffer: buffer, batch: 32, timeout_ms: SLOW_OK)
        sf = c.snowflake
        assert_kind_of Integer, sf
        assert_equal node_a, node_of(sf)
        more = c.snowflakes(40)
        assert_equal 41, (more + [sf]).uniq.size
        assert_equal more.sort, more, "one server: in order"
        seg = c.segment("order")
        assert_kind_of Integer, seg
        assert_operator seg, :>, 0
        assert_equal (seg + 1..seg + 5).to_a, c.segments("order", 5)
        assert_equal seg + 6, c.next(:segment, "order")
        assert_match UUID7, c.uuid7
        assert_match ULID, c.ulid
        assert_match ULID, c.next("ulid")
        assert_equal 6, (c.uuid7s(3) + c.ulids(3)).uniq.size
      end
    end
  end

  def test_the_two_servers_never_issue_the_same_id
    refute_equal @a.node, @b.node
    ca = client([@a.http], batch: 100, timeout_ms: SLOW_OK)
    cb = client([@b.resp], batch: 100, timeout_ms: SLOW_OK)
    ids = []
    300.times { ids << ca.segment("stock") << cb.segment("stock") }
    assert_equal ids.size, ids.uniq.size
  end

  # -- kill -9 and restart -----------------------------------------------------------

  def test_pulling_through_kill_9_and_restart_loses_no_call_and_repeats_no_id
    node_a = @a.node
    stop = false
    lock = Mutex.new
    results = []
    errors = []
    calls = []
    # A killed server refuses at once; the timeout only covers a starved one.
    timeout = { timeout_ms: SLOW_OK, backoff_ms: 200, max_backoff_ms: 1000 }
    # Buffered, small batches (many refills); and one request per call. Both start on
    # A, over both protocols.
    buffered = client([@a.http, @b.resp], batch: 16, **timeout)
    direct = client([@a.resp, @b.http], buffer: false, **timeout)
    pull = lambda do |c, kinds|
      got = []
      n = 0
      begin
        until stop
          kinds.each do |kind|
            n += 1
            got << [kind, kind == :sf ? c.snowflake : c.segment("order"), Time.now.to_f]
          end
        end
      rescue StandardError => e
        lock.synchronize { errors << e.full_message(highlight: false) }
      end
      lock.synchronize do
        results << got
        calls << n
      end
    end
    threads = [Thread.new { pull.call(buffered, %i[sf seg]) },
               Thread.new { pull.call(buffered, %i[seg sf]) },
               Thread.new { pull.call(direct, %i[sf seg]) }]
    restarted = nil
    begin
      sleep 0.3
      @a.kill9
      sleep 0.3
      @a.start # same data dir, identity and ports
      restarted = Time.now.to_f
      sleep 0.4
      @b.kill9 # now only the restarted A can answer
      sleep 0.4
      @b.start
      sleep 0.2
    ensure
      stop = true
      threads.each { |t| t.join(10) }
    end
    assert_equal [], errors
    got = results.flatten(1)
    assert_equal calls.sum, got.size, "every call returned an ID"
    %i[sf seg].each do |kind|
      ids = got.select { |k, _, _| k == kind }.map { |_, v, _| v }
      assert_operator ids.size, :>, 100
      assert_equal ids.size, ids.uniq.size, "a repeated #{kind} ID"
    end
    # The restarted A served (IDs of its node, made after its restart).
    after = got.select { |k, _, t| k == :sf && t > restarted + 0.4 }.map { |_, v, _| v }
    refute_empty after
    assert(after.last(10).all? { |v| node_of(v) == node_a })
    assert(after.any? { |v| Idforge::Client.parse(v)["unix_ms"] > restarted * 1000 })
  end

  def test_a_kept_alive_connection_the_server_closed_is_not_a_failure
    node_a = @a.node
    clients = [client([@a.http, @b.resp], buffer: false, timeout_ms: SLOW_OK),
               client([@a.resp, @b.http], buffer: false, timeout_ms: SLOW_OK)]
    clients.each { |c| assert_equal node_a, node_of(c.snowflake) } # a kept-alive connection
    @a.kill9 # closes them all
    @a.start
    clients.each do |c|
      # A again, on a new connection: its old one is no reason to skip it.
      assert_equal node_a, node_of(c.snowflake)
      assert_equal [0, 0], c.server_states.map { |s| s[:failures] }
    end
  end

  # -- SIGSTOP -----------------------------------------------------------------------

  def test_a_stopped_server_costs_one_timeout_then_is_skipped
    node_a = @a.node
    node_b = @b.node
    timeout_ms = 500
    c = client([@a.http, @b.resp], timeout_ms: timeout_ms, buffer: false, backoff_ms: 5000)
    assert_equal node_a, node_of(c.snowflake) # A answers first
    @a.sigstop
    begin
      t0 = now
      first = c.snowflake
      first_s = now - t0
      rest = Array.new(30) { c.snowflake }
      rest_s = now - t0 - first_s
      states = c.server_states
    ensure
      @a.sigcont
    end
    # The first request waited for A's timeout, then B answered it; the other 30 went
    # straight to B (one timeout each would be 15 s).
    assert_operator first_s, :>=, timeout_ms / 1000.0 * 0.9
    assert_operator first_s, :<, 2 * timeout_ms / 1000.0
    assert_operator rest_s, :<, 5 * timeout_ms / 1000.0, "a timeout per request"
    assert_equal [node_b], ([first] + rest).map { |x| node_of(x) }.uniq
    assert_equal 1, states[0][:failures]
    assert_includes states[0][:last_error], "timed out after 500 ms"
    assert states[1][:current]
    # A is well again, but requests stay on the server that answered last.
    assert_equal node_b, node_of(c.snowflake)
  end

  def test_a_server_backing_off_is_skipped_and_named_so
    # F accepts connections and never answers: a timeout each time it is tried.
    silent = TCPServer.new("127.0.0.1", 0)
    f = "http://127.0.0.1:#{silent.addr[1]}"
    c = client([f, @a.resp], timeout_ms: 300, batch: 10, refill_below: 5, backoff_ms: 5000)
    t0 = now
    ids = [c.snowflake] # F times out, A answers: 9 left
    assert_operator now - t0, :>=, 0.25
    @a.kill9
    5.times { ids << c.snowflake } # 4 left: a background refill
    deadline = now + 3
    sleep 0.01 while c.stats[:buffers][0][:last_error].nil? && now < deadline
    # The refill found A refusing, and did not try F: backing off for 5 s.
    message = c.stats[:buffers][0][:last_error]
    assert_includes message, "#{@a.resp} failed: connection refused"
    assert_match(/#{Regexp.escape(f)} skipped: backing off \d+ ms more after 1 failure in a row \(last: timed out after 300 ms\)/,
                 message)
    assert_equal [1, 1], c.server_states.map { |s| s[:failures] }
    4.times { ids << c.snowflake } # the buffer still serves
    assert_equal 10, ids.uniq.size
  ensure
    silent&.close
  end

  def test_a_stopped_server_during_background_refills_costs_the_caller_nothing
    # Snowflake IDs: a server stopped while it held the shared SQLite store's lock
    # would hold up the other's segment ranges too (an artefact of the test setup).
    timeout_ms = 500
    c = client([@a.resp, @b.http], timeout_ms: timeout_ms, batch: 100, refill_below: 70, backoff_ms: 5000)
    ids = [c.snowflake]
    @a.sigstop
    begin
      slowest = 0.0
      100.times do
        sleep 0.01 # 70 IDs last longer than A's timeout
        t0 = now
        ids << c.snowflake
        slowest = [slowest, now - t0].max
      end
      states = c.server_states
    ensure
      @a.sigcont
    end
    assert_equal 101, ids.uniq.size
    # The refill thread met A's timeout and went on to B; no caller waited.
    assert_equal 1, states[0][:failures]
    assert states[1][:current]
    assert_operator slowest, :<, timeout_ms / 1000.0 / 2
  end

  def test_the_buffer_refills_in_the_background_within_its_bound
    c = client([@a.http], batch: 20, refill_below: 10, timeout_ms: SLOW_OK)
    ids = [c.snowflake]
    assert_equal 19, c.buffered(:snowflake)
    10.times { ids << c.snowflake } # 9 left: below 10
    deadline = now + 2
    sleep 0.01 while c.buffered(:snowflake) != 29 && now < deadline
    assert_equal 29, c.buffered(:snowflake) # batch + refill_below at most
    ids << c.snowflake # 28 left: not below 10, no refill
    sleep 0.1
    assert_equal 28, c.buffered(:snowflake)
    assert_equal 2, c.stats[:buffers].first[:refills]
    ids.concat(c.snowflakes(28))
    assert_equal 40, ids.uniq.size
  end

  # -- a full outage -----------------------------------------------------------------

  def test_the_buffer_serves_a_full_outage_until_empty_then_names_every_server
    timeout_s = 0.1
    c = client([@a.http, @b.resp], timeout_ms: 100, batch: 40, refill_below: 20, max_age_ms: 10_000,
                                   backoff_ms: 100)
    first_seg = c.segment("outage")
    first_sf = c.snowflake
    assert_equal 39, c.buffered(:segment, "outage")
    assert_equal 39, c.buffered(:snowflake)
    @a.sigstop
    @b.sigstop
    begin
      [[:segment, -> { c.segment("outage") }, first_seg], [:snowflake, -> { c.snowflake }, first_sf]].each do |kind, call, first|
        served = []
        t0 = nil
        error = assert_raises(Idforge::Unavailable) do
          loop do
            # Slow enough that the background refill (below 20 left) fails on both
            # servers while IDs are left.
            sleep 0.015
            t0 = now
            served << call.call
          end
        end
        waited = now - t0
        assert_equal 39, served.size, "#{kind}: every buffered ID"
        assert_equal 40, (served + [first]).uniq.size
        assert_includes error.message, @a.http
        assert_includes error.message, @b.resp
        assert_includes error.message, "timed out after 100 ms"
        assert_equal [@a.http, @b.resp], error.errors.map(&:first)
        assert_equal [@a.http, @b.resp], error.servers.map { |s| s[:url] }
        assert_kind_of Idforge::Error, error
        assert_equal "unavailable", error.code
        assert_operator waited, :<, 2 * timeout_s + 1.0, kind
      end
    ensure
      @a.sigcont
      @b.sigcont
    end
    # Back: the next call gets an ID again (every server backing off: the one whose
    # period ends first is tried).
    deadline = now + 3
    begin
      assert_operator c.segment("outage"), :>, first_seg
    rescue Idforge::Unavailable
      raise if now > deadline

      sleep 0.05
      retry
    end
  end

  def test_an_empty_buffer_tries_a_server_still_backing_off
    c = client([@a.http], timeout_ms: 300, batch: 10, refill_below: 5, backoff_ms: 60_000, max_backoff_ms: 60_000)
    ids = [c.snowflake] # 9 left
    @a.sigstop
    begin
      5.times { ids << c.snowflake } # 4 left: a refill, A times out
      deadline = now + 5
      sleep 0.01 while c.server_states[0][:failures].zero? && now < deadline
    ensure
      @a.sigcont
    end
    assert_operator c.server_states[0][:backing_off_ms], :>, 50_000
    # No background refill while A backs off; the empty buffer tries A anyway.
    14.times { ids << c.snowflake }
    assert_equal 20, ids.uniq.size
    assert_equal 0, c.server_states[0][:failures]
  end

  def test_no_server_at_all_fails_at_once_naming_each_server
    dead = ["http://127.0.0.1:#{IdforgeTest.free_port}", "redis://127.0.0.1:#{IdforgeTest.free_port}"]
    c = client(dead, buffer: false, backoff_ms: 1000, max_backoff_ms: 3000)
    t0 = now
    e = assert_raises(Idforge::Unavailable) { c.snowflake }
    assert_operator now - t0, :<, 0.5
    assert_equal [[dead[0], "failed: connection refused"], [dead[1], "failed: connection refused"]], e.errors
    assert_equal "no idforge server could give snowflake IDs: #{dead[0]} failed: connection refused; " \
                 "#{dead[1]} failed: connection refused", e.message
    # Both back off now: a waiting caller tries them anyway, the one whose period ends
    # first first, rather than failing untried.
    e = assert_raises(Idforge::Unavailable) { c.snowflake }
    assert_equal [[dead[0], "failed: connection refused"], [dead[1], "failed: connection refused"]], e.errors
    states = c.server_states
    assert_equal [2, 2], states.map { |s| s[:failures] }
    assert_operator states[0][:backing_off_ms], :>, 1500 # doubled: 2000 ms
    4.times { assert_raises(Idforge::Unavailable) { c.snowflake } }
    states = c.server_states
    assert_equal 12, states.sum { |s| s[:failures] } # both, every call
    assert_operator states.map { |s| s[:backing_off_ms] }.max, :<=, 3000 # the cap
    # With the buffer, an empty buffer fails the same way.
    c2 = client(dead, timeout_ms: 200)
    assert_raises(Idforge::Unavailable) { c2.segment("order") }
  end

  def test_any_other_error_answer_moves_on_to_the_next_server
    http = lambda do |status, body|
      "HTTP/1.1 #{status}\r\nContent-Type: application/json\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}"
    end
    cases = [
      ["http", http.call("503 Service Unavailable", '{"error":{"code":"unavailable","message":"segment store down"}}'),
       "HTTP 503 unavailable"],
      ["http", http.call("500 Internal Server Error", '{"error":{"code":"internal","message":"boom"}}'),
       "HTTP 500 internal"],
      ["http", http.call("401 Unauthorized", "proxy says no"), "HTTP 401"],
      ["http", http.call("403 Forbidden", '{"error":{"code":"forbidden","message":"scope"}}'), "HTTP 403"],
      ["http", http.call("429 Too Many Requests", '{"error":{"code":"too_many_requests","message":"rate"}}'),
       "HTTP 429"],
      ["http", http.call("200 OK", '{"ids":[]}'), "malformed"],
      ["http", http.call("200 OK", '{"ids":[1.5]}'), "malformed"],
      ["http", http.call("200 OK", "not json"), "malformed"],
      ["http", "SSH-2.0-OpenSSH\r\n", "not an HTTP answer"],
      ["redis", "-ERR lease_lost: the worker lease is gone\r\n", "lease_lost"],
      ["redis", "-ERR io_error: disk\r\n", "io_error"],
      ["redis", "-ERR unknown command 'ID.SNOWFLAKE'\r\n", "unknown command"],
      ["redis", "-WRONGPASS invalid_argument: no\r\n", "WRONGPASS"],
      ["redis", "+OK\r\n", "unexpected answer"],
      ["redis", "*1\r\n$3\r\nabc\r\n", "malformed"],
      ["redis", "garbage\r\n", "not a RESP answer"],
    ]
    node_a = @a.node
    cases.each do |scheme, answer, why|
      fake = IdforgeTest::FakeServer.new(answer)
      begin
        c = client(["#{scheme}://127.0.0.1:#{fake.port}", @a.http], buffer: false, timeout_ms: SLOW_OK)
        assert_equal node_a, node_of(c.snowflake), why
        state = c.server_states[0]
        assert_equal 1, state[:failures], why
        assert_includes state[:last_error], why
        assert_equal 1, fake.requests, why
      ensure
        fake.close
      end
    end
  end

  def test_an_answer_with_a_wrong_number_of_ids_is_a_server_failure
    two = '{"kind":"snowflake","ids":["1","2"]}'
    answers = {
      "http" => "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: #{two.size}\r\n\r\n#{two}",
      "redis" => "*2\r\n:1\r\n:2\r\n",
    }
    node_b = @b.node
    answers.each do |scheme, answer|
      fake = IdforgeTest::FakeServer.new(answer)
      begin
        url = "#{scheme}://127.0.0.1:#{fake.port}"
        c = client([url, @b.resp], buffer: false, timeout_ms: SLOW_OK, backoff_ms: 5000)
        # Asked for 1, answered 2: the other server answers the call.
        assert_equal node_b, node_of(c.snowflake), scheme
        state = c.server_states[0]
        assert_equal 1, state[:failures]
        assert_includes state[:last_error], "answered 2 IDs, asked for 1"
        assert_operator state[:backing_off_ms], :>, 4000, "the first is backing off"
        assert c.server_states[1][:current]
        # Batches too: the buffer asks for 8, the fake answers 2.
        c8 = client([url, @b.http], batch: 8, timeout_ms: SLOW_OK, backoff_ms: 5000)
        assert_equal node_b, node_of(c8.snowflake)
        assert_equal 7, c8.buffered
        assert_equal 2, fake.requests # one per client: then it backs off
      ensure
        fake.close
      end
    end
  end

  # -- wrong requests ----------------------------------------------------------------

  def test_a_wrong_request_is_an_error_at_once_without_failover
    refused_on_b = lambda do
      %w[http resp].product([400, 404]).sum do |p, st|
        @b.metric("idforge_requests_total", protocol: p, route: "segment", status: st)
      end
    end
    [[@a.http, @b.http], [@a.resp, @b.resp]].each do |servers|
      [true, false].each do |buffer|
        before = refused_on_b.call
        c = client(servers, buffer: buffer, timeout_ms: SLOW_OK)
        t0 = now
        e = assert_raises(Idforge::Error) { c.segment("no_such_tag") }
        assert_operator now - t0, :<, 2.0
        refute_kind_of Idforge::Unavailable, e
        assert_equal "not_found", e.code
        assert_includes e.text, "no_such_tag"
        assert_equal servers[0], e.server
        if servers[0].start_with?("http")
          assert_equal 404, e.status
        else
          assert_nil e.status
        end
        e = assert_raises(Idforge::Error) { c.segment("bad tag") }
        assert_equal "invalid_argument", e.code
        # B never heard of them; A is not counted as failed.
        assert_equal before, refused_on_b.call
        assert_equal [0, 0], c.server_states.map { |s| s[:failures] }
      end
    end
    c = client([@a.resp, @b.http], batch: 20_000)
    e = assert_raises(Idforge::Error) { c.snowflake } # above the server's limits.max_count
    assert_equal "out_of_range", e.code
  end

  # -- the buffer --------------------------------------------------------------------

  def test_old_time_ordered_ids_are_dropped_segment_ids_kept
    c = client([@a.http], batch: 50, max_age_ms: 200, timeout_ms: SLOW_OK)
    old = c.snowflake
    seg = c.segment("item")
    sleep 0.3
    t_ms = Time.now.to_f * 1000
    fresh = c.snowflake
    # A new batch (made now: a server that issued many IDs just before may run its
    # ticks ahead of the clock, so the old one's time says less).
    assert_operator Idforge::Client.parse(fresh)["unix_ms"], :>, t_ms - 150
    assert_operator fresh, :>, old
    assert_equal 49, c.buffered(:snowflake) # a new batch, less this one
    assert_equal 49, c.stats[:buffers].find { |b| b[:kind] == :snowflake }[:dropped] # the old one
    assert_equal seg + 1, c.segment("item") # no age limit
  end

  def test_threads_share_one_client_and_the_buffer_stays_bounded
    batch = 64
    below = 32
    ids = []
    errors = []
    most = 0
    lock = Mutex.new
    c = client([@a.resp, @b.http], batch: batch, refill_below: below, timeout_ms: SLOW_OK)
    threads = Array.new(6) do
      Thread.new do
        mine = []
        peak = 0
        1000.times do |i|
          mine << (i.odd? ? c.snowflake : c.segment("order"))
          peak = [peak, c.buffered(:snowflake), c.buffered(:segment, "order")].max
        end
        lock.synchronize do
          ids.concat(mine)
          most = [most, peak].max
        end
      rescue StandardError => e
        lock.synchronize { errors << e.full_message(highlight: false) }
      end
    end
    threads.each { |t| t.join(30) }
    assert_equal [], errors
    assert_equal 6 * 1000, ids.size
    assert_equal ids.size, ids.uniq.size
    assert_operator most, :<=, batch + below
  end

  def test_busy_threads_do_not_starve_a_waiting_one
    # More callers than a batch feeds: each refill hands its IDs to the callers waiting
    # for it first; otherwise a waiting caller can see every refill emptied by running
    # threads and give up after timeout_ms x servers.
    ids = []
    errors = []
    lock = Mutex.new
    c = client([@a.resp], batch: 16, timeout_ms: 1000)
    threads = Array.new(8) do
      Thread.new do
        mine = Array.new(3000) { c.snowflake }
        lock.synchronize { ids.concat(mine) }
      rescue StandardError => e
        lock.synchronize { errors << e.full_message(highlight: false) }
      end
    end
    threads.each { |t| t.join(60) }
    assert_equal [], errors
    assert_equal 8 * 3000, ids.uniq.size
  end

  def test_a_client_dropped_without_close_is_collected_and_its_refill_thread_ends
    before = Thread.list.count { |t| t.name == "idforge-refill" && t.alive? }
    spawn_dropped_clients(@a.resp, 5)
    assert_equal before + 5, Thread.list.count { |t| t.name == "idforge-refill" && t.alive? }
    deadline = now + 3
    left = nil
    loop do
      GC.start(full_mark: true, immediate_sweep: true)
      left = Thread.list.count { |t| t.name == "idforge-refill" && t.alive? } - before
      break if left <= 1 || now > deadline # a stale reference on a stack may keep one

      sleep 0.05
    end
    assert_operator left, :<=, 1
  end

  def spawn_dropped_clients(url, count)
    count.times do
      c = Idforge::Client.new(url, batch: 10)
      8.times { c.snowflake } # 2 left: a background refill starts the thread
    end
    sleep 0.1
    nil
  end

  def test_closed_client
    c = client([@a.http], timeout_ms: SLOW_OK)
    c.snowflake
    c.close
    e = assert_raises(Idforge::Error) { c.snowflake }
    assert_equal "closed", e.code
    refute_kind_of Idforge::Unavailable, e
    assert_equal "closed", assert_raises(Idforge::Error) { c.segment("order") }.code
    assert c.closed?
    c.close # twice is fine
    # A caller waiting on an empty buffer is woken with the same error.
    stopped = client([@a.resp], timeout_ms: 2000)
    @a.sigstop
    waiter = Thread.new do
      stopped.snowflake
    rescue Idforge::Error => e
      e
    end
    sleep 0.2
    t0 = now
    stopped.close
    got = waiter.value
    assert_operator now - t0, :<, 1.0, "close() ends the request under way"
    assert_kind_of Idforge::Error, got
    assert_equal "closed", got.code
  end
end
