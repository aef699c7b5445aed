// Browser test of idforge's web page: headless Debian Chromium driven by playwright-core.
// Usage: node web_page_test.mjs BASE_URL   (scripts/browser-test starts the server for it)
// Env: IDFORGE_SCREENSHOT (default docs/img/web-page.png), CHROMIUM (default /usr/bin/chromium).
// Prints one line per check and exits non-zero if any failed.
import {chromium} from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '..', '..');
const baseUrl = new URL(process.argv[2] || process.env.IDFORGE_URL || '');
const screenshotPath =
    process.env.IDFORGE_SCREENSHOT || path.join(repoRoot, 'docs', 'img', 'web-page.png');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
// A zone with a half-hour offset and no daylight saving, so "local time" is checkable.
const timeZone = 'Asia/Kolkata';
const zoneOffsetMs = (5 * 60 + 30) * 60 * 1000;
const timeoutMs = 10000;

let passed = 0;
let failed = 0;

function check(what, ok, detail = '') {
  if (ok) {
    ++passed;
    console.log(`ok    ${what}`);
  } else {
    ++failed;
    console.log(`FAIL  ${what}${detail ? `: ${detail}` : ''}`);
  }
  return ok;
}

function checkEqual(what, actual, expected) {
  return check(`${what} = ${JSON.stringify(expected)}`, actual === expected,
               `got ${JSON.stringify(actual)}`);
}

// Runs one step; an exception (a timeout waiting for an element, say) fails the step only.
async function step(name, body) {
  console.log(`-- ${name}`);
  try {
    await body();
    return true;
  } catch (e) {
    return check(`${name} ran to the end`, false, e.message.split('\n')[0]);
  }
}

async function getJson(route) {
  const response = await fetch(new URL(route, baseUrl));
  return {status: response.status, body: await response.json()};
}

const kDecimal = /^(0|[1-9][0-9]*)$/;
const kUuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const kUlid = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

async function main() {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'idforge-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: {width: 1280, height: 900},
    deviceScaleFactor: 1,
    timezoneId: timeZone,
    locale: 'en-US',
    colorScheme: 'light',
  });
  context.setDefaultTimeout(timeoutMs);
  const page = context.pages()[0] || await context.newPage();

  const pageErrors = [];
  const foreignRequests = [];
  const failedResponses = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    // Chromium logs every 4xx/5xx fetch as a console error; those are judged by status below.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
      pageErrors.push(`console: ${m.text()}`);
    }
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.url().includes('/v1/decode/not-an-id')) {
      failedResponses.push(`${r.status()} ${r.url()}`);
    }
  });
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.protocol !== 'data:' && url.origin !== baseUrl.origin) foreignRequests.push(r.url());
  });

  const text = async (selector) => (await page.locator(selector).first().textContent()).trim();

  try {
    const opened = await step('open the page', async () => {
      const response = await page.goto(baseUrl.href, {waitUntil: 'load'});
      checkEqual('GET / status', response.status(), 200);
      checkEqual('title', await page.title(), 'idforge');
      // The status view fills in on its first poll.
      await page.waitForFunction(() => document.getElementById('status-lease-state').textContent !== '–');
      check('status view answered', true);
    });
    if (!opened) return;  // every later step would only time out

    let snowflake = '';
    await step('generate a Snowflake ID', async () => {
      await page.click('#gen-snowflake');
      const item = page.locator('#gen-result [data-testid="generated-id"][data-kind="snowflake"]');
      await item.first().waitFor();
      snowflake = (await item.first().locator('code').textContent()).trim();
      check(`snowflake ${snowflake} is a decimal number`, kDecimal.test(snowflake));
      check('snowflake fits in 64 bits', kDecimal.test(snowflake) && BigInt(snowflake) < 2n ** 64n);
    });

    await step('parse the Snowflake ID', async () => {
      await page.fill('#parse-input', snowflake);
      await page.fill('#parse-layout', '');
      await page.click('#parse-button');
      await page.waitForFunction(
          (id) => document.getElementById('parse-id').textContent === id &&
                  !document.getElementById('parse-result').hidden,
          snowflake);
      const {status, body: decoded} = await getJson(`v1/decode/${snowflake}`);
      checkEqual('GET /v1/decode status', status, 200);
      checkEqual('shown id', await text('#parse-id'), decoded.id);
      checkEqual('shown layout', await text('#parse-layout-name'), decoded.layout);
      checkEqual('shown time in UTC matches the decode API', await text('#parse-time-utc'),
                 decoded.time);
      checkEqual('shown unix ms', await text('#parse-unix-ms'), String(decoded.unix_ms));
      const wallClock = new Date(decoded.unix_ms + zoneOffsetMs).toISOString();
      const expectedLocal = `${wallClock.slice(0, 10)} ${wallClock.slice(11, 23)} GMT+5:30`;
      const local = await text('#parse-time-local');
      check(`local time starts with "${expectedLocal}" (${timeZone})`,
            local.startsWith(expectedLocal), `got "${local}"`);
      for (const name of ['datacenter', 'worker']) {
        if (!(name in decoded)) {
          check(`layout ${decoded.layout} has a ${name} field`, false);
          continue;
        }
        checkEqual(`shown ${name} matches the decode API`,
                   await text(`#parse-fields td[data-field="${name}"]`), String(decoded[name]));
      }
      for (const field of decoded.fields) {
        checkEqual(`shown field ${field.name}`,
                   await text(`#parse-fields td[data-field="${field.name}"]`), field.value);
      }
      const cells = page.locator('#bit-diagram [data-testid="bit-cell"]');
      checkEqual('bit cells in the diagram', await cells.count(), 64);
      checkEqual('bit cells spell the binary of the decode API',
                 (await cells.allTextContents()).join(''), decoded.binary);
      const timeField = decoded.fields.find((f) => f.role === 'time');
      checkEqual(`cells coloured as ${timeField.name}`,
                 await page.locator(`#bit-diagram .bit[data-field="${timeField.name}"]`).count(),
                 timeField.bits);
      const {body: status2} = await getJson('v1/status');
      if (status2.lease && Number.isInteger(status2.lease.worker)) {
        checkEqual('the ID carries the leased worker', decoded.worker, status2.lease.worker);
        checkEqual('the ID carries the leased datacenter', decoded.datacenter,
                   status2.lease.datacenter);
      }
    });

    await step('generate segment IDs for tag order', async () => {
      await page.fill('#gen-count', '3');
      await page.fill('#gen-tag', 'order');
      await page.click('#gen-segment');
      const items = page.locator('#gen-result [data-testid="generated-id"][data-kind="segment"]');
      await items.first().waitFor();
      const ids = (await items.locator('code').allTextContents()).map((s) => s.trim());
      checkEqual('segment IDs shown', ids.length, 3);
      check(`segment IDs ${ids.join(', ')} are decimal numbers`,
            ids.length > 0 && ids.every((id) => kDecimal.test(id)));
      check('segment IDs increase',
            ids.every((id, i) => i === 0 || BigInt(id) > BigInt(ids[i - 1])));
      await page.fill('#gen-count', '1');
    });

    for (const [kind, pattern] of [['uuid7', kUuid7], ['ulid', kUlid]]) {
      await step(`generate a ${kind}`, async () => {
        await page.click(`#gen-${kind}`);
        const item = page.locator(`#gen-result [data-testid="generated-id"][data-kind="${kind}"]`);
        await item.first().waitFor();
        const id = (await item.first().locator('code').textContent()).trim();
        check(`${kind} ${id} matches ${pattern}`, pattern.test(id));
        const shown = Date.parse(await item.first().locator('.id-note').textContent());
        check(`${kind}'s time shown by the page is within 10 minutes of now`,
              Math.abs(shown - Date.now()) < 10 * 60 * 1000, `got ${new Date(shown).toISOString()}`);
      });
    }

    await step('show the server\'s error message', async () => {
      const {status, body} = await getJson('v1/decode/not-an-id');
      checkEqual('GET /v1/decode/not-an-id status', status, 400);
      await page.fill('#parse-input', 'not-an-id');
      await page.click('#parse-button');
      await page.locator('#parse-error').waitFor({state: 'visible'});
      checkEqual('parse error shows the API\'s message', await text('#parse-error'),
                 body.error.message);
      check('old parse result hidden', await page.locator('#parse-result').isHidden());
    });

    await step('compose an ID for a chosen time and fields', async () => {
      const chosenTime = '2026-01-02T03:04:05.678Z';
      await page.fill('#compose-layout', '');
      await page.fill('#compose-time', chosenTime);
      const inputs = page.locator('#compose-fields input');
      await inputs.first().waitFor();
      const chosen = {};
      const count = await inputs.count();
      for (let i = 0; i < count; ++i) {
        const input = inputs.nth(i);
        const name = await input.getAttribute('name');
        const max = Number(await input.getAttribute('max'));
        chosen[name] = Math.min(max, i * 2 + 3);  // distinct, small, non-zero
        await input.fill(String(chosen[name]));
      }
      check(`compose offers the layout's fields (${Object.keys(chosen).join(', ')})`, count > 0);
      await page.click('#compose-button');
      await page.locator('#compose-id').waitFor();
      const composed = await text('#compose-id');
      check(`composed ${composed} is a decimal number`, kDecimal.test(composed));
      const params = new URLSearchParams({time: chosenTime});
      for (const [k, v] of Object.entries(chosen)) params.set(k, String(v));
      const {body: viaApi} = await getJson(`v1/compose?${params}`);
      checkEqual('the page composes what the compose API answers', composed, viaApi.id);
      const {body: decoded} = await getJson(`v1/decode/${composed}`);
      checkEqual('round trip: decoded time', decoded.time, chosenTime);
      for (const [name, value] of Object.entries(chosen)) {
        checkEqual(`round trip: decoded ${name}`, decoded[name], value);
      }
      await page.waitForFunction(
          (id) => document.getElementById('parse-id').textContent === id, composed);
      checkEqual('the page parses the composed ID: time', await text('#parse-time-utc'),
                 chosenTime);
      for (const [name, value] of Object.entries(chosen)) {
        checkEqual(`the page parses the composed ID: ${name}`,
                   await text(`#parse-fields td[data-field="${name}"]`), String(value));
      }
    });

    await step('status view: lease, clock, buffers, requests per second', async () => {
      const tag = page.locator('#status-tags [data-testid="tag-buffers"][data-tag="order"]');
      await tag.waitFor();
      await page.waitForFunction(() => /^\d+\.\d$/.test(document.getElementById('status-rps').textContent));
      const {body: status} = await getJson('v1/status');
      const leaseShown = await text('#status-lease-state');
      check(`lease shown ("${leaseShown}") is the server's ("${status.lease.state}")`,
            leaseShown.startsWith(status.lease.state));
      checkEqual('lease slot shown', await text('#status-lease-slot'), String(status.lease.slot));
      check('clock offset shown', /^-?\d+(\.\d+)? ms$/.test(await text('#status-clock-offset')));
      check('borrowed ms shown', /^\d+(\.\d+)? ms$/.test(await text('#status-borrowed')));
      check('requests per second shown', /^\d+\.\d$/.test(await text('#status-rps')));
      const range = (await tag.locator('[data-buffer="current"] .mono').textContent()).trim();
      check(`order's current buffer shows its range (${range})`, /^\d+ – \d+$/.test(range));
      const next = await tag.locator('[data-buffer="next"]').getAttribute('data-state');
      check(`order's next buffer shows its state (${next})`,
            ['ready', 'fetching…', 'empty'].includes(next));
      checkEqual('order buffer progress bars', await tag.locator('progress').count(), 1);
    });

    await step('screenshot', async () => {
      fs.mkdirSync(path.dirname(screenshotPath), {recursive: true});
      await page.screenshot({path: screenshotPath, fullPage: true});
      check(`saved ${path.relative(process.cwd(), screenshotPath)}`,
            fs.statSync(screenshotPath).size > 10000);
    });

    await step('narrow screen (390 px)', async () => {
      await page.setViewportSize({width: 390, height: 844});
      const overflow = await page.evaluate(
          () => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      checkEqual('page overflow to the side in px', overflow, 0);
      check('generate buttons visible', await page.locator('#gen-ulid').isVisible());
    });

    check('no request left the server\'s origin (no CDN)', foreignRequests.length === 0,
          foreignRequests.join(', '));
    check('no script errors in the page', pageErrors.length === 0, pageErrors.join(' | '));
    check('no failed request but the deliberate bad ID', failedResponses.length === 0,
          failedResponses.join(', '));
  } finally {
    await context.close();
    fs.rmSync(userDataDir, {recursive: true, force: true});
  }
}

try {
  await main();
} catch (e) {
  check('browser test ran', false, e.message);
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
