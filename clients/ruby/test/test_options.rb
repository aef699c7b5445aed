# frozen_string_literal: true

# Server URLs and options (docs/clients.md), without a server.

require "minitest/autorun"
require "idforge/client"

class OptionsTest < Minitest::Test
  def test_server_urls_and_their_default_ports
    c = Idforge::Client.new(["http://10.0.0.1", "redis://10.0.0.2", "HTTP://h:8080/", "redis://[::1]:7000", " http://x:1 "])
    assert_equal ["http://10.0.0.1:80", "redis://10.0.0.2:6380", "http://h:8080", "redis://[::1]:7000", "http://x:1"],
                 c.servers
    assert_equal ["redis://h:6380"], Idforge::Client.new("redis://h").servers # one URL: a list of one
    c.close
  end

  def test_bad_server_urls
    ["https://h:1", "h:1", "http://", "http://u:p@h:1", "http://h:1/prefix", "http://h:1?x=1", "http://h:0",
     "redis://h:70000", "ftp://h"].each do |url|
      assert_raises(ArgumentError, url) { Idforge::Client.new([url]) }
    end
    assert_raises(ArgumentError) { Idforge::Client.new([]) }
    assert_raises(TypeError) { Idforge::Client.new([1]) }
    assert_raises(TypeError) { Idforge::Client.new(nil) }
  end

  def test_bad_options
    url = "http://127.0.0.1:1"
    { timeout_ms: 0, batch: 0, refill_below: 257, max_age_ms: -1, segment_max_age_ms: -1, backoff_ms: -1 }
      .each do |name, value|
      assert_raises(ArgumentError, name) { Idforge::Client.new(url, name => value) }
    end
    assert_raises(ArgumentError) { Idforge::Client.new(url, batch: 10, refill_below: 11) }
    assert_raises(ArgumentError) { Idforge::Client.new(url, backoff_ms: 1000, max_backoff_ms: 999) }
    assert_raises(TypeError) { Idforge::Client.new(url, timeout_ms: 1.5) }
    assert_raises(TypeError) { Idforge::Client.new(url, buffer: "no") }
    assert_raises(ArgumentError) { Idforge::Client.new(url, bogus: 1) }
    Idforge::Client.new(url, batch: 10, refill_below: 10, max_age_ms: nil, segment_max_age_ms: 0).close
  end

  def test_bad_kinds_and_tags
    Idforge::Client.open("http://127.0.0.1:1") do |c|
      assert_raises(ArgumentError) { c.next(:serial) }
      assert_raises(ArgumentError) { c.next(:snowflake, "tag") }
      assert_raises(ArgumentError) { c.segment("") }
      assert_raises(ArgumentError) { c.segment(nil) }
      assert_raises(ArgumentError) { c.snowflakes(-1) }
      assert_equal [], c.snowflakes(0)
      assert_equal 0, c.buffered(:segment, "order")
    end
  end

  def test_open_with_a_block_closes_the_client
    kept = nil
    Idforge::Client.open(["http://127.0.0.1:1"]) { |c| kept = c }
    assert kept.closed?
    e = assert_raises(Idforge::Error) { kept.snowflake }
    assert_equal "closed", e.code
    assert_equal "closed: the client is closed", e.message
  end
end
