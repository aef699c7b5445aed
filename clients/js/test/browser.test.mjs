// "The same module usable in a browser": what the entry loads statically uses no Node.js
// module or global, and the package works in a context with a browser's globals only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, "../src");

test("the modules the entry imports statically name no node: module", () => {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm)]
      .map((m) => m[1] ?? m[2]);
    for (const specifier of specifiers) {
      assert.ok(specifier.startsWith("./"), `${path.basename(file)} imports "${specifier}" statically`);
      visit(path.resolve(path.dirname(file), specifier));
    }
  };
  visit(path.join(src, "index.js"));
  assert.deepEqual([...seen].map((f) => path.basename(f)).sort(),
                   ["client.js", "errors.js", "http.js", "index.js", "parse.js"]);
  // node:net comes in through one dynamic import, taken only for a redis:// server.
  assert.match(readFileSync(path.join(src, "client.js"), "utf8"), /import\("\.\/resp\.js"\)/);
  assert.match(readFileSync(path.join(src, "resp.js"), "utf8"), /from "node:net"/);
});

test("the package loads and fetches over http:// with a browser's globals only", () => {
  const run = spawnSync(process.execPath,
                        ["--experimental-vm-modules", path.resolve(here, "../test-support/browser_context.mjs")],
                        { encoding: "utf8", timeout: 20_000 });
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  assert.equal(run.stdout.trim(), "ok");
});
