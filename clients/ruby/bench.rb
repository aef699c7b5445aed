# frozen_string_literal: true

# IDs per second from the Ruby client (not a test; prints a table):
#
#   ruby clients/ruby/bench.rb [--url URL] [--n 1000000] [--m 20000] [--batch 256]
#
# Without --url it starts one `idforge serve` (IDFORGE_BIN, default build/idforge) on
# free ports and benchmarks its redis:// port. Measures in one run:
#   1. Client#snowflake with the buffer (n IDs),
#   2. a plain in-process counter: a Mutex-guarded increment, the ceiling of any
#      thread-safe Ruby call that hands out a number (n),
#   3. Client#snowflake with buffer: false, one request per ID (m),
# and prints the three rates and their ratios.

require "optparse"
require "tmpdir"
$LOAD_PATH.unshift(File.join(__dir__, "lib"))
require "idforge/client"
require_relative "test/support"

options = { n: 1_000_000, m: 20_000, batch: 256, url: nil }
OptionParser.new do |o|
  o.banner = "usage: ruby bench.rb [--url URL] [--n N] [--m M] [--batch B]"
  o.on("--url URL", "a running server (http:// or redis://); default: start one") { |v| options[:url] = v }
  o.on("--n N", Integer, "IDs with the buffer and from the counter") { |v| options[:n] = v }
  o.on("--m M", Integer, "IDs without the buffer (one request each)") { |v| options[:m] = v }
  o.on("--batch B", Integer, "the buffered client's batch") { |v| options[:batch] = v }
end.parse!

def rate(count)
  t0 = IdforgeTest.now
  yield count
  count / (IdforgeTest.now - t0)
end

# A Mutex-guarded counter: what a shared in-process ID source costs at least.
class Counter
  def initialize
    @lock = Mutex.new
    @value = 0
  end

  def next
    @lock.synchronize { @value += 1 }
  end
end

root = nil
server = nil
url = options[:url]
unless url
  root = Dir.mktmpdir("idforge-rbbench-", File.writable?("/dev/shm") ? "/dev/shm" : Dir.tmpdir)
  Dir.mkdir(File.join(root, "shared"))
  server = IdforgeTest::ServerProc.new(root, File.join(root, "shared"), "bench")
  server.start
  server.wait_ready
  url = server.resp
end

rows = []
begin
  counter = Counter.new
  rows << ["in-process counter (Mutex increment)", rate(options[:n]) { |n| n.times { counter.next } }]
  Idforge::Client.open(url, batch: options[:batch]) do |c|
    c.snowflake # connect and fill
    rows << ["snowflake() with the buffer, batch #{options[:batch]}", rate(options[:n]) { |n| n.times { c.snowflake } }]
  end
  Idforge::Client.open(url, buffer: false) do |c|
    c.snowflake
    rows << ["snowflake() with buffer: false (a request per ID)", rate(options[:m]) { |m| m.times { c.snowflake } }]
  end
ensure
  server&.terminate
  FileUtils.rm_rf(root) if root
end

counter_rate, buffered_rate, direct_rate = rows.map(&:last)
load = File.read("/proc/loadavg").split.first rescue "?" # rubocop:disable Style/RescueModifier
puts "#{RUBY_DESCRIPTION}; #{Etc.nprocessors} cores, load #{load}; server #{url}; n=#{options[:n]}, m=#{options[:m]}"
width = rows.map { |name, _| name.size }.max
rows.each { |name, r| puts format("%-#{width}s  %12s IDs/s", name, r.round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse) }
puts format("buffered / counter: %.2f   buffered / unbuffered: %.0fx   counter / unbuffered: %.0fx",
            buffered_rate / counter_rate, buffered_rate / direct_rate, counter_rate / direct_rate)
