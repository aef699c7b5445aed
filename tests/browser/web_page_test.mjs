// Browser test of idforge's web page: headless Debian Chromium driven by playwright-core.
// Usage: node web_page_test.mjs BASE_URL   (scripts/browser-test starts the server for it)
// Env: IDFORGE_SCREENSHOT (default docs/img/web-page.png), CHROMIUM (default /usr/bin/chromium).
// Prints one line per check and exits non-zero if any failed.
// The page speaks English, Kiswahili and Chinese (web/i18n.js): after the English steps it is
// run in Kiswahili and Chinese, chosen with its language selector and by the browser's
// language, and every visible string is checked to be translated (see "languages" below).
import {chromium} from 'playwright-core';
import fs from 'node:fs';
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
// Long enough for a page load on a 2-core machine that builds the .deb and compiles the
// install example beside this test (one such `make test` took 68 s for a 6 s run).
const timeoutMs = 30000;
// Requests that fail on purpose: a bad ID to parse, a tag that does not exist.
const kDeliberateFailures = ['/v1/decode/not-an-id', '/v1/segment/no-such-tag'];

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
// After a failure the server is asked directly, so the log tells a server that stopped
// answering from a browser that was slow.
async function step(name, body) {
  console.log(`-- ${name}`);
  const started = Date.now();
  try {
    await body();
    return true;
  } catch (e) {
    check(`${name} ran to the end`, false,
          `${e.message.split('\n')[0]} (after ${Date.now() - started} ms)`);
    console.log(`      then: ${await probeServer()}`);
    return false;
  }
}

async function probeServer() {
  const started = Date.now();
  try {
    const response =
        await fetch(new URL('v1/status', baseUrl), {signal: AbortSignal.timeout(5000)});
    await response.text();
    return `the server answered GET /v1/status ${response.status} in ${Date.now() - started} ms`;
  } catch (e) {
    const waited = Date.now() - started;
    return `the server did not answer GET /v1/status: ${e.message} (after ${waited} ms)`;
  }
}

async function getJson(route) {
  const response = await fetch(new URL(route, baseUrl));
  return {status: response.status, body: await response.json()};
}

const kDecimal = /^(0|[1-9][0-9]*)$/;
const kUuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const kUlid = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

const pageErrors = [];
const foreignRequests = [];
const failedResponses = [];

// Records a page's script errors, requests to other origins and failed requests.
function watch(page) {
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    // Chromium logs every 4xx/5xx fetch as a console error; those are judged by status below.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
      pageErrors.push(`console: ${m.text()}`);
    }
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !kDeliberateFailures.some((route) => r.url().includes(route))) {
      failedResponses.push(`${r.status()} ${r.url()}`);
    }
  });
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (url.protocol !== 'data:' && url.origin !== baseUrl.origin) foreignRequests.push(r.url());
  });
}

// --- languages ------------------------------------------------------------------------------
//
// Completeness is checked twice. The tables: web/i18n.js has the same keys in every language,
// the same {placeholders} in each string, and no Kiswahili or Chinese string equal to the
// English one but those of kSameAsEnglish. The page: after the same tour (generate, parse,
// compose, a page error and a server error, the status view with a tag's buffers) every
// visible text node, title, aria-label and placeholder is collected; in Kiswahili and Chinese
// none may equal an English string of the tour or of the English table (numbers and IDs
// masked), nor fit an English string with {placeholders} (a Kiswahili field name in an
// English sentence), unless it is made only of words that are the same in every language
// (kSameEverywhere). Text under translate="no" is data, not words of the page: IDs, tag and
// layout names, times, the server's own words (error details, the text diagram of idforge
// parse) and the names of the languages in the selector.

const kLanguages = {
  sw: {locale: 'sw-KE', htmlLang: 'sw'},
  zh: {locale: 'zh-CN', htmlLang: 'zh-Hans'},
};
// Table strings that may equal the English one: names of kinds of ID, a unit symbol, and
// Chinese's own "ID".
const kSameAsEnglish = {
  sw: ['gen.snowflake', 'gen.uuid7', 'gen.ulid', 'kind.snowflake', 'kind.uuid7', 'kind.ulid',
       'dur.ms'],
  zh: ['gen.uuid7', 'gen.ulid', 'kind.uuid7', 'kind.ulid', 'parse.id'],
};
// Words that the page shows the same in every language.
const kSameEverywhere = {
  all: ['idforge', 'Snowflake', 'UUIDv7', 'ULID', 'ms'],
  en: [],
  sw: [],
  zh: ['ID'],
};

const textOf = async (page, selector) =>
  (await page.locator(selector).first().textContent()).replace(/\s+/g, ' ').trim();

// IDs and times out of a string, so that only its words are left.
const maskIds = (text) => text.replace(/\s+/g, ' ').trim()
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '#')
    .replace(/\b[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\b/gi, '#')
    .replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, '#');
// A string with its IDs and numbers masked: two runs of the page compare equal.
const mask = (text) => maskIds(text).replace(/\d+(\.\d+)?/g, '#');

// Runs in the page: every visible text node and every title, aria-label, placeholder and
// alt of a visible element, but those under translate="no"; and the document's title.
function collectStrings() {
  const isData = (element) => {
    const owner = element.closest('[translate]');
    return owner !== null && owner.getAttribute('translate') === 'no';
  };
  const visible = (element) =>
    element.checkVisibility({checkVisibilityCSS: true, visibilityProperty: true});
  const where = (element) => {
    const parts = [];
    for (let e = element; e && e !== document.body; e = e.parentElement) {
      const id = e.getAttribute('id');  // not e.id: a form's input named "id" shadows it
      if (id) {
        parts.unshift(`#${id}`);
        break;
      }
      parts.unshift(e.tagName.toLowerCase() + [...e.classList].map((c) => `.${c}`).join(''));
    }
    return parts.join(' > ');
  };
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    const text = node.textContent.replace(/\s+/g, ' ').trim();
    if (!text || !parent || parent.closest('script, style') || isData(parent) ||
        !visible(parent)) {
      continue;
    }
    found.push({where: where(parent), text});
  }
  for (const element of document.body.querySelectorAll('*')) {
    if (isData(element) || !visible(element)) continue;
    for (const name of ['title', 'aria-label', 'placeholder', 'alt']) {
      const value = (element.getAttribute(name) || '').trim();
      if (value) found.push({where: `${where(element)} [${name}]`, text: value});
    }
    if (element.matches('input[type=button], input[type=submit], input[type=reset]')) {
      found.push({where: `${where(element)} [value]`, text: element.value});
    }
  }
  found.push({where: 'document.title', text: document.title});
  return found;
}

function checkTables(tables) {
  const en = tables.en;
  const keys = Object.keys(en);
  check(`en table has the page's strings (${keys.length})`, keys.length > 100);
  const placeholders = (s) => [...String(s).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join();
  for (const lang of Object.keys(kLanguages)) {
    const table = tables[lang];
    const missing = keys.filter((k) => !Object.hasOwn(table, k));
    const extra = Object.keys(table).filter((k) => !Object.hasOwn(en, k));
    check(`${lang} table has every key of en`, missing.length === 0, missing.join(', '));
    check(`${lang} table has no key that en lacks`, extra.length === 0, extra.join(', '));
    const present = keys.filter((k) => Object.hasOwn(table, k));
    const empty = present.filter((k) => typeof table[k] !== 'string' || !table[k].trim());
    check(`${lang} table has no empty string`, empty.length === 0, empty.join(', '));
    const moved = present.filter((k) => placeholders(table[k]) !== placeholders(en[k]));
    check(`${lang} strings have the {placeholders} of en`, moved.length === 0,
          moved.map((k) => `${k}: ${table[k]}`).join('; '));
    const same = present.filter((k) => table[k] === en[k] && !kSameAsEnglish[lang].includes(k));
    check(`${lang} table has no string left in English`, same.length === 0,
          same.map((k) => `${k}: ${table[k]}`).join('; '));
  }
}

// What an English string with {placeholders} looks like filled in, for strings whose own words
// are English: "{name}: {width} bits ({range})" but not "{count} ULID".
function englishPatterns(en) {
  const patterns = [];
  for (const value of Object.values(en)) {
    if (!/\{\w+\}/.test(value)) continue;
    const words = value.replace(/\{\w+\}/g, ' ').match(/\p{L}[\p{L}\p{N}]*/gu) || [];
    if (!words.some((word) => word.length > 1 && !kSameEverywhere.all.includes(word))) continue;
    const parts = value.replace(/\s+/g, ' ').trim().split(/\{\w+\}/)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    patterns.push(new RegExp(`^${parts.join('.+?')}$`, 's'));
  }
  return patterns;
}

// Strings of a tour that are left in English, unfilled {placeholders} and raw keys.
// english: {strings: masked English strings, patterns: englishPatterns()}.
function checkTranslated(label, lang, found, english) {
  const same = new Set([...kSameEverywhere.all, ...kSameEverywhere[lang]]);
  const untranslated = [];
  const unfilled = [];
  for (const {where, text} of found) {
    if (/\{\w+\}/.test(text) || /^[a-z]+\.[a-zA-Z_.]+$/.test(text)) unfilled.push(`${where}: "${text}"`);
    if (!english.strings.has(mask(text)) && !english.patterns.some((p) => p.test(text))) continue;
    const words = maskIds(text).match(/\p{L}[\p{L}\p{N}]*/gu) || [];
    if (words.every((word) => same.has(word))) continue;
    untranslated.push(`${where}: "${text}"`);
  }
  check(`${label}: ${found.length} strings seen`, found.length > 100);
  check(`${label}: none left in English`, untranslated.length === 0,
        `${untranslated.length}: ${untranslated.slice(0, 12).join('; ')}`);
  check(`${label}: no placeholder or key shown`, unfilled.length === 0, unfilled.join('; '));
}

// The server's error for a missing tag, shown in the page's language with the server's words.
async function checkServerError(page, lang, table) {
  const {status, body} = await getJson('v1/segment/no-such-tag');
  checkEqual('GET /v1/segment/no-such-tag status', status, 404);
  checkEqual(`${lang}: the server's error explained in the page's language`,
             await textOf(page, '#gen-error'),
             table['error.code.not_found'].replace('{detail}', body.error.message));
  checkEqual(`${lang}: the server's own words in the error`,
             await textOf(page, '#gen-error .error-detail'), body.error.message);
}

// The same steps in any language, leaving every part of the page filled in: segment and
// Snowflake IDs, one parsed with its own button, a composed ID, a page error and then a
// server error under Generate, and the status view with tag order's buffers.
async function tour(page, lang, table) {
  await page.waitForFunction(
      () => document.getElementById('status-lease-state').textContent !== '–');
  await page.fill('#gen-count', '2');
  await page.fill('#gen-tag', 'order');
  await page.click('#gen-segment');
  await page.locator('#gen-result [data-testid="generated-id"][data-kind="segment"]').first()
      .waitFor();
  await page.click('#gen-snowflake');
  const snowflake = page.locator('#gen-result [data-testid="generated-id"][data-kind="snowflake"]');
  await snowflake.first().waitFor();
  const id = await textOf(snowflake.first(), 'code');
  await snowflake.first().locator('button').click();
  await page.waitForFunction(
      (id) => document.getElementById('parse-id').textContent === id &&
              !document.getElementById('parse-result').hidden,
      id);
  await page.locator('#compose-fields input').first().waitFor();
  await page.click('#compose-button');
  await page.locator('#compose-id').waitFor();
  const composed = await textOf(page, '#compose-id');
  await page.waitForFunction(
      (id) => document.getElementById('parse-id').textContent === id, composed);

  await page.fill('#gen-tag', '');
  await page.click('#gen-segment');
  await page.locator('#gen-error').waitFor({state: 'visible'});
  checkEqual(`${lang}: the page's own error in its language`, await textOf(page, '#gen-error'),
             table['error.needTag']);
  await page.fill('#gen-tag', 'no-such-tag');
  await page.click('#gen-segment');
  await page.waitForFunction(() => document.getElementById('gen-error').dataset.code === 'not_found');
  await checkServerError(page, lang, table);
  await page.fill('#gen-tag', 'order');
  await page.locator('#status-tags [data-testid="tag-buffers"][data-tag="order"]').waitFor();
}

async function languageSteps(page, newContext) {
  let tables = null;
  let english = null;
  await step('translation tables', async () => {
    tables = await page.evaluate(() => Object.fromEntries(
        Object.entries(window.idforgeI18n.languages).map(([code, l]) => [code, l.strings])));
    checkEqual('languages offered', Object.keys(tables).join(' '), 'en sw zh');
    checkTables(tables);
  });
  if (!tables) return;

  await step('the page in English', async () => {
    checkEqual('en: <html lang>', await page.getAttribute('html', 'lang'), 'en');
    checkEqual('en: the selector shows', await page.inputValue('#language'), 'en');
    await tour(page, 'en', tables.en);
    const found = await page.evaluate(collectStrings);
    // Only that no placeholder or key is shown: nothing to compare with.
    checkTranslated('en', 'en', found, {strings: new Set(), patterns: []});
    english = {strings: new Set(found.map(({text}) => mask(text))),
               patterns: englishPatterns(tables.en)};
    for (const value of Object.values(tables.en)) {
      english.strings.add(mask(value.replace(/\{\w+\}/g, '#')));
    }
  });
  if (!english) return;

  for (const lang of Object.keys(kLanguages)) {
    await step(`the page in ${lang}, chosen with the selector`, async () => {
      await page.selectOption('#language', lang);
      checkEqual(`${lang}: <html lang>`, await page.getAttribute('html', 'lang'),
                 kLanguages[lang].htmlLang);
      checkEqual(`${lang}: the Generate card's title`, await textOf(page, '#generate-title'),
                 tables[lang]['gen.title']);
      await checkServerError(page, lang, tables[lang]);  // drawn again in the new language
      checkTranslated(`${lang} (selector)`, lang, await page.evaluate(collectStrings), english);
    });
  }

  await step('the language chosen is remembered', async () => {
    await page.reload({waitUntil: 'load'});
    checkEqual('after a reload: <html lang>', await page.getAttribute('html', 'lang'), 'zh-Hans');
    checkEqual('after a reload: the selector shows', await page.inputValue('#language'), 'zh');
    checkEqual('after a reload: the Generate card\'s title', await textOf(page, '#generate-title'),
               tables.zh['gen.title']);
    await page.selectOption('#language', 'en');
    checkEqual('back in English', await textOf(page, '#generate-title'), 'Generate');
    checkEqual('stored choice', await page.evaluate(() => localStorage.getItem('idforge.language')),
               'en');
  });

  for (const [lang, {locale, htmlLang}] of Object.entries(kLanguages)) {
    await step(`the page in ${lang}, from the browser's language ${locale}`, async () => {
      const context = await newContext(locale);
      try {
        const page = await context.newPage();
        watch(page);
        const response = await page.goto(baseUrl.href, {waitUntil: 'load'});
        const asked = (await response.request().allHeaders())['accept-language'] || '';
        check(`${lang}: the browser asks for Accept-Language ${locale} ("${asked}")`,
              asked.startsWith(locale));
        checkEqual(`${lang}: <html lang>`, await page.getAttribute('html', 'lang'), htmlLang);
        checkEqual(`${lang}: the selector shows`, await page.inputValue('#language'), lang);
        await tour(page, lang, tables[lang]);
        checkTranslated(`${lang} (browser)`, lang, await page.evaluate(collectStrings), english);
      } finally {
        await context.close();
      }
    });
  }
}

async function main() {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // A fresh profile per context: the browser's language is the context's locale.
  const newContext = async (locale) => {
    const context = await browser.newContext({
      viewport: {width: 1280, height: 900},
      deviceScaleFactor: 1,
      timezoneId: timeZone,
      locale,
      colorScheme: 'light',
    });
    context.setDefaultTimeout(timeoutMs);
    return context;
  };
  const context = await newContext('en-US');
  const page = await context.newPage();
  watch(page);

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
      checkEqual('parse error shows the API\'s message', await text('#parse-error .error-detail'),
                 body.error.message);
      checkEqual('parse error explains the code', await text('#parse-error'),
                 `The server refused the input: ${body.error.message}`);
      checkEqual('parse error\'s code', await page.getAttribute('#parse-error', 'data-code'),
                 'invalid_argument');
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
            ['ready', 'fetching', 'empty'].includes(next));
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
      await page.setViewportSize({width: 1280, height: 900});
    });

    await languageSteps(page, newContext);

    check('no request left the server\'s origin (no CDN)', foreignRequests.length === 0,
          foreignRequests.join(', '));
    check('no script errors in the page', pageErrors.length === 0, pageErrors.join(' | '));
    check('no failed request but the deliberate ones', failedResponses.length === 0,
          failedResponses.join(', '));
  } finally {
    await browser.close();
  }
}

try {
  await main();
} catch (e) {
  check('browser test ran', false, e.message);
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
