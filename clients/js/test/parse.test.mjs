// parse() against `idforge parse --json`: every vector of tests/data/snowflake_vectors.txt
// and the edge cases of the layout rules, compared as JSON text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, parse, formatParsed, LAYOUT_PRESETS } from "idforge-client";
import { idforge } from "../test-support/servers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorsFile = path.resolve(here, "../../../tests/data/snowflake_vectors.txt");
const parseBin = path.resolve(here, "../bin/parse.mjs");

// One case a line: layout[@tick_ms] epoch_ms id unix_ms field... ('#' starts a comment).
function readVectors() {
  const vectors = [];
  for (const raw of readFileSync(vectorsFile, "utf8").split("\n")) {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") continue;
    const [layoutText, epoch, id, unixMs, ...fields] = line.split(/\s+/);
    const [layout, tick] = layoutText.split("@");
    vectors.push({ layout, tick, epoch, id, unixMs, fields });
  }
  return vectors;
}

function cliArgs({ layout, epoch, tick }) {
  const args = ["--layout", layout];
  if (epoch !== undefined) args.push("--epoch", String(epoch));
  if (tick !== undefined) args.push("--tick-ms", String(tick));
  return args;
}

function cliJson(id, options) {
  const run = idforge("parse", id, ...cliArgs(options), "--json");
  assert.equal(run.status, 0, `idforge parse ${id} ${cliArgs(options).join(" ")}: ${run.stderr}`);
  return run.stdout.trim();
}

test("every vector decodes to what `idforge parse --json` prints", () => {
  const vectors = readVectors();
  assert.ok(vectors.length >= 10, `only ${vectors.length} vectors in ${vectorsFile}`);
  for (const v of vectors) {
    const got = parse(v.id, { layout: v.layout, epochMs: Number(v.epoch), tickMs: v.tick && Number(v.tick) });
    assert.equal(formatParsed(got), cliJson(v.id, v), `vector ${v.layout} ${v.id}`);
    // And to the values the file gives.
    assert.equal(got.unix_ms, Number(v.unixMs), `unix_ms of ${v.id}`);
    const fieldValues = Object.values(got).slice(4);
    assert.deepEqual(fieldValues, v.fields.map(Number), `fields of ${v.id}`);
    assert.equal(typeof got.unix_ms, "number");
    assert.equal(got.id, v.id);
  }
});

test("bin/parse.mjs prints the same line as `idforge parse --json`", () => {
  for (const v of readVectors().slice(0, 4)) {
    const args = [v.id, ...cliArgs(v)];
    const run = spawnSync(process.execPath, [parseBin, ...args], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, `${cliJson(v.id, v)}\n`);
  }
  const bad = spawnSync(process.execPath, [parseBin, "12x"], { encoding: "utf8" });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /not a decimal number/);
});

test("edge cases decode as the CLI decodes them", () => {
  const cases = [
    ["0", { layout: "twitter" }],
    ["18446744073709551615", { layout: "discord" }],
    ["18446744073709551615", { layout: "instagram" }],
    ["9223372036854775807", { layout: "twitter" }],
    ["123", { layout: "Twitter" }],
    ["123", { layout: "SONYFLAKE", tick: 1 }],
    ["175928847299117063", { layout: "discord", epoch: 0 }],
    // custom specs: spaces, a field called id, field values above 2^53, time past 9999
    ["123", { layout: " time : 41 , id:10, sequence:12" }],
    ["18446744073709551615", { layout: "time:4,big:59,sequence:1" }],
    ["18446744073709551615", { layout: "time:50,seq:14", tick: 1000 }],
    ["18446744073709551615", { layout: "time:60,seq:4", epoch: 0 }],
    ["4194303", { layout: "time:41,unix_ms:5,layout:5,increment:12" }],
    ["1", { layout: "time:1,seq:1" }],
  ];
  for (const [id, c] of cases) {
    const js = parse(id, { layout: c.layout, epochMs: c.epoch, tickMs: c.tick });
    assert.equal(formatParsed(js), cliJson(id, c), `${id} ${c.layout}`);
  }
  const big = parse("18446744073709551615", "time:4,big:59,sequence:1");
  assert.equal(big.big, 576460752303423487n, "a field above 2^53 is a BigInt");
  assert.equal(parse(910499571847892992n).worker, 25);
  assert.equal(parse(4194303).sequence, 4095);
  assert.equal(Client.parse, parse);
  assert.deepEqual(LAYOUT_PRESETS, ["twitter", "discord", "instagram", "sonyflake", "baidu"]);
});

test("bad IDs and layouts throw RangeError or TypeError where the CLI fails", () => {
  const bad = [
    ["12x", {}],
    ["", {}],
    ["-1", {}],
    ["18446744073709551616", {}],
    ["9223372036854775808", { layout: "twitter" }], // 64 bits, the layout has 63
    ["1", { layout: "nope" }],
    ["1", { layout: " twitter" }],
    ["1", { layout: "time:41,worker:10" }],
    ["1", { layout: "time:41,,sequence:12" }],
    ["1", { layout: "time:41,worker:5:5,sequence:12" }],
    ["1", { layout: "time:41,Worker:5,sequence:12" }],
    ["1", { layout: "time:41,worker:0,sequence:12" }],
    ["1", { layout: "time:41,worker:30,sequence:12" }],
    ["1", { layout: "time:41,seq:5,sequence:12" }],
    ["1", { layout: "time:41,worker:5,worker:5,sequence:12" }],
    ["1", { layout: "time:63,seq:1", tick: 2 }],
    ["1", { layout: "twitter", tick: 0 }],
    ["1", { layout: "twitter", tick: 86400001 }],
  ];
  for (const [id, c] of bad) {
    const run = idforge("parse", id, ...cliArgs({ layout: c.layout ?? "twitter", epoch: c.epoch, tick: c.tick }), "--json");
    assert.notEqual(run.status, 0, `the CLI accepted ${id} ${c.layout}`);
    assert.throws(() => parse(id, { layout: c.layout, epochMs: c.epoch, tickMs: c.tick }), RangeError,
                  `${id} ${c.layout} ${c.tick}`);
  }
  assert.throws(() => parse(-1n), RangeError);
  assert.throws(() => parse(1n << 64n), RangeError);
  assert.throws(() => parse(2 ** 60), RangeError, "a Number past 2^53 has lost its low bits");
  assert.throws(() => parse(1.5), RangeError);
  assert.throws(() => parse({}), TypeError);
  assert.throws(() => parse(null), TypeError);
  assert.throws(() => parse("1", { layout: 5 }), TypeError);
  assert.throws(() => parse("1", { epochMs: -1 }), RangeError);
  assert.throws(() => parse("1", { epochMs: {} }), TypeError);
});
