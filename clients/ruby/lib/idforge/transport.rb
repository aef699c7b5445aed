# frozen_string_literal: true

require "io/wait"
require "json"
require "socket"
require "uri"
require_relative "errors"

module Idforge
  # One idforge server as the client sees it: its URL, its kept-alive connections and
  # one request (HTTP/1.1 JSON API or RESP2) with a deadline covering connect, send and
  # the whole answer. Its own small HTTP/1.1 rather than net/http, whose open, read and
  # write timeouts each bound one step, not the request (docs/clients.md: connect to
  # last byte), and whose only whole-request bound would be Timeout, an exception
  # raised into the thread at any point.
  class Server
    # The answers that say the request itself is wrong: every server would say the
    # same, so they are errors at once. Any other error answer is a server failure.
    WRONG_REQUEST_CODES = %w[invalid_argument out_of_range not_found].freeze
    WRONG_REQUEST_STATUSES = [400, 404, 409].freeze

    ROUTES = {
      snowflake: ["/v1/snowflake", "ID.SNOWFLAKE"],
      segment: ["/v1/segment/", "ID.NEXT"],
      uuid7: ["/v1/uuid7", "ID.UUID7"],
      ulid: ["/v1/ulid", "ID.ULID"],
    }.freeze
    INTEGER_KINDS = %i[snowflake segment].freeze
    MAX_U64 = (1 << 64) - 1
    MAX_HEADER_BYTES = 64 * 1024
    MAX_BODY_BYTES = 16 * 1024 * 1024
    IDLE_CONNECTIONS = 8 # kept per server; more concurrent requests open their own
    CRLF = "\r\n"

    # The server did not answer usefully: try another one.
    class Failure < StandardError
      alias reason message
    end

    # The deadline of the request passed.
    class TimedOut < StandardError; end

    # The server closed the connection (EOF).
    class Closed < StandardError; end

    # A socket with a read buffer; every wait is bounded by the request's deadline.
    class Connection
      attr_accessor :used, :got_bytes, :reusable

      def initialize(sock)
        @sock = sock
        @buf = String.new(capacity: 4096, encoding: Encoding::BINARY)
        @pos = 0 # bytes of @buf already read
        @used = false # answered a request before (kept alive)
        @got_bytes = false # bytes of the current answer arrived
        @reusable = true # false once the server said it closes the connection
      end

      # Bytes received beyond the answer read (a kept-alive connection has none).
      def pending?
        @pos < @buf.bytesize
      end

      def close
        @sock.close
      rescue IOError, SystemCallError
        nil
      end

      def write(data, deadline)
        until data.empty?
          n = @sock.write_nonblock(data, exception: false)
          if n == :wait_writable
            wait(deadline) { |left| @sock.wait_writable(left) }
          else
            data = data.byteslice(n..)
          end
        end
      end

      def fill(deadline)
        loop do
          data = @sock.read_nonblock(65_536, exception: false)
          case data
          when :wait_readable then wait(deadline) { |left| @sock.wait_readable(left) }
          when nil then raise Closed, "the server closed the connection"
          else
            @got_bytes = true
            if @pos == @buf.bytesize
              @buf.clear
              @pos = 0
            elsif @pos > 65_536
              @buf = @buf.byteslice(@pos..)
              @pos = 0
            end
            @buf << data
            return
          end
        end
      end

      def read_line(deadline, limit = MAX_HEADER_BYTES)
        scanned = 0 # bytes after @pos known to hold no CRLF (fill may move @pos)
        loop do
          i = @buf.index(CRLF, @pos + scanned) # @buf is binary: a byte offset
          if i
            line = @buf.byteslice(@pos, i - @pos)
            @pos = i + 2
            return line
          end
          raise Failure, "an answer line is too long" if @buf.bytesize - @pos > limit

          scanned = [@buf.bytesize - @pos - 1, 0].max
          fill(deadline)
        end
      end

      # The next +n+ lines as one String, each with its line end: counted in C, since
      # the answer is normally all that is buffered.
      def read_lines(n, deadline)
        loop do
          tail = @buf.byteslice(@pos, @buf.bytesize - @pos)
          ends = tail.count("\n")
          if ends >= n
            size = tail.bytesize
            if ends > n # more than the answer buffered: up to the n-th line end
              size = 0
              n.times { size = tail.index("\n", size) + 1 }
              tail = tail.byteslice(0, size)
            end
            @pos += size
            return tail
          end
          raise Failure, "the answer is too large" if tail.bytesize > MAX_BODY_BYTES

          fill(deadline)
        end
      end

      def read_exact(n, deadline)
        fill(deadline) while @buf.bytesize - @pos < n
        data = @buf.byteslice(@pos, n)
        @pos += n
        data
      end

      def read_to_eof(deadline)
        loop do
          raise Failure, "the answer is too large" if @buf.bytesize - @pos > MAX_BODY_BYTES

          fill(deadline)
        end
      rescue Closed
        data = @buf.byteslice(@pos..)
        @pos = @buf.bytesize
        data
      end

      private

      def wait(deadline)
        left = deadline - Server.now
        raise TimedOut if left <= 0
        raise TimedOut unless yield(left)
      end
    end

    attr_reader :url, :scheme, :host, :port
    # Failover state, kept by the client under its lock.
    attr_accessor :failures, :backoff_until, :last_failure, :last_error

    def self.now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    # "http://HOST:PORT" or "redis://HOST:PORT" -> [scheme, host, port].
    def self.parse_url(url)
      raise TypeError, "a server is a URL String, got #{url.inspect}" unless url.is_a?(String)

      begin
        uri = URI.parse(url.strip)
      rescue URI::Error => e
        raise ArgumentError, "server #{url.inspect}: #{e.message}"
      end
      scheme = uri.scheme&.downcase
      unless %w[http redis].include?(scheme)
        raise ArgumentError, "server #{url.inspect}: the scheme must be http:// (the JSON API) or " \
                             "redis:// (the Redis protocol)"
      end
      host = uri.host.to_s.delete_prefix("[").delete_suffix("]")
      raise ArgumentError, "server #{url.inspect} has no host" if host.empty?
      raise ArgumentError, "server #{url.inspect}: idforge servers take no user or password" if uri.userinfo
      if !["", "/"].include?(uri.path.to_s) || uri.query || uri.fragment
        raise ArgumentError, "server #{url.inspect}: give only scheme://HOST:PORT"
      end

      port = uri.port || (scheme == "http" ? 80 : 6380) # idforge's RESP port
      raise ArgumentError, "server #{url.inspect}: port #{port} is not in 1..65535" unless (1..65_535).cover?(port)

      [scheme, host, port]
    end

    def initialize(url)
      @scheme, @host, @port = Server.parse_url(url)
      bracketed = @host.include?(":") ? "[#{@host}]" : @host
      @url = "#{@scheme}://#{bracketed}:#{@port}"
      @host_header = "#{bracketed}:#{@port}"
      @idle = []
      @busy = {} # connections of requests under way (a Hash as an ordered set)
      @lock = Mutex.new
      @closed = false
      @failures = 0
      @backoff_until = 0.0
      @last_failure = 0.0
      @last_error = ""
    end

    # Closes every connection: the idle ones, and those of requests under way, which
    # end at once (Ruby raises IOError in a thread waiting on a socket another closes).
    def close
      conns = @lock.synchronize do
        @closed = true
        list = @idle + @busy.keys
        @idle = []
        @busy = {}
        list
      end
      conns.each(&:close)
    end

    # +count+ IDs of +kind+ (Integers for snowflake and segment, Strings otherwise),
    # within +timeout_ms+. Raises Failure (try another server) or Idforge::Error (the
    # request is wrong).
    def fetch(kind, tag, count, timeout_ms)
      deadline = Server.now + timeout_ms / 1000.0
      conn = checkout
      loop do
        begin
          conn ||= connect(deadline)
          conn.got_bytes = false
          ids = @scheme == "http" ? http(conn, kind, tag, count, deadline) : resp(conn, kind, tag, count, deadline)
        rescue Idforge::Error
          release(conn) # a whole answer: the connection is fine
          raise
        rescue Failure
          discard(conn)
          raise
        rescue TimedOut
          discard(conn)
          raise Failure, "timed out after #{timeout_ms} ms"
        rescue Closed, IOError, SystemCallError, SocketError => e
          reused = conn&.used && !conn.got_bytes
          discard(conn)
          raise Failure, "the client was closed" if @closed
          if reused
            # A kept-alive connection the server has closed meanwhile (its idle
            # timeout, a restart): one fresh connection within the same deadline.
            conn = nil
            next
          end
          raise Failure, Server.reason(e)
        end
        release(conn)
        # Any answer other than the IDs asked for is a failure (docs/clients.md).
        raise Failure, "answered #{ids.size} IDs, asked for #{count}" if ids.size != count

        return ids
      end
    end

    def self.reason(error)
      case error
      when Errno::ECONNREFUSED then "connection refused"
      when Errno::ECONNRESET then "connection reset"
      when Errno::EPIPE then "connection closed while sending"
      when Errno::ETIMEDOUT then "connect timed out"
      when Closed then "the server closed the connection"
      when SocketError then "cannot resolve host: #{error.message}"
      when SystemCallError then error.message.sub(/ - .*\z/m, "")
      else error.message
      end
    end

    private

    # An idle kept-alive connection, or nil; it counts as busy until released.
    def checkout
      @lock.synchronize do
        raise Failure, "the client was closed" if @closed

        conn = @idle.pop
        @busy[conn] = true if conn
        conn
      end
    end

    # Back to the idle ones (or closed), once its answer was read whole.
    def release(conn)
      return if conn.nil?

      conn.used = true
      keep = @lock.synchronize do
        @busy.delete(conn)
        if !@closed && conn.reusable && !conn.pending? && @idle.size < IDLE_CONNECTIONS
          @idle.push(conn)
          true
        end
      end
      conn.close unless keep
    end

    def discard(conn)
      return if conn.nil?

      @lock.synchronize { @busy.delete(conn) }
      conn.close
    end

    def connect(deadline)
      left = deadline - Server.now
      raise TimedOut if left <= 0

      sock = open_socket(deadline)
      sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
      conn = Connection.new(sock)
      closed = @lock.synchronize do
        @busy[conn] = true unless @closed
        @closed
      end
      if closed
        conn.close
        raise Failure, "the client was closed"
      end
      conn
    end

    # Resolves the host and connects to its addresses in turn, all within the deadline.
    def open_socket(deadline)
      begin
        addresses = Addrinfo.getaddrinfo(@host, @port, nil, :STREAM, nil, 0, timeout: deadline - Server.now)
      rescue SocketError
        raise TimedOut if deadline <= Server.now

        raise
      end
      error = nil
      addresses.each do |ai|
        left = deadline - Server.now
        raise TimedOut if left <= 0

        begin
          return ai.connect(timeout: left)
        rescue Errno::ETIMEDOUT
          raise TimedOut if deadline <= Server.now

          error = Errno::ETIMEDOUT.new
        rescue SystemCallError => e
          error = e
        end
      end
      raise error || SocketError.new("no address for #{@host}")
    end

    def http(conn, kind, tag, count, deadline)
      path = ROUTES.fetch(kind)[0]
      path += URI.encode_www_form_component(tag).gsub("+", "%20") if kind == :segment
      conn.write("GET #{path}?count=#{count} HTTP/1.1\r\nHost: #{@host_header}\r\n" \
                 "User-Agent: idforge-ruby/#{VERSION}\r\nAccept: application/json\r\n\r\n".b, deadline)
      status_line = conn.read_line(deadline)
      version, status, = status_line.split(" ", 3)
      unless version&.start_with?("HTTP/1.") && status&.match?(/\A[0-9]{3}\z/)
        raise Failure, "not an HTTP answer: #{status_line[0, 80].inspect}"
      end

      status = status.to_i
      length = nil
      close = version == "HTTP/1.0"
      total = 0
      loop do
        line = conn.read_line(deadline)
        total += line.bytesize + 2
        raise Failure, "the answer's headers are too large" if total > MAX_HEADER_BYTES
        break if line.empty?

        name, value = line.split(":", 2)
        value = value.to_s.strip
        case name.strip.downcase
        when "content-length"
          raise Failure, "bad Content-Length #{value[0, 40].inspect}" unless value.match?(/\A[0-9]{1,9}\z/)

          length = value.to_i
          raise Failure, "the answer is too large (#{length} bytes)" if length > MAX_BODY_BYTES
        when "connection"
          tokens = value.downcase
          close = tokens.include?("close") || (close && !tokens.include?("keep-alive"))
        when "transfer-encoding"
          raise Failure, "a Transfer-Encoding answer (idforge sends Content-Length)"
        end
      end
      if length.nil?
        body = conn.read_to_eof(deadline)
        close = true
      else
        body = conn.read_exact(length, deadline)
      end
      conn.reusable = false if close

      unless (200..299).cover?(status)
        code, text = http_error(body, status)
        raise Idforge::Error.new(text, code: code, server: @url, status: status) if WRONG_REQUEST_STATUSES.include?(status)

        raise Failure, "HTTP #{status} #{code}: #{text}"
      end
      ids_of_json(kind, body)
    end

    def ids_of_json(kind, body)
      doc = JSON.parse(body.force_encoding(Encoding::UTF_8))
      ids = doc.is_a?(Hash) ? doc["ids"] : nil
      raise Failure, "a malformed answer (no ids): #{body[0, 80].inspect}" unless ids.is_a?(Array) && !ids.empty?
      raise Failure, "a malformed answer (ids are not text): #{body[0, 80].inspect}" unless ids.all?(String)
      return ids unless INTEGER_KINDS.include?(kind)

      ids.map do |text|
        # Decimal text straight to an Integer: never through a Float.
        raise Failure, "a malformed answer (ID #{text[0, 30].inspect})" unless text.match?(/\A[0-9]{1,20}\z/)

        value = text.to_i
        raise Failure, "a malformed answer (ID #{text} above 2^64-1)" if value > MAX_U64

        value
      end
    rescue JSON::ParserError, EncodingError => e
      raise Failure, "a malformed answer (#{e.class.name.split('::').last}): #{body[0, 80].inspect}"
    end

    def http_error(body, status)
      err = JSON.parse(body.dup.force_encoding(Encoding::UTF_8))["error"]
      raise TypeError unless err.is_a?(Hash) && err.key?("code")

      [err["code"].to_s, err["message"].to_s]
    rescue JSON::ParserError, TypeError, NoMethodError, EncodingError
      text = body[0, 200].dup.force_encoding(Encoding::UTF_8).scrub.strip
      ["http_#{status}", text.empty? ? "HTTP #{status}" : text]
    end

    def resp(conn, kind, tag, count, deadline)
      args = [ROUTES.fetch(kind)[1]]
      args << tag if kind == :segment
      args << count.to_s
      out = +"*#{args.size}\r\n"
      args.each { |a| out << "$#{a.bytesize}\r\n" << a.b << CRLF }
      conn.write(out.b, deadline)
      first = conn.read_line(deadline)
      if INTEGER_KINDS.include?(kind) && (n = array_length(first))
        # The usual answer, read whole in a few C calls rather than line by line.
        block = conn.read_lines(n, deadline)
        return integer_lines(block, n) || raise(Failure, "a malformed answer (not IDs): #{block[0, 80].inspect}")
      end
      reply = read_reply(conn, deadline, 0, first)
      if reply.is_a?(RespError)
        # -ERR not_found: unknown tag 'x' ... (src/server/resp/resp_reply.cc)
        word, rest = reply.text.split(" ", 2)
        code, message = rest.to_s.split(":", 2)
        code = code.to_s.strip
        if word == "ERR" && message && WRONG_REQUEST_CODES.include?(code)
          raise Idforge::Error.new(message.strip, code: code, server: @url)
        end

        raise Failure, reply.text
      end
      raise Failure, "unexpected answer #{reply.inspect[0, 80]}" unless reply.is_a?(Array) && !reply.empty?

      if INTEGER_KINDS.include?(kind)
        unless reply.all? { |x| x.is_a?(Integer) && x >= 0 && x <= MAX_U64 }
          raise Failure, "a malformed answer (not IDs): #{reply.inspect[0, 80]}"
        end

        return reply
      end
      unless reply.all? { |x| x.is_a?(String) && x.ascii_only? }
        raise Failure, "a malformed answer (not text IDs): #{reply.inspect[0, 80]}"
      end

      reply.map { |x| x.dup.force_encoding(Encoding::US_ASCII) }
    end

    RespError = Struct.new(:text)

    # The n Integers of RESP lines ":N\r\n" x n, or nil when that is not what they are;
    # a few C calls for the whole answer rather than some per line.
    def integer_lines(block, n)
      return nil unless block.start_with?(":") && block.end_with?(CRLF)

      inner = block.byteslice(1, block.bytesize - 3) # "N\r\n:N ... \r\n:N"
      pieces = inner.split("\r\n:", -1)
      # n pieces, and every byte but those of the n - 1 separators a digit.
      return nil unless pieces.size == n && inner.count("0-9") == inner.bytesize - 3 * (n - 1)
      return nil if pieces.include?("")

      ids = pieces.map!(&:to_i)
      ids.max > MAX_U64 ? nil : ids
    end

    # N of a RESP array header "*N" (N >= 1), else nil.
    def array_length(line)
      return nil unless line.start_with?("*") && line.match?(/\A\*[0-9]{1,7}\z/)

      n = line.byteslice(1..).to_i
      n.positive? ? n : nil
    end

    # One RESP2 reply (RESP3 scalars too): Integer, String, nil, Array or RespError.
    def read_reply(conn, deadline, depth = 0, line = nil)
      line ||= conn.read_line(deadline)
      raise Failure, "an empty RESP line" if line.empty?

      type = line[0]
      rest = line.byteslice(1..)
      case type
      when "+" then rest
      when "-" then RespError.new(rest.dup.force_encoding(Encoding::UTF_8).scrub)
      when ":"
        raise Failure, "bad RESP integer #{rest[0, 40].inspect}" unless rest.match?(/\A-?[0-9]{1,20}\z/)

        rest.to_i
      when "$", "*", "~", ">", "%"
        raise Failure, "bad RESP length #{rest[0, 40].inspect}" unless rest.match?(/\A-?[0-9]{1,10}\z/)

        n = rest.to_i
        return nil if n.negative?

        if type == "$"
          raise Failure, "a RESP string is too large" if n > MAX_BODY_BYTES

          return conn.read_exact(n + 2, deadline).byteslice(0, n)
        end
        raise Failure, "a RESP array is too large or too deep" if depth > 8 || n > 1_000_000

        n *= 2 if type == "%"
        Array.new(n) { read_reply(conn, deadline, depth + 1) }
      when "_" then nil
      else raise Failure, "not a RESP answer: #{line[0, 80].inspect}"
      end
    end
  end
end
