# frozen_string_literal: true

require_relative "version"
require_relative "errors"
require_relative "layout"
require_relative "transport"

module Idforge
  # IDs from a list of idforge servers, through the loss of any of them
  # (docs/clients.md, "The behaviour").
  #
  #   ids = Idforge::Client.new(["http://10.0.0.1:8080", "redis://10.0.0.2:6380"])
  #   ids.snowflake      # => 910499571847892992
  #   ids.segment("order")
  #   ids.uuid7; ids.ulid
  #   ids.close
  #
  # A request goes to the server that answered last; a failed one is retried at once on
  # the next, each server at most once, and a failed server is skipped for +backoff_ms+
  # doubling to +max_backoff_ms+. A buffer per kind and segment tag holds up to +batch+
  # + +refill_below+ IDs, refilled by one background thread. Thread-safe: one client
  # per process, shared by its threads.
  class Client
    KINDS = %i[snowflake segment uuid7 ulid].freeze

    # Client.open(servers, **options) { |ids| ... } closes the client after the block.
    def self.open(servers, **options)
      client = new(servers, **options)
      return client unless block_given?

      begin
        yield client
      ensure
        client.close
      end
    end

    # Decodes a Snowflake ID without a server: Idforge.parse.
    def self.parse(id, layout = "twitter", epoch_ms: nil, tick_ms: nil)
      Idforge.parse(id, layout, epoch_ms: epoch_ms, tick_ms: tick_ms)
    end

    # +servers+: a URL or a list of "http://HOST:PORT" (port 80 when left out) and
    # "redis://HOST:PORT" (port 6380). Options as in docs/clients.md; ArgumentError or
    # TypeError for a bad one.
    def initialize(servers, timeout_ms: 1000, batch: 256, refill_below: nil, max_age_ms: 2000,
                   segment_max_age_ms: 0, backoff_ms: 500, max_backoff_ms: 30_000, buffer: true)
      servers = [servers] if servers.is_a?(String)
      raise TypeError, "servers must be a URL or an Array of URLs, got #{servers.inspect}" unless servers.is_a?(Array)
      raise ArgumentError, "a Client needs at least one server URL" if servers.empty?

      batch = check_int(:batch, batch, 1)
      raise TypeError, "buffer must be true or false, got #{buffer.inspect}" unless [true, false].include?(buffer)

      @engine = Engine.new(
        servers.map { |url| Server.new(url) },
        timeout_ms: check_int(:timeout_ms, timeout_ms, 1),
        batch: batch,
        refill_below: check_int(:refill_below, refill_below.nil? ? batch / 2 : refill_below, 0, batch),
        max_age_s: check_int(:max_age_ms, max_age_ms || 0, 0) / 1000.0,
        segment_max_age_s: check_int(:segment_max_age_ms, segment_max_age_ms || 0, 0) / 1000.0,
        backoff_s: check_int(:backoff_ms, backoff_ms, 0) / 1000.0,
        max_backoff_s: check_int(:max_backoff_ms, max_backoff_ms, backoff_ms) / 1000.0,
        buffered: buffer && batch > 1
      )
      # The refill thread holds the engine, never this object: a client dropped without
      # close() is collected, and its finalizer stops the thread.
      ObjectSpace.define_finalizer(self, Client.send(:finalizer, @engine))
    end

    # -- the IDs ---------------------------------------------------------------------

    # The next Snowflake ID (an Integer).
    def snowflake
      @engine.take_id(:snowflake, nil)
    end

    # The next segment ID of +tag+ (an Integer).
    def segment(tag)
      @engine.take_id(:segment, check_tag(tag))
    end

    # The next UUIDv7, as text.
    def uuid7
      @engine.take_id(:uuid7, nil)
    end

    # The next ULID, as text.
    def ulid
      @engine.take_id(:ulid, nil)
    end

    # The next ID of +kind+ (:snowflake, :segment with +tag+, :uuid7, :ulid).
    def next(kind = :snowflake, tag = nil)
      kind = check_kind(kind, tag)
      @engine.take_id(kind, kind == :segment ? check_tag(tag) : nil)
    end

    # +n+ IDs (from the buffer; without it, in requests of up to +batch+).
    def snowflakes(count)
      @engine.take_many(:snowflake, nil, check_int(:count, count, 0))
    end

    def segments(tag, count)
      @engine.take_many(:segment, check_tag(tag), check_int(:count, count, 0))
    end

    def uuid7s(count)
      @engine.take_many(:uuid7, nil, check_int(:count, count, 0))
    end

    def ulids(count)
      @engine.take_many(:ulid, nil, check_int(:count, count, 0))
    end

    # -- looking inside --------------------------------------------------------------

    # The server URLs, normalised (with their ports), in list order.
    def servers
      @engine.servers.map(&:url)
    end

    # How many IDs the buffer of +kind+ (and +tag+) holds now.
    def buffered(kind = :snowflake, tag = nil)
      kind = check_kind(kind, tag)
      @engine.buffered(kind == :segment ? tag.to_s : kind)
    end

    # Each server's failover state: url, failures in a row, ms of back-off left, the
    # last error, and whether it answered last.
    def server_states
      @engine.server_states
    end

    # The servers (server_states) and each buffer: size, refill under way, IDs dropped
    # by the age limit, refills done and the last refill's error.
    def stats
      @engine.stats
    end

    def closed?
      @engine.closed?
    end

    def inspect
      "#<#{self.class.name} #{servers.join(', ')}#{closed? ? ' (closed)' : ''}>"
    end

    # Stops the refill thread, closes the idle connections and drops the buffers (their
    # IDs are never issued again: a gap). Requests under way end at once (their
    # sockets are closed; a connect in progress ends within its timeout). Callers
    # waiting, and every later call, raise Idforge::Error code "closed".
    def close
      @engine.close
      ObjectSpace.undefine_finalizer(self)
      nil
    end

    class << self
      private

      # Stops the refill thread of a client collected without close().
      def finalizer(engine)
        proc { engine.abandon }
      end
    end

    private

    def check_int(name, value, low, high = nil)
      raise TypeError, "#{name} must be an Integer, got #{value.inspect}" unless value.is_a?(Integer)
      if value < low || (high && value > high)
        bound = high ? "from #{low} to #{high}" : ">= #{low}"
        raise ArgumentError, "#{name} must be #{bound}, got #{value}"
      end
      value
    end

    def check_tag(tag)
      tag = tag.to_s if tag.is_a?(Symbol)
      raise ArgumentError, "a segment tag is a non-empty String, got #{tag.inspect}" unless tag.is_a?(String) && !tag.empty?

      tag.frozen? ? tag : tag.dup.freeze
    end

    def check_kind(kind, tag)
      kind = kind.to_sym if kind.is_a?(String)
      unless KINDS.include?(kind) && (kind == :segment || tag.nil?)
        raise ArgumentError, "kind must be one of #{KINDS.join(', ')} (a tag only with segment), got #{kind.inspect}"
      end

      kind
    end
  end

  # What a Client does: the servers' failover state, the buffers and the refill thread.
  class Client::Engine
    IDLE = :idle
    QUEUED = :queued # waits for the refill thread
    RUNNING = :running
    NO_ID = Object.new.freeze
    CLAIMED = Object.new.freeze
    AGAIN = Object.new.freeze

    # A background refill found every server backing off and tried none.
    class NothingTried < StandardError; end

    # A caller waiting on an empty buffer: a refill hands it an ID first.
    Slot = Struct.new(:value)

    # The IDs of one kind (and tag), in batches [fetched_at, ids] oldest first.
    class Buffer
      attr_reader :kind, :tag, :what, :lock, :cond, :max_age, :waiters, :size, :dropped
      attr_accessor :state, :gen, :error, :retry_at, :refills

      def initialize(kind, tag, max_age_s)
        @kind = kind
        @tag = tag
        @what = tag.nil? ? "#{kind} IDs" : "segment IDs of tag '#{tag}'"
        @lock = Mutex.new
        @cond = ConditionVariable.new
        @max_age = max_age_s # 0: no age limit
        @chunks = []
        @size = 0
        @state = IDLE
        @gen = 0 # counts finished refills
        @error = nil # of the last refill, nil when it worked
        @retry_at = 0.0 # no background refill before this (monotonic)
        @dropped = 0 # IDs dropped by the age limit
        @refills = 0
        @waiters = [] # Slots, in the order their callers came
      end

      def expire(now)
        while (chunk = @chunks.first) && now - chunk[0] > @max_age
          @chunks.shift
          @size -= chunk[1].size
          @dropped += chunk[1].size
        end
      end

      def take
        ids = @chunks.first[1]
        value = ids.shift
        @chunks.shift if ids.empty?
        @size -= 1
        value
      end

      def push(ids, fetched_at)
        @chunks << [fetched_at, ids]
        @size += ids.size
      end

      def clear
        @chunks.clear
        @size = 0
      end
    end

    attr_reader :servers

    def initialize(servers, timeout_ms:, batch:, refill_below:, max_age_s:, segment_max_age_s:, backoff_s:,
                   max_backoff_s:, buffered:)
      @servers = servers.freeze
      @timeout_ms = timeout_ms
      @batch = batch
      @refill_below = refill_below
      @max_age_s = max_age_s
      @segment_max_age_s = segment_max_age_s
      @backoff_s = backoff_s
      @max_backoff_s = max_backoff_s
      @buffered = buffered
      @lock = Mutex.new # the servers' failover state and @current
      @current = 0 # the server that answered last
      @buffers = {}.freeze # kind (Symbol) or segment tag (String) => Buffer; copied on write
      @buffers_lock = Mutex.new
      @queue = Thread::Queue.new # buffers for the refill thread; nil stops it
      @thread = nil
      @thread_lock = Mutex.new
      @closed = false
    end

    def closed?
      @closed
    end

    def take_id(kind, tag)
      raise closed_error if @closed
      return request(kind, tag, 1, true)[0][0] unless @buffered

      buf = @buffers[tag || kind] || buffer_for(kind, tag)
      value = NO_ID
      queued = false
      buf.lock.synchronize do
        buf.expire(Server.now) if buf.max_age.positive?
        if buf.size.positive?
          value = buf.take
          queued = maybe_refill(buf) if buf.size < @refill_below && buf.state == IDLE
        end
      end
      return next_slow(buf) if value.equal?(NO_ID)

      # The refill thread needs the GVL to send its request, and a thread taking
      # buffered IDs would keep it until its time slice ends or the buffer is empty:
      # hand it over now, so that the answer comes while this thread takes IDs.
      Thread.pass if queued
      value
    end

    def take_many(kind, tag, count)
      return Array.new(count) { take_id(kind, tag) } if @buffered
      raise closed_error if @closed

      out = []
      out.concat(request(kind, tag, [@batch, count - out.size].min, true)[0]) while out.size < count
      out
    end

    def buffered(key)
      buf = @buffers[key]
      buf ? buf.lock.synchronize { buf.size } : 0
    end

    def server_states
      now = Server.now
      @lock.synchronize do
        @servers.each_with_index.map do |s, i|
          { url: s.url, failures: s.failures, backing_off_ms: [((s.backoff_until - now) * 1000).round, 0].max,
            last_error: s.last_error, current: i == @current }
        end
      end
    end

    def stats
      buffers = @buffers.values.map do |b|
        b.lock.synchronize do
          { kind: b.kind, tag: b.tag, size: b.size, refilling: b.state != IDLE, dropped: b.dropped,
            refills: b.refills, last_error: b.error&.message }
        end
      end
      { servers: server_states, buffers: buffers }
    end

    # The Client was collected without close(): a finalizer runs this, where no Mutex
    # may be taken, so the refill thread closes the connections as it ends.
    def abandon
      @closed = true
      @queue << nil # Thread::Queue works in a finalizer (and a trap handler)
    end

    def close
      return if @closed

      @closed = true
      @queue << nil
      @buffers.each_value do |buf|
        buf.lock.synchronize do
          buf.clear
          buf.cond.broadcast
        end
      end
      @servers.each(&:close)
      thread = @thread
      thread.join(0.2) if thread && thread != Thread.current
      nil
    end

    private

    def closed_error
      Idforge::Error.new("the client is closed", code: "closed")
    end

    def what(kind, tag)
      tag.nil? ? "#{kind} IDs" : "segment IDs of tag '#{tag}'"
    end

    # -- the buffer --------------------------------------------------------------------

    def buffer_for(kind, tag)
      key = tag || kind
      @buffers_lock.synchronize do
        buf = @buffers[key]
        unless buf
          buf = Buffer.new(kind, tag, kind == :segment ? @segment_max_age_s : @max_age_s)
          @buffers = @buffers.merge(key => buf).freeze
        end
        buf
      end
    end

    # The buffer is empty: wait for the refill in progress, or run one in this thread,
    # for at most timeout_ms times the number of servers.
    def next_slow(buf)
      wait_s = @timeout_ms * @servers.size / 1000.0
      deadline = Server.now + wait_s
      loop do
        outcome = buf.lock.synchronize { wait_or_claim(buf, deadline, wait_s) }
        next if outcome.equal?(AGAIN)
        return outcome unless outcome.equal?(CLAIMED)

        value = refill(buf, must_try: true, take_one: true, deadline: deadline)
        return value unless value.equal?(NO_ID)
      end
    end

    # Under buf.lock: an ID; AGAIN (look again); or CLAIMED: this thread runs the refill
    # (the buffer was idle, or queued: the refill thread skips one no longer queued).
    def wait_or_claim(buf, deadline, wait_s)
      raise closed_error if @closed

      buf.expire(Server.now) if buf.max_age.positive?
      if buf.size.positive?
        value = buf.take
        maybe_refill(buf) if buf.size < @refill_below && buf.state == IDLE
        return value
      end
      return wait_for_refill(buf, deadline, wait_s) if buf.state == RUNNING
      raise waited_too_long(buf, wait_s, "other callers took the IDs of the refills") if deadline - Server.now <= 0.001

      buf.state = RUNNING
      CLAIMED
    end

    def wait_for_refill(buf, deadline, wait_s)
      gen = buf.gen
      slot = Slot.new(NO_ID)
      buf.waiters << slot
      begin
        while slot.value.equal?(NO_ID) && buf.gen == gen && !@closed
          left = deadline - Server.now
          raise waited_too_long(buf, wait_s, "the refill in progress has not finished") if left <= 0

          buf.cond.wait(buf.lock, left)
        end
      ensure
        buf.waiters.delete_if { |s| s.equal?(slot) } if slot.value.equal?(NO_ID)
      end
      return slot.value unless slot.value.equal?(NO_ID)
      raise closed_error if @closed
      raise buf.error.copy if buf.size.zero? && buf.error

      AGAIN
    end

    def waited_too_long(buf, wait_s, why)
      Unavailable.new("no #{buf.what} within #{(wait_s * 1000).round} ms (timeout_ms x #{@servers.size} " \
                      "servers): #{why}; servers: #{describe_servers}", server_errors)
    end

    # Queues a background refill (called under buf.lock, the buffer below refill_below
    # and idle) unless a failed one asked to wait; true when it did.
    def maybe_refill(buf)
      return false if @closed || (buf.retry_at.positive? && Server.now < buf.retry_at)

      buf.state = QUEUED
      @queue << buf
      start_refill_thread unless @thread
      true
    end

    def start_refill_thread
      @thread_lock.synchronize do
        @thread ||= Thread.new do
          while (buf = @queue.pop)
            break if @closed

            background_refill(buf)
          end
          @servers.each(&:close) # after close(), again; after abandon, the only time
        end.tap do |t|
          t.name = "idforge-refill"
          t.report_on_exception = false
        end
      end
    end

    def background_refill(buf)
      claimed = buf.lock.synchronize do
        next false unless buf.state == QUEUED

        buf.state = RUNNING
        true
      end
      refill(buf, must_try: false, take_one: false) if claimed
    rescue StandardError
      nil # kept in buf.error; a caller meets it when the buffer is empty
    end

    # One request of +batch+ IDs into +buf+ (whose state is RUNNING). must_try false
    # (the background): when every server is backing off, none is tried. take_one:
    # returns the first ID to the calling thread. The error is kept and raised.
    def refill(buf, must_try:, take_one:, deadline: nil)
      ids = error = fetched_at = nil
      value = NO_ID
      begin
        ids, fetched_at = request(buf.kind, buf.tag, @batch, must_try, deadline)
      rescue Idforge::Error => e
        error = e
      rescue NothingTried
        nil
      ensure
        buf.lock.synchronize do
          buf.state = IDLE
          buf.gen += 1
          if ids
            buf.refills += 1
            buf.error = nil
            buf.retry_at = 0.0
            unless @closed
              value = ids.shift if take_one
              buf.waiters.shift.value = ids.shift until ids.empty? || buf.waiters.empty?
              buf.push(ids, fetched_at) unless ids.empty?
            end
          else
            # A failure, or nothing tried (the background, every server backing off):
            # no background refill before a server's period ends; a caller that
            # finds the buffer empty tries at once.
            buf.error = error
            buf.retry_at = retry_time(error)
          end
          buf.cond.broadcast
        end
      end
      raise error if error

      value
    end

    # When a background refill may start again after one that got no IDs.
    def retry_time(error)
      now = Server.now
      return now + @backoff_s if error && !error.is_a?(Unavailable) # a wrong request: not on every call

      @lock.synchronize { [now, @servers.map(&:backoff_until).min].max }
    end

    # -- failover ----------------------------------------------------------------------

    # +count+ IDs from the first server that answers, from the one that answered last,
    # skipping those backing off; each server at most once, each try within timeout_ms
    # (and what is left before +deadline+). must_try: when every server left is
    # backing off, try them too, the one whose period ends first first. Returns
    # [ids, when the request was sent].
    def request(kind, tag, count, must_try, deadline = nil)
      n = @servers.size
      start = @lock.synchronize { @current }
      tried = {}
      n.times do |k|
        i = (start + k) % n
        next if @lock.synchronize { Server.now < @servers[i].backoff_until }
        break if deadline && deadline - Server.now <= 0.001

        ids, sent_at, why = attempt(i, kind, tag, count, deadline)
        return [ids, sent_at] if ids

        tried[i] = why
      end
      raise NothingTried if tried.empty? && !must_try

      if must_try
        rest = @lock.synchronize do
          (0...n).reject { |j| tried.key?(j) }.sort_by { |j| [@servers[j].backoff_until, j] }
        end
        rest.each do |i|
          break if !tried.empty? && deadline && deadline - Server.now <= 0.001

          ids, sent_at, why = attempt(i, kind, tag, count, deadline)
          return [ids, sent_at] if ids

          tried[i] = why
        end
      end
      errors = server_errors(tried)
      raise Unavailable.new("no idforge server could give #{what(kind, tag)}: " \
                            "#{errors.map { |url, why| "#{url} #{why}" }.join('; ')}", errors)
    end

    def attempt(index, kind, tag, count, deadline)
      raise closed_error if @closed

      server = @servers[index]
      sent_at = Server.now
      timeout_ms = @timeout_ms
      timeout_ms = ((deadline - sent_at) * 1000).round.clamp(1, timeout_ms) if deadline
      begin
        ids = server.fetch(kind, tag, count, timeout_ms)
      rescue Server::Failure => e
        raise closed_error if @closed # close() ended the request: not the server's failure

        failed(server, e.reason, sent_at)
        return [nil, sent_at, e.reason]
      rescue Idforge::Error
        answered(index) # the server is well; the request is wrong
        raise
      end
      answered(index)
      [ids, sent_at, nil]
    end

    def answered(index)
      @lock.synchronize do
        s = @servers[index]
        s.failures = 0
        s.backoff_until = 0.0
        s.last_error = ""
        @current = index
      end
    end

    def failed(server, reason, started)
      @lock.synchronize do
        now = Server.now
        server.last_error = reason
        # A failure another thread saw during this same attempt is counted already.
        next if server.last_failure >= started

        server.failures += 1
        period = @backoff_s * (2**[server.failures - 1, 40].min)
        server.backoff_until = now + [period, @max_backoff_s].min
        server.last_failure = now
      end
    end

    # [url, why] for every server: its error in this request, or its back-off.
    def server_errors(tried = {})
      now = Server.now
      @lock.synchronize do
        @servers.each_with_index.map do |s, i|
          why = if tried.key?(i)
                  "failed: #{tried[i]}"
                elsif s.backoff_until > now
                  "skipped: backing off #{((s.backoff_until - now) * 1000).round} ms more after #{s.failures} " \
                    "failure#{s.failures == 1 ? '' : 's'} in a row (last: #{s.last_error})"
                elsif !s.last_error.empty?
                  "last failed: #{s.last_error}"
                else
                  "not tried"
                end
          [s.url, why]
        end
      end
    end

    def describe_servers
      server_errors.map { |url, why| "#{url} #{why}" }.join("; ")
    end
  end
  Client.send(:private_constant, :Engine)
end
