# frozen_string_literal: true

module Idforge
  # A server refused the request itself (a bad tag, a bad count, ...), or the client
  # is closed (code "closed"). Such a request is never retried on another server:
  # every server would give the same answer.
  #
  #   e.code    # "not_found", "invalid_argument", "out_of_range", "already_exists", "closed"
  #   e.text    # the server's text: "unknown tag 'x' ..."
  #   e.server  # the URL of the server that answered, or nil
  #   e.status  # the HTTP status, nil for the Redis protocol
  #   e.message # "not_found: unknown tag 'x' ... (from http://10.0.0.1:8080)"
  class Error < StandardError
    attr_reader :code, :text, :server, :status

    def initialize(text = "idforge error", code: "error", server: nil, status: nil)
      @text = text.to_s
      @code = code.to_s
      @server = server
      @status = status
      super(compose_message)
    end

    # A fresh exception with the same fields: one failed refill is reported to each
    # waiting thread as its own exception, so that backtraces do not mix.
    def copy
      self.class.new(@text, code: @code, server: @server, status: @status)
    end

    private

    def compose_message
      where = @server ? " (from #{@server})" : ""
      "#{@code}: #{@text}#{where}"
    end
  end

  # No server could answer: each failed, timed out or was backing off. +errors+ lists
  # [url, why] for every server of the client, in the client's order; the message
  # says the same.
  class Unavailable < Error
    attr_reader :errors

    def initialize(text = "no idforge server could answer", errors = [], **_ignored)
      @errors = errors.map { |url, why| [url, why].freeze }.freeze
      super(text, code: "unavailable")
    end

    # The same as +errors+, as [{url:, error:}].
    def servers
      @errors.map { |url, why| { url: url, error: why } }
    end

    def copy
      self.class.new(@text, @errors)
    end

    private

    def compose_message
      @text
    end
  end
end
