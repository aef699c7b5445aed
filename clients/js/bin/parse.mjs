#!/usr/bin/env node
// Decodes a Snowflake ID without a server and prints the JSON of `idforge parse --json`.
// Usage: node bin/parse.mjs ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS] [--json]
import { parse, formatParsed } from "../src/parse.js";

const usage = "usage: parse.mjs ID [--layout NAME|SPEC] [--epoch MS|ISO] [--tick-ms MS]";
const args = process.argv.slice(2);
const options = {};
let id;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  const eq = arg.indexOf("=");
  const [flag, inline] = arg.startsWith("--") && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
  const value = () => {
    if (inline !== undefined) return inline;
    if (i + 1 >= args.length) {
      console.error(`parse.mjs: ${flag} needs a value\n${usage}`);
      process.exit(2);
    }
    return args[++i];
  };
  if (flag === "-l" || flag === "--layout") options.layout = value();
  else if (flag === "--epoch") options.epochMs = value();
  else if (flag === "--tick-ms") options.tickMs = value();
  else if (flag === "--json") continue; // always JSON
  else if (flag === "-h" || flag === "--help") {
    console.log(usage);
    process.exit(0);
  } else if (id === undefined && !flag.startsWith("-")) id = flag;
  else {
    console.error(`parse.mjs: unexpected argument ${arg}\n${usage}`);
    process.exit(2);
  }
}
if (id === undefined) {
  console.error(usage);
  process.exit(2);
}
try {
  console.log(formatParsed(parse(id, options)));
} catch (error) {
  console.error(`parse.mjs: ${error.message}`);
  process.exit(2);
}
