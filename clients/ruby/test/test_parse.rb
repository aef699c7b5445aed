# frozen_string_literal: true

# Decoding without a server: every vector of tests/data/snowflake_vectors.txt, and the
# same keys, values and refusals as `idforge parse --json` (docs/clients.md), through
# Idforge.parse and through bin/idforge-parse (both forms).

require "json"
require "minitest/autorun"
require "open3"
require "rbconfig"
require "idforge/client"
require_relative "support"

class ParseTest < Minitest::Test
  PRESET_FIELDS = {
    "twitter" => %w[datacenter worker sequence],
    "discord" => %w[worker process increment],
    "instagram" => %w[shard sequence],
    "sonyflake" => %w[sequence machine],
    "baidu" => %w[worker sequence],
  }.freeze

  # [id, layout, epoch, tick] the CLI takes; decoded by Idforge.parse alike.
  GOOD = [
    ["0", "twitter", nil, nil],
    ["9223372036854775807", "twitter", nil, nil],
    ["18446744073709551615", "discord", nil, nil],
    ["18446744073709551615", "instagram", nil, nil],
    ["72057594037927935", "sonyflake", nil, nil],
    ["5", "Twitter", nil, nil],
    ["5", "", nil, nil], # the default layout
    ["5", "twitter", "0", "2"],
    ["123456789012345", "baidu", "1735689600000", nil],
    ["12", "time:41,seq:12,worker:5", nil, nil],
    ["5", "time:41, id:5 ,sequence:12", nil, nil], # a reserved name, spaces
    ["5", " time:41,sequence:12\t", nil, nil],
    ["77", "time:30,layout:3,unix_ms:3,sequence:12", "0", "1000"],
    ["77", "time:30,id:3,field_id:3,sequence:12", nil, nil], # two fields, one key
    ["9223372036854775807", "time:51,seq:12", nil, nil], # past the year 9999
    ["9223372036854775807", "time:51,seq:12", "0", nil],
    ["18446744073709551615", "time:2,wide:61,seq:1", nil, nil], # a field above 2^53
    ["4095", "sequence:12,time:20", nil, "86400000"],
    ["1", "time:1,sequence:1", nil, nil],
    ["3", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,sequence:1", nil, nil],
    ["007", "twitter", "-0", "007"],
    ["1", "instagram", "2011-08-24T21:07:01.721Z", nil],
    ["1", "twitter", "2017-09-20", nil],
    ["1", "twitter", "2016-02-29 13:43:08,5-0130", nil],
    ["1", "twitter", "2017-09-20t13:43z", nil],
    ["1", "twitter", "9999-12-31T23:59:59.999Z", nil],
  ].freeze

  # Inputs the CLI refuses: Idforge.parse raises ArgumentError.
  BAD = [
    ["18446744073709551615", "twitter", nil, nil], # 64 bits in a 63-bit layout
    ["18446744073709551616", "twitter", nil, nil],
    ["18446744073709551616", "discord", nil, nil], # a 64-bit layout: only the range refuses it
    ["", "twitter", nil, nil],
    ["abc", "twitter", nil, nil],
    ["-1", "twitter", nil, nil],
    ["+1", "twitter", nil, nil],
    ["1", "nope", nil, nil],
    ["1", " twitter", nil, nil], # the CLI looks a preset up untrimmed
    ["1", "  ", nil, nil],
    ["1", "time:41,worker:10", nil, nil], # no sequence
    ["1", "worker:10,sequence:12", nil, nil], # no time
    ["1", "time:41,time:5,sequence:12", nil, nil],
    ["1", "time:41,seq:5,sequence:12", nil, nil],
    ["1", "time:41,worker:5,worker:5,sequence:12", nil, nil],
    ["1", "time:41,Worker:5,sequence:12", nil, nil],
    ["1", "time:41,:5,sequence:12", nil, nil],
    ["1", "time:41,worker:0,sequence:12", nil, nil],
    ["1", "time:41,worker:0005,sequence:12", nil, nil],
    ["1", "time:64,sequence:1", nil, nil],
    ["1", "time:41,worker:12,sequence:12", nil, nil], # 65 bits
    ["1", "time:41,,sequence:12", nil, nil],
    ["1", "time:41,sequence:12,", nil, nil],
    ["1", "time:41,worker,sequence:12", nil, nil],
    ["1", "time:41,worker:5:3,sequence:12", nil, nil],
    ["1", "time:41,worker:x,sequence:12", nil, nil],
    ["1", "time:1,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,sequence:1", nil, nil],
    ["1", "time:63,sequence:1", nil, "1000"], # runs past int64 ms
    ["1", "discord", "9223372036854775807", nil],
    ["1", "twitter", nil, "0"],
    ["1", "twitter", nil, "86400001"],
    ["1", "time:10,sequence:12", nil, "86400001"], # a tick the layout could take
    ["1", "twitter", nil, "-1"],
    ["1", "twitter", nil, ""],
    ["1", "twitter", "-1", nil],
    ["1", "twitter", "1969-12-31", nil],
    ["1", "twitter", "1970-01-01T00:00+01:00", nil],
    ["1", "twitter", "2017-02-29", nil],
    ["1", "twitter", "2017-09-20T24:00", nil],
    ["1", "twitter", "2017-09-20T13:43:60", nil],
    ["1", "twitter", "2017-09-20T13", nil],
    ["1", "twitter", "2017-09-20T13:43:08.", nil],
    ["1", "twitter", "2017-09-20T13:43+24:00", nil],
    ["1", "twitter", "2017-9-20", nil],
    ["1", "twitter", "9223372036854775808", nil],
    ["1", "twitter", "1e3", nil],
  ].freeze

  # The edge cases of tests/clients/cross_language.sh, as argument lists.
  CROSS_LANGUAGE_EDGES = [
    %w[0],
    %w[18446744073709551615 --layout discord],
    %w[9223372036854775807 --layout TWITTER],
    %w[175928847299117063 --layout Discord --epoch 0],
    %w[910499571847892992 --layout time:41,id:10,sequence:12 --epoch 1],
    %w[9223372036854775807 --layout time:63,sequence:1 --epoch 0],
    %w[123456789012345 --layout time:30,worker:20,seq:13 --tick-ms 86400000],
    %w[2968681395003392 --layout baidu --tick-ms 1],
    %w[9223372036854775808 --layout twitter],
    %w[1 --layout nosuchlayout],
    %w[1 --layout time:41,worker:5],
    %w[1 --tick-ms 0],
    %w[x1],
  ].freeze

  # How the command line itself is read, as the CLI reads it.
  ARGUMENT_FORMS = [
    %w[1 --layout=discord],
    %w[-l discord 1],
    %w[-ldiscord 1],
    %w[1 -l=discord],
    %w[--epoch 5 1],
    %w[1 --epoch=5 --tick-ms=5],
    %w[1 --json],
    %w[1 --json --json],
    %w[1 --layout=],
    %w[1 --epoch 1 --epoch 2],
    %w[1 --layout discord --layout twitter],
    %w[1 2],
    %w[1 --bogus],
    %w[1 -l],
    %w[1 --epoch],
    %w[--layout discord],
  ].freeze

  def self.vectors
    @vectors ||= File.readlines(IdforgeTest::VECTORS).filter_map do |line|
      words = line.split("#", 2).first.split
      next if words.empty?

      layout, epoch, id, unix_ms, *fields = words
      layout, tick = layout.split("@", 2)
      [layout, epoch, tick, id, Integer(unix_ms, 10), fields.map { |v| Integer(v, 10) }]
    end
  end

  def self.args_of(id, layout, epoch, tick)
    args = [id]
    args += ["--layout", layout] if layout
    args += ["--epoch", epoch] if epoch
    args += ["--tick-ms", tick] if tick
    args
  end

  # Every argument list the tests compare, each vector with its epoch and with the
  # layout's own.
  def self.all_cases
    @all_cases ||= begin
      cases = vectors.flat_map do |layout, epoch, tick, id, _, _|
        [args_of(id, layout, epoch, tick), args_of(id, layout, nil, tick)]
      end
      cases += CROSS_LANGUAGE_EDGES + ARGUMENT_FORMS
      cases += (GOOD + BAD).map { |c| args_of(*c) }
      cases.uniq
    end
  end

  # `idforge parse --json ARGS` of every case: args => [ok, stdout line]. Run once,
  # four at a time.
  def self.cli
    @cli ||= begin
      queue = Queue.new
      all_cases.each { |c| queue << c }
      queue.close
      out = {}
      lock = Mutex.new
      Array.new(4) do
        Thread.new do
          while (args = queue.pop)
            stdout, _err, status = Open3.capture3(IdforgeTest::IDFORGE_BIN, "parse", "--json", *args)
            lock.synchronize { out[args] = [status.success?, stdout.strip] }
          end
        end
      end.each(&:join)
      out
    end
  end

  def parse_tool(*args, stdin: nil)
    cmd = [RbConfig.ruby, "--disable-gems", "-I", File.join(IdforgeTest::RUBY_ROOT, "lib"), IdforgeTest::PARSE_TOOL,
           *args]
    Open3.capture3(*cmd, stdin_data: stdin || "")
  end

  def options(epoch, tick)
    { epoch_ms: epoch, tick_ms: tick }
  end

  def test_every_vector_decodes_to_its_fields_and_as_idforge_parse
    vectors = ParseTest.vectors
    assert_operator vectors.size, :>=, 10
    vectors.each do |layout, epoch, tick, id, unix_ms, fields|
      got = Idforge::Client.parse(Integer(id, 10), layout, epoch_ms: Integer(epoch, 10), tick_ms: tick && Integer(tick, 10))
      assert_equal got, Idforge.parse(id, layout, epoch_ms: epoch, tick_ms: tick), "text or Integer ID"
      assert_equal id, got["id"]
      assert_equal unix_ms, got["unix_ms"]
      names = PRESET_FIELDS[layout] || Idforge::Layout.resolve(layout).fields.reject { |f| f.role == :time }.map(&:name)
      assert_equal fields, got.values_at(*names), "#{layout} #{id}"
      ok, line = ParseTest.cli.fetch(ParseTest.args_of(id, layout, epoch, tick))
      assert ok, line
      # Same keys, same order, same values, same types.
      assert_equal JSON.parse(line).to_a, got.to_a
      assert_equal line, JSON.generate(got)
    end
  end

  def test_the_parse_tool_prints_what_idforge_parse_prints_one_process_for_every_case
    cases = ParseTest.all_cases.reject { |args| args.any? { |a| a.empty? || a.include?(" ") } }
    stdout, stderr, status = parse_tool("--stdin", stdin: cases.map { |args| args.join(" ") + "\n" }.join)
    assert status.success?, stderr
    lines = stdout.lines(chomp: true)
    assert_equal cases.size, lines.size
    cases.zip(lines).each do |args, line|
      ok, want = ParseTest.cli.fetch(args)
      if ok
        assert_equal want, line, args.join(" ")
      else
        assert_match(/\Aerror: ./, line, "the CLI refuses #{args.join(' ')}")
      end
    end
    assert_operator cases.size, :>, 2 * ParseTest.vectors.size + 50
  end

  def test_the_parse_tool_command_line_form
    (CROSS_LANGUAGE_EDGES.first(3) + CROSS_LANGUAGE_EDGES.last(2) + [%w[1 --layout=], ["5", "--layout", " time:41,sequence:12\t"]])
      .each do |args|
      stdout, stderr, status = parse_tool(*args)
      ok, want = ParseTest.cli[args] || begin
        out, _err, st = Open3.capture3(IdforgeTest::IDFORGE_BIN, "parse", "--json", *args)
        [st.success?, out.strip]
      end
      if ok
        assert status.success?, stderr
        assert_equal "#{want}\n", stdout
      else
        refute status.success?, "the CLI refuses #{args.join(' ')}"
        assert_equal "", stdout
        refute_empty stderr
      end
    end
  end

  def test_same_answer_as_idforge_parse
    GOOD.each do |id, layout, epoch, tick|
      ok, line = ParseTest.cli.fetch(ParseTest.args_of(id, layout, epoch, tick))
      assert ok, "#{id} #{layout}: #{line}"
      assert_equal line, JSON.generate(Idforge.parse(id, layout, **options(epoch, tick))), "#{id} #{layout}"
    end
  end

  def test_both_refuse_the_same_inputs
    # A CLI that fails on everything (a wrong IDFORGE_BIN) would "refuse" each case: it
    # must first decode a good one.
    ok, line = ParseTest.cli.fetch(ParseTest.args_of("910499571847892992", "twitter", nil, nil))
    assert ok, "idforge parse must work for its refusals to mean anything: #{line}"
    BAD.each do |id, layout, epoch, tick|
      ok, line = ParseTest.cli.fetch(ParseTest.args_of(id, layout, epoch, tick))
      refute ok, "#{id} #{layout} #{epoch} #{tick}: #{line}"
      assert_raises(ArgumentError, "#{id} #{layout} #{epoch} #{tick}") do
        Idforge.parse(id, layout, **options(epoch, tick))
      end
    end
  end

  def test_ruby_types
    assert_raises(ArgumentError) { Idforge.parse(-1) }
    assert_raises(ArgumentError) { Idforge.parse(1 << 64) }
    assert_raises(TypeError) { Idforge.parse(1.5) }
    assert_raises(TypeError) { Idforge.parse(nil) }
    assert_raises(TypeError) { Idforge.parse(true) }
    assert_raises(TypeError) { Idforge.parse(1, 5) }
    assert_raises(TypeError) { Idforge.parse(1, epoch_ms: 1.0) }
    assert_raises(ArgumentError) { Idforge.parse(1, epoch_ms: -1) }
    assert_raises(ArgumentError) { Idforge.parse(1, tick_ms: 0) }
    d = Idforge.parse(910_499_571_847_892_992)
    assert_equal 25, d["worker"]
    assert_equal %w[id layout unix_ms time datacenter worker sequence], d.keys
    assert_equal d, Idforge::Client.parse("910499571847892992", :twitter)
    assert_equal Idforge.parse(1, epoch_ms: 1_505_914_988_849), Idforge.parse(1, epoch_ms: "2017-09-20T13:43:08.849Z")
    wide = Idforge.parse((1 << 64) - 1, "time:2,wide:61,seq:1")
    assert_equal (1 << 61) - 1, wide["wide"] # an Integer, whatever its width
    assert_equal "18446744073709551615", wide["id"]
  end
end
