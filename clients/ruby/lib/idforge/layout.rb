# frozen_string_literal: true

require "strscan"

module Idforge
  # A Snowflake layout (a preset or a custom spec) and the decoding of IDs with it,
  # without a server: the same rules, fields and refusals as `idforge parse --json`.
  #
  #   Idforge::Layout.resolve("discord").decode(175928847299117063)
  #   Idforge.parse("910499571847892992")  # {"id"=>"910499571847892992", "layout"=>"twitter", ...}
  class Layout
    Field = Struct.new(:name, :bits, :role, :shift)

    ID_BITS = 64
    MAX_FIELD_BITS = 63
    MAX_FIELDS = 16
    MAX_TICK_MS = 86_400_000 # the CLI's bound of --tick-ms: a day
    MAX_U64 = (1 << 64) - 1
    MAX_I64 = (1 << 63) - 1
    TWITTER_EPOCH_MS = 1_288_834_974_657
    SPEC_EXAMPLE = "time:41,datacenter:5,worker:5,sequence:12"
    # A custom field named like one of the fixed keys is shown with a prefix.
    RESERVED_KEYS = %w[id layout unix_ms time].freeze

    # docs/snowflake.md, "Layouts": name => [epoch_ms, tick_ms, [[field, bits], ...]].
    PRESETS = {
      "twitter" => [TWITTER_EPOCH_MS, 1, [["time", 41], ["datacenter", 5], ["worker", 5], ["sequence", 12]]],
      "discord" => [1_420_070_400_000, 1, [["time", 42], ["worker", 5], ["process", 5], ["increment", 12]]],
      "instagram" => [1_314_220_021_721, 1, [["time", 41], ["shard", 13], ["sequence", 10]]],
      "sonyflake" => [1_409_529_600_000, 10, [["time", 39], ["sequence", 8], ["machine", 16]]],
      "baidu" => [1_463_673_600_000, 1000, [["time", 28], ["worker", 22], ["sequence", 13]]],
    }.freeze

    attr_reader :name, :epoch_ms, :tick_ms, :fields, :total_bits

    # A preset name (any case) or a custom spec "name:bits,...", with an optional epoch
    # (Unix ms, or ISO-8601 text as the CLI's --epoch takes) and tick length in ms.
    # Raises ArgumentError (a bad value) or TypeError (a wrong type), as `idforge parse`
    # refuses them.
    def self.resolve(layout = "twitter", epoch_ms: nil, tick_ms: nil)
      layout = layout.to_s if layout.is_a?(Symbol)
      raise TypeError, "layout must be a preset name or a spec (a String), got #{layout.inspect}" unless layout.is_a?(String)

      epoch = epoch_ms.nil? ? -1 : epoch_option(epoch_ms)
      tick = tick_ms.nil? ? -1 : tick_option(tick_ms)
      spec = layout.empty? ? "twitter" : layout
      preset = nil
      unless spec.include?(":")
        # A word without ':' can only be a preset (the CLI looks it up untrimmed).
        preset = PRESETS[spec.downcase(:ascii)]
        raise ArgumentError, "unknown layout '#{spec}' (presets: #{PRESETS.keys.join(', ')})" unless preset
      end
      begin
        if preset
          preset_epoch, preset_tick, fields = preset
          new(spec.downcase(:ascii), epoch >= 0 ? epoch : preset_epoch, tick.positive? ? tick : preset_tick, fields)
        else
          new("custom", epoch >= 0 ? epoch : TWITTER_EPOCH_MS, tick.positive? ? tick : 1, parse_spec(trim(spec)))
        end
      rescue ArgumentError => e
        raise ArgumentError, "invalid layout '#{spec}': #{e.message}"
      end
    end

    # Layout::create of the server: the same checks in the same order.
    def initialize(name, epoch_ms, tick_ms, fields)
      if fields.empty? || fields.size > MAX_FIELDS
        raise ArgumentError, "layout #{name}: has #{fields.size} fields; a layout has 1..#{MAX_FIELDS} " \
                             "(one time, one sequence, any node fields)"
      end
      total = 0
      roles = {}
      seen = {}
      fields.each do |field_name, bits|
        unless field_name.match?(/\A[a-z][a-z0-9_]*\z/)
          raise ArgumentError, "layout field \"#{field_name}\": a name is a lower-case letter then letters, digits or '_'"
        end
        raise ArgumentError, "layout field '#{field_name}': the name is used twice" if seen[field_name]

        seen[field_name] = true
        unless (1..MAX_FIELD_BITS).cover?(bits)
          raise ArgumentError, "layout field '#{field_name}': width #{bits} is not in 1..#{MAX_FIELD_BITS}"
        end

        total += bits
        if total > ID_BITS
          raise ArgumentError, "layout field '#{field_name}': the widths up to this field sum to #{total} bits, " \
                               "more than the 64 of an ID"
        end
        role = Layout.role(field_name)
        next if role == :node

        if roles[role]
          raise ArgumentError, "layout field '#{field_name}': a layout has one #{role} field and " \
                               "'#{roles[role]}' is already it"
        end
        roles[role] = field_name
      end
      raise ArgumentError, "layout #{name}: has no time field (a custom spec names it 'time')" unless roles[:time]
      unless roles[:sequence]
        raise ArgumentError, "layout #{name}: has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')"
      end
      raise ArgumentError, "layout #{name}: tick_ms #{tick_ms} is not >= 1" if tick_ms < 1
      raise ArgumentError, "layout #{name}: epoch_ms #{epoch_ms} is before 1970" if epoch_ms.negative?

      time_bits = fields.find { |n, _| n == roles[:time] }[1]
      if (1 << time_bits) - 1 > (MAX_I64 - epoch_ms) / tick_ms
        raise ArgumentError, "layout field '#{roles[:time]}': #{time_bits} bits of #{tick_ms} ms ticks from epoch " \
                             "#{epoch_ms} run past the largest int64 Unix ms"
      end

      @name = name
      @epoch_ms = epoch_ms
      @tick_ms = tick_ms
      @total_bits = total
      shift = total
      @fields = fields.map do |field_name, bits|
        shift -= bits
        Field.new(field_name, bits, Layout.role(field_name), shift).freeze
      end.freeze
      freeze
    end

    # The keys and values of `idforge parse --json`, in its order: "id" (text),
    # "layout", "unix_ms", "time" (ISO-8601 UTC with ms; outside the years 0000-9999
    # the ms as text), then each non-time field (Integers). JSON.generate of it is the
    # CLI's line.
    def decode(id)
      value = Layout.parse_id(id)
      if @total_bits < ID_BITS && (value >> @total_bits) != 0
        raise ArgumentError, "ID #{value} does not fit layout '#{@name}', whose IDs have #{@total_bits} bits " \
                             "(largest #{(1 << @total_bits) - 1})"
      end
      unix_ms = 0
      rest = {}
      @fields.each do |f|
        v = (value >> f.shift) & ((1 << f.bits) - 1)
        if f.role == :time
          unix_ms = @epoch_ms + v * @tick_ms
        else
          rest[RESERVED_KEYS.include?(f.name) ? "field_#{f.name}" : f.name] = v
        end
      end
      { "id" => value.to_s, "layout" => @name, "unix_ms" => unix_ms, "time" => Layout.format_time(unix_ms) }.merge!(rest)
    end

    class << self
      def role(name)
        case name
        when "time" then :time
        when "sequence", "seq", "increment" then :sequence
        else :node
        end
      end

      # An ID: an Integer 0..2^64-1 or its decimal text (digits only).
      def parse_id(id)
        case id
        when Integer
          raise ArgumentError, "ID must be a non-negative whole number, got #{id}" if id.negative?
          raise ArgumentError, "ID '#{id}' is too large (the largest is #{MAX_U64})" if id > MAX_U64

          id
        when String
          raise ArgumentError, "ID is empty" if id.empty?
          raise ArgumentError, "ID must be a non-negative whole number, got '#{id}'" unless digits?(id)

          value = id.to_i
          raise ArgumentError, "ID '#{id}' is too large (the largest is #{MAX_U64})" if value > MAX_U64

          value
        else
          raise TypeError, "ID must be an Integer or a decimal String, got #{id.inspect}"
        end
      end

      # ISO-8601 UTC with milliseconds for years 0000..9999, else the ms as text.
      def format_time(unix_ms)
        return unix_ms.to_s unless (MIN_ISO_MS..MAX_ISO_MS).cover?(unix_ms)

        days, ms = unix_ms.divmod(86_400_000)
        year, month, day = civil_from_days(days)
        format("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", year, month, day,
               ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
      end

      # The CLI's --epoch: decimal Unix ms ("-1" too) or ISO-8601 ("2017-09-20",
      # "2017-09-20T13:43:08.849Z", "2017-09-20 15:43:08+02:00", ...).
      def parse_time(text)
        raise ArgumentError, time_error(text, TIME_EXPECTED) if text.empty?
        return parse_decimal_ms(text) if text.start_with?("-") || digits?(text)

        s = StringScanner.new(text)
        year = s.scan(/[0-9]{4}/)
        month = year && s.skip(/-/) && s.scan(/[0-9]{2}/)
        day = month && s.skip(/-/) && s.scan(/[0-9]{2}/)
        raise ArgumentError, time_error(text, TIME_EXPECTED) unless day

        year = year.to_i
        month = month.to_i
        day = day.to_i
        raise ArgumentError, time_error(text, "has month #{month}, not 01..12") unless (1..12).cover?(month)
        unless (1..days_in_month(year, month)).cover?(day)
          raise ArgumentError, time_error(text, "has day #{day}, which month #{month} of #{year} does not have")
        end

        ms = days_from_civil(year, month, day) * 86_400_000
        return ms if s.eos?

        hour = s.skip(/[Tt ]/) && s.scan(/[0-9]{2}/)
        minute = hour && s.skip(/:/) && s.scan(/[0-9]{2}/)
        raise ArgumentError, time_error(text, TIME_EXPECTED) unless minute

        second = "0"
        frac = 0
        if s.skip(/:/)
          second = s.scan(/[0-9]{2}/)
          raise ArgumentError, time_error(text, TIME_EXPECTED) unless second

          if s.skip(/[.,]/)
            digits = s.scan(/[0-9]+/)
            raise ArgumentError, time_error(text, TIME_EXPECTED) unless digits

            frac = digits[0, 3].ljust(3, "0").to_i # truncated to ms
          end
        end
        hour = hour.to_i
        minute = minute.to_i
        second = second.to_i
        if hour > 23 || minute > 59 || second > 59
          raise ArgumentError, time_error(text, "has a time of day outside 00:00:00..23:59:59")
        end

        ms += hour * 3_600_000 + minute * 60_000 + second * 1000 + frac
        if s.eos? || s.skip(/[Zz]/)
          raise ArgumentError, time_error(text, TIME_EXPECTED) unless s.eos?

          return ms
        end
        sign = s.scan(/[+-]/)
        off_hours = sign && s.scan(/[0-9]{2}/)
        raise ArgumentError, time_error(text, TIME_EXPECTED) unless off_hours

        off_minutes = "0"
        unless s.eos?
          s.skip(/:/)
          off_minutes = s.scan(/[0-9]{2}/)
          raise ArgumentError, time_error(text, TIME_EXPECTED) unless off_minutes && s.eos?
        end
        off_hours = off_hours.to_i
        off_minutes = off_minutes.to_i
        if off_hours > 23 || off_minutes > 59
          raise ArgumentError, time_error(text, "has a zone offset outside -23:59..+23:59")
        end

        offset = off_hours * 3_600_000 + off_minutes * 60_000
        sign == "+" ? ms - offset : ms + offset
      end

      private

      def digits?(text)
        text.match?(/\A[0-9]+\z/)
      end

      def trim(text)
        text.sub(/\A[ \t]+/, "").sub(/[ \t]+\z/, "")
      end

      def parse_spec(spec)
        spec.split(",", -1).map do |raw|
          item = trim(raw)
          if item.empty?
            raise ArgumentError, "layout spec \"#{spec}\" has an empty item; expected name:bits,... like #{SPEC_EXAMPLE}"
          end
          raise ArgumentError, "layout spec item \"#{item}\" is not name:bits (e.g. worker:5)" unless item.count(":") == 1

          name, bits_text = item.split(":", -1).map { |part| trim(part) }
          unless bits_text.size.between?(1, 3) && digits?(bits_text)
            raise ArgumentError, "layout spec item \"#{item}\": width \"#{bits_text}\" is not a number of bits"
          end

          [name, bits_text.to_i]
        end
      end

      # The CLI's parse_number: digits only, at most 2^64-1.
      def number_text(text, what)
        raise ArgumentError, "#{what} is empty" if text.empty?
        raise ArgumentError, "#{what} must be a non-negative whole number, got '#{text}'" unless digits?(text)

        value = text.to_i
        raise ArgumentError, "#{what} '#{text}' is too large (the largest is #{MAX_U64})" if value > MAX_U64

        value
      end

      def epoch_option(value)
        epoch = case value
                when Integer then value
                when String
                  begin
                    parse_time(value)
                  rescue ArgumentError => e
                    raise ArgumentError, "epoch_ms: #{e.message}"
                  end
                else raise TypeError, "epoch_ms must be an Integer (Unix ms) or a String, got #{value.inspect}"
                end
        raise ArgumentError, "epoch_ms must not be before 1970-01-01, got #{epoch}" if epoch.negative?

        epoch
      end

      def tick_option(value)
        tick = case value
               when Integer then value
               when String then number_text(value, "tick_ms")
               else raise TypeError, "tick_ms must be an Integer or a decimal String, got #{value.inspect}"
               end
        raise ArgumentError, "tick_ms must be from 1 to #{MAX_TICK_MS}, got #{tick}" unless (1..MAX_TICK_MS).cover?(tick)

        tick
      end

      def parse_decimal_ms(text)
        negative = text.start_with?("-")
        digits = negative ? text[1..] : text
        raise ArgumentError, time_error(text, TIME_EXPECTED) unless digits?(digits)

        magnitude = digits.to_i
        raise ArgumentError, time_error(text, TIME_EXPECTED) if magnitude > MAX_U64
        if magnitude > MAX_I64 + (negative ? 1 : 0)
          raise ArgumentError, time_error(text, "does not fit a 64-bit count of milliseconds")
        end

        negative ? -magnitude : magnitude
      end

      def time_error(text, why)
        "time \"#{text}\" #{why}"
      end

      def leap?(year)
        (year % 4).zero? && (!(year % 100).zero? || (year % 400).zero?)
      end

      def days_in_month(year, month)
        return 29 if month == 2 && leap?(year)

        [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
      end

      # Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
      def days_from_civil(year, month, day)
        year -= 1 if month <= 2
        era = year.div(400)
        yoe = year - era * 400
        doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        era * 146_097 + doe - 719_468
      end

      def civil_from_days(days)
        days += 719_468
        era = days.div(146_097)
        doe = days - era * 146_097
        yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        [year, month, day]
      end
    end

    TIME_EXPECTED = "is neither Unix ms nor an ISO-8601 time like 2017-09-20T13:43:08.849Z, " \
                    "2017-09-20 15:43:08+02:00 or 2017-09-20"
    MIN_ISO_MS = days_from_civil(0, 1, 1) * 86_400_000
    MAX_ISO_MS = days_from_civil(10_000, 1, 1) * 86_400_000 - 1
  end

  # Decodes a Snowflake ID without a server: the keys and values of
  # `idforge parse --json` as a Hash (JSON.generate of it is the CLI's line).
  # +id+ is an Integer or decimal text; +layout+ a preset (twitter, discord, instagram,
  # sonyflake, baidu; any case) or a spec "time:41,datacenter:5,worker:5,sequence:12";
  # +epoch_ms+ Unix ms (or ISO-8601 text), +tick_ms+ 1..86400000. Raises ArgumentError
  # for a bad ID or layout, TypeError for a wrong type.
  def self.parse(id, layout = "twitter", epoch_ms: nil, tick_ms: nil)
    value = Layout.parse_id(id) # the ID's error first, as the CLI
    Layout.resolve(layout, epoch_ms: epoch_ms, tick_ms: tick_ms).decode(value)
  end
end
