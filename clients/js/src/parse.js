// Decoding Snowflake IDs without a server: the same layouts, rules, keys and values as
// `idforge parse --json` (src/core/layout.cc, src/cli/decoded_output.cc).

const U64_MAX = (1n << 64n) - 1n;
const I64_MAX = (1n << 63n) - 1n;
const MAX_FIELDS = 16;
const MAX_FIELD_BITS = 63;
const MAX_TICK_MS = 86_400_000n; // `idforge parse --tick-ms` accepts 1..86400000
const TWITTER_EPOCH_MS = 1288834974657n;
const SPEC_EXAMPLE = "time:41,datacenter:5,worker:5,sequence:12";
// ISO-8601 text is given for years 0000..9999; other times print as their Unix ms.
const MIN_ISO_MS = -62167219200000n; // 0000-01-01T00:00:00.000Z
const MAX_ISO_MS = 253402300799999n; // 9999-12-31T23:59:59.999Z
const RESERVED_KEYS = new Set(["id", "layout", "unix_ms", "time"]);

// docs/snowflake.md, "Layouts"; the same table as src/core/layout.cc.
const PRESETS = {
  twitter: {
    epochMs: TWITTER_EPOCH_MS,
    tickMs: 1n,
    fields: [["time", 41], ["datacenter", 5], ["worker", 5], ["sequence", 12]],
  },
  discord: {
    epochMs: 1420070400000n,
    tickMs: 1n,
    fields: [["time", 42], ["worker", 5], ["process", 5], ["increment", 12]],
  },
  instagram: {
    epochMs: 1314220021721n,
    tickMs: 1n,
    fields: [["time", 41], ["shard", 13], ["sequence", 10]],
  },
  sonyflake: {
    epochMs: 1409529600000n,
    tickMs: 10n,
    fields: [["time", 39], ["sequence", 8], ["machine", 16]],
  },
  baidu: {
    epochMs: 1463673600000n,
    tickMs: 1000n,
    fields: [["time", 28], ["worker", 22], ["sequence", 13]],
  },
};

/** The preset layout names, as `idforge parse --layout` accepts them. */
export const LAYOUT_PRESETS = Object.freeze(Object.keys(PRESETS));

function roleOf(name) {
  if (name === "time") return "time";
  if (name === "sequence" || name === "seq" || name === "increment") return "sequence";
  return "node";
}

const trim = (s) => s.replace(/^[ \t]+|[ \t]+$/g, "");

function parseSpec(spec) {
  const fields = [];
  for (const raw of spec.split(",")) {
    const item = trim(raw);
    if (item === "") {
      throw new RangeError(
        `layout spec "${spec}" has an empty item; expected name:bits,... like ${SPEC_EXAMPLE}`,
      );
    }
    const parts = item.split(":");
    if (parts.length !== 2) {
      throw new RangeError(`layout spec item "${item}" is not name:bits (e.g. worker:5)`);
    }
    const name = trim(parts[0]);
    const bitsText = trim(parts[1]);
    if (!/^[0-9]{1,3}$/.test(bitsText)) {
      throw new RangeError(
        `layout spec item "${item}": width "${bitsText}" is not a number of bits`,
      );
    }
    fields.push([name, Number(bitsText)]);
  }
  return fields;
}

function toEpochMs(value) {
  if (value === undefined || value === null) return undefined;
  let ms;
  if (typeof value === "bigint") {
    ms = value;
  } else if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new RangeError(`epochMs ${value} is not an integer`);
    ms = BigInt(value);
  } else if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new RangeError("epochMs is an invalid Date");
    ms = BigInt(value.getTime());
  } else if (typeof value === "string") {
    if (/^[0-9]+$/.test(value)) {
      ms = BigInt(value);
    } else {
      const parsed = Date.parse(value);
      if (Number.isNaN(parsed)) {
        throw new RangeError(`epochMs "${value}" is neither Unix ms nor an ISO-8601 time`);
      }
      ms = BigInt(parsed);
    }
  } else {
    throw new TypeError(`epochMs must be a number, a BigInt, a Date or a string, not ${typeof value}`);
  }
  if (ms < 0n) throw new RangeError("epochMs must not be before 1970-01-01");
  if (ms > I64_MAX) throw new RangeError(`epochMs ${ms} does not fit a 64-bit count of milliseconds`);
  return ms;
}

function toTickMs(value) {
  if (value === undefined || value === null) return undefined;
  let tick;
  if (typeof value === "bigint") tick = value;
  else if (typeof value === "number" && Number.isSafeInteger(value)) tick = BigInt(value);
  else if (typeof value === "string" && /^[0-9]+$/.test(value)) tick = BigInt(value);
  else if (typeof value === "number" || typeof value === "string") {
    throw new RangeError(`tickMs ${JSON.stringify(value)} is not a whole number of ms`);
  } else throw new TypeError(`tickMs must be a number or a BigInt, not ${typeof value}`);
  if (tick < 1n || tick > MAX_TICK_MS) {
    throw new RangeError(`tickMs must be from 1 to ${MAX_TICK_MS}, got ${tick}`);
  }
  return tick;
}

function layoutError(name, what) {
  return new RangeError(`invalid layout '${name}': ${what}`);
}

function buildLayout(name, epochMs, tickMs, fieldDefs, given) {
  if (fieldDefs.length === 0 || fieldDefs.length > MAX_FIELDS) {
    throw layoutError(given, `has ${fieldDefs.length} fields; a layout has 1..${MAX_FIELDS} (one time, one sequence, any node fields)`);
  }
  let total = 0;
  let time = -1;
  let sequence = -1;
  const seen = new Set();
  fieldDefs.forEach(([field, bits], i) => {
    if (!/^[a-z][a-z0-9_]*$/.test(field)) {
      throw layoutError(given, `layout field "${field}": a name is a lower-case letter then letters, digits or '_'`);
    }
    if (seen.has(field)) throw layoutError(given, `layout field '${field}': the name is used twice`);
    seen.add(field);
    if (bits < 1 || bits > MAX_FIELD_BITS) {
      throw layoutError(given, `layout field '${field}': width ${bits} is not in 1..${MAX_FIELD_BITS}`);
    }
    total += bits;
    if (total > 64) {
      throw layoutError(given, `layout field '${field}': the widths up to this field sum to ${total} bits, more than the 64 of an ID`);
    }
    const role = roleOf(field);
    if (role === "time" || role === "sequence") {
      const first = role === "time" ? time : sequence;
      if (first >= 0) {
        throw layoutError(given, `layout field '${field}': a layout has one ${role} field and '${fieldDefs[first][0]}' is already it`);
      }
      if (role === "time") time = i;
      else sequence = i;
    }
  });
  if (time < 0) throw layoutError(given, "has no time field (a custom spec names it 'time')");
  if (sequence < 0) {
    throw layoutError(given, "has no sequence field (a custom spec names it 'sequence', 'seq' or 'increment')");
  }
  const maxTick = (1n << BigInt(fieldDefs[time][1])) - 1n;
  if (maxTick > (I64_MAX - epochMs) / tickMs) {
    throw layoutError(given, `layout field '${fieldDefs[time][0]}': ${fieldDefs[time][1]} bits of ${tickMs} ms ticks from epoch ${epochMs} run past the largest int64 Unix ms`);
  }
  let shift = 0n;
  const fields = [];
  for (let i = fieldDefs.length - 1; i >= 0; i--) {
    const [field, bits] = fieldDefs[i];
    fields[i] = { name: field, bits, shift, mask: (1n << BigInt(bits)) - 1n, role: roleOf(field) };
    shift += BigInt(bits);
  }
  return { name, epochMs, tickMs, totalBits: total, fields };
}

function resolveLayout(layout, epochMsOption, tickMsOption) {
  if (typeof layout !== "string") {
    throw new TypeError(`layout must be a string (a preset name or a spec like "${SPEC_EXAMPLE}")`);
  }
  const epochMs = toEpochMs(epochMsOption);
  const tickMs = toTickMs(tickMsOption);
  const text = layout === "" ? "twitter" : layout;
  if (!text.includes(":")) {
    // As `idforge parse`: a preset name is matched without case, but not trimmed.
    const name = text.toLowerCase();
    if (!Object.hasOwn(PRESETS, name)) {
      throw new RangeError(`unknown layout '${layout}' (presets: ${LAYOUT_PRESETS.join(", ")})`);
    }
    const preset = PRESETS[name];
    return buildLayout(name, epochMs ?? preset.epochMs, tickMs ?? preset.tickMs, preset.fields,
                       layout);
  }
  let fields;
  try {
    fields = parseSpec(trim(text));
  } catch (e) {
    throw layoutError(layout, e.message);
  }
  return buildLayout("custom", epochMs ?? TWITTER_EPOCH_MS, tickMs ?? 1n, fields, layout);
}

function toId(id) {
  if (typeof id === "bigint") {
    if (id < 0n || id > U64_MAX) throw new RangeError(`ID ${id} is not a 64-bit unsigned number`);
    return id;
  }
  if (typeof id === "number") {
    if (!Number.isSafeInteger(id) || id < 0) {
      throw new RangeError(`ID ${id} is not a safe non-negative integer; pass a BigInt or a decimal string`);
    }
    return BigInt(id);
  }
  if (typeof id === "string") {
    if (id === "") throw new RangeError("ID is empty");
    if (!/^[0-9]+$/.test(id)) throw new RangeError(`ID "${id}" is not a decimal number (digits 0-9 only)`);
    const value = BigInt(id);
    if (value > U64_MAX) throw new RangeError(`ID "${id}" is larger than ${U64_MAX}`);
    return value;
  }
  throw new TypeError(`an ID is a BigInt, a decimal string or a safe integer, not ${id === null ? "null" : typeof id}`);
}

// A Number where it is exact, a BigInt above Number.MAX_SAFE_INTEGER.
const exact = (v) => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);

function isoTime(unixMs) {
  if (unixMs < MIN_ISO_MS || unixMs > MAX_ISO_MS) return unixMs.toString();
  return new Date(Number(unixMs)).toISOString();
}

/**
 * Decodes a Snowflake ID without a server.
 *
 * @param {bigint|string|number} id  a 64-bit unsigned ID (a Number only up to 2^53 - 1)
 * @param {string|{layout?: string, epochMs?: number|bigint|Date|string, tickMs?: number|bigint}} [options]
 *   a preset (`twitter`, `discord`, `instagram`, `sonyflake`, `baidu`) or a custom spec
 *   (`time:41,datacenter:5,worker:5,sequence:12`), optionally with its epoch and tick
 * @returns {{id: string, layout: string, unix_ms: number|bigint, time: string}} plus one
 *   key per non-time field, in layout order. Numbers are Numbers, or BigInts above 2^53 - 1.
 * @throws {TypeError} an argument of the wrong type; {RangeError} a bad ID or layout
 */
export function parse(id, options = {}) {
  const opts = typeof options === "string" ? { layout: options } : options ?? {};
  if (typeof opts !== "object") throw new TypeError("parse options must be an object or a layout string");
  const value = toId(id);
  const layout = resolveLayout(opts.layout ?? "twitter", opts.epochMs, opts.tickMs);
  if (layout.totalBits < 64 && value >> BigInt(layout.totalBits) !== 0n) {
    const largest = (1n << BigInt(layout.totalBits)) - 1n;
    throw new RangeError(`ID ${value} does not fit layout '${layout.name}', whose IDs have ${layout.totalBits} bits (largest ${largest})`);
  }
  const out = { id: value.toString(), layout: layout.name, unix_ms: 0, time: "" };
  for (const field of layout.fields) {
    const v = (value >> field.shift) & field.mask;
    if (field.role === "time") {
      const unixMs = layout.epochMs + v * layout.tickMs;
      out.unix_ms = exact(unixMs);
      out.time = isoTime(unixMs);
    } else {
      out[RESERVED_KEYS.has(field.name) ? `field_${field.name}` : field.name] = exact(v);
    }
  }
  return out;
}

/**
 * The JSON text of a parse() result, as `idforge parse --json` prints it (without the
 * newline): BigInt values are written as bare integers, as the server's JSON has them.
 */
export function formatParsed(parsed) {
  const parts = Object.entries(parsed).map(([key, v]) =>
    `${JSON.stringify(key)}:${typeof v === "bigint" ? v.toString() : JSON.stringify(v)}`);
  return `{${parts.join(",")}}`;
}
