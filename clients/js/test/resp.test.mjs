// The RESP2 reply parser and command encoding of the redis:// transport.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { RespParser, RespErrorReply, encodeCommand } from "../src/resp.js";

const replies = [
  "+OK\r\n",
  "-ERR not_found: unknown tag 'x'\r\n",
  ":18446744073709551615\r\n",
  ":-3\r\n",
  "$5\r\nhé\r\n\r\n",
  "$-1\r\n",
  "*-1\r\n",
  "*0\r\n",
  "*3\r\n:1\r\n*2\r\n$3\r\nabc\r\n-ERR inner\r\n:2\r\n",
];
const expected = [
  "OK",
  new RespErrorReply("ERR not_found: unknown tag 'x'"),
  18446744073709551615n,
  -3n,
  "hé\r\n",
  null,
  null,
  [],
  [1n, ["abc", new RespErrorReply("ERR inner")], 2n],
];

test("replies split at every byte parse the same as whole", () => {
  const bytes = Buffer.from(replies.join(""));
  for (let cut = 0; cut <= bytes.length; cut++) {
    const parser = new RespParser();
    const got = [];
    for (const part of [bytes.subarray(0, cut), bytes.subarray(cut)]) {
      parser.feed(part);
      for (let r = parser.next(); typeof r !== "symbol"; r = parser.next()) got.push(r);
    }
    assert.deepEqual(got, expected, `cut at ${cut}`);
  }
});

test("bytes that are not RESP2 throw", () => {
  for (const bad of [":12a\r\n", ":\r\n", "?x\r\n", "$x\r\n", ":1\rx"]) {
    const parser = new RespParser();
    parser.feed(Buffer.from(bad));
    assert.throws(() => parser.next(), Error, bad);
  }
});

test("commands are arrays of bulk strings, lengths in bytes", () => {
  assert.equal(encodeCommand(["ID.NEXT", "ordér", "256"]), "*3\r\n$7\r\nID.NEXT\r\n$6\r\nordér\r\n$3\r\n256\r\n");
});
