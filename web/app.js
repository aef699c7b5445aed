// idforge web page: generate, compose and parse IDs, and watch the server's status.
// Talks only to the JSON API of docs/api.md, with relative URLs so the page also works
// behind a reverse proxy under a sub-path. 64-bit IDs stay decimal strings; any arithmetic
// on them uses BigInt, because a JavaScript number loses integers above 2^53.
// Every word it shows comes from the tables of i18n.js (English, Kiswahili, Chinese), in
// the language the browser asks for or the one chosen on the page.
'use strict';

(() => {
  const kStatusPollMs = 1000;
  const kMaxCount = 100;  // the page's own cap; the server allows more
  const kLanguageKey = 'idforge.language';  // localStorage: the language chosen on the page

  const $ = (id) => document.getElementById(id);

  // Builds an element: el('li', {class: 'x', dataset: {kind: 'ulid'}}, 'text', child).
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // --- language ---------------------------------------------------------------------------

  const i18n = window.idforgeI18n;
  let language = i18n.fallback;
  const pluralRules = {};

  const table = (lang) => i18n.languages[lang].strings;
  const known = (key) => Object.hasOwn(table(i18n.fallback), key);

  // The string for key in the page's language, {name} filled in from params. A key that the
  // language lacks shows in English (the browser test fails on that), an unknown key as is.
  function t(key, params = {}) {
    let text = table(language)[key];
    if (text === undefined) text = table(i18n.fallback)[key];
    if (text === undefined) return key;
    return text.replace(/\{(\w+)\}/g,
                        (whole, name) => (Object.hasOwn(params, name) ? String(params[name]) : whole));
  }

  // key.one or key.other, as the language's plural rules choose for n.
  function tn(key, n, params = {}) {
    const lang = i18n.languages[language].htmlLang;
    pluralRules[lang] ??= new Intl.PluralRules(lang);
    const form = pluralRules[lang].select(Number(n)) === 'one' ? 'one' : 'other';
    return t(`${key}.${form}`, params);
  }

  // The string for key as a list of strings and nodes, its {slot}s filled from slots: for
  // sentences that hold elements, such as the server's own words in an error.
  function tNodes(key, slots) {
    const template = t(key);
    const parts = [];
    let last = 0;
    for (const match of template.matchAll(/\{(\w+)\}/g)) {
      parts.push(template.slice(last, match.index));
      parts.push(Object.hasOwn(slots, match[1]) ? slots[match[1]] : match[0]);
      last = match.index + match[0].length;
    }
    parts.push(template.slice(last));
    return parts.filter((part) => part !== '');
  }

  // The name of a field of a layout as people read it; a custom layout's own names as they are.
  const fieldName = (name) => (known(`field.${name}`) ? t(`field.${name}`) : name);

  // The page's language for a browser language tag, or null: sw (and ISO 639-3 swh, swc) is
  // Kiswahili; zh, zh-CN, zh-SG, zh-Hans... simplified Chinese; en... English. Traditional
  // Chinese (zh-TW, zh-HK, zh-MO, zh-Hant...) is not offered: the browser's next choice wins.
  function matchLanguage(tag) {
    const parts = String(tag).toLowerCase().split(/[-_]/);
    if (parts[0] === 'en') return 'en';
    if (['sw', 'swh', 'swc'].includes(parts[0])) return 'sw';
    if (parts[0] === 'zh') {
      if (parts.includes('hant') || ['tw', 'hk', 'mo'].includes(parts[1])) return null;
      return 'zh';
    }
    return null;
  }

  function storedLanguage() {
    try {
      const lang = localStorage.getItem(kLanguageKey);
      return lang && Object.hasOwn(i18n.languages, lang) ? lang : null;
    } catch (e) {
      return null;  // storage refused (a private window, say)
    }
  }

  // The first of the browser's languages (its Accept-Language) that the page speaks.
  function browserLanguage() {
    const tags = navigator.languages && navigator.languages.length ? navigator.languages
                                                                    : [navigator.language];
    for (const tag of tags) {
      const lang = matchLanguage(tag || '');
      if (lang) return lang;
    }
    return i18n.fallback;
  }

  // Static text: data-i18n="key" sets an element's text (its [data-slot] children go where
  // the translation has {slot}); data-i18n-attr="attribute:key ..." sets attributes.
  function translateStatic() {
    for (const node of document.querySelectorAll('[data-i18n]')) {
      const slots = {};
      for (const child of node.querySelectorAll('[data-slot]')) slots[child.dataset.slot] = child;
      if (Object.keys(slots).length) {
        node.replaceChildren(...tNodes(node.dataset.i18n, slots));
      } else {
        node.textContent = t(node.dataset.i18n);
      }
    }
    for (const node of document.querySelectorAll('[data-i18n-attr]')) {
      for (const pair of node.dataset.i18nAttr.split(/\s+/)) {
        const colon = pair.indexOf(':');
        if (colon > 0) node.setAttribute(pair.slice(0, colon), t(pair.slice(colon + 1)));
      }
    }
  }

  // What the page shows, kept so that a change of language can draw it again.
  const shown = {generated: null, decoded: null, composeFields: null, composed: null,
                 status: null};
  const errors = {};  // error element id -> the PageError it shows

  function setLanguage(lang) {
    language = lang;
    document.documentElement.lang = i18n.languages[lang].htmlLang;
    $('language').value = lang;
    translateStatic();
    if (shown.generated) renderGenerated(shown.generated.kind, shown.generated.body);
    if (shown.composeFields) renderComposeFields(shown.composeFields);
    if (shown.composed) renderComposed(shown.composed);
    if (shown.decoded) renderDecoded(shown.decoded);
    if (shown.status) renderStatusView(shown.status);
    for (const [id, error] of Object.entries(errors)) showError(id, error);
  }

  // --- errors and the API -----------------------------------------------------------------

  // An error to show: a translation key and its parameters, and either the server's own words
  // (detail, shown as they are, in English) or another error it explains (inner). code is the
  // API's error code or the page's own ('network', 'http', 'bad_answer', 'page').
  class PageError extends Error {
    constructor(key, {params = {}, detail = '', inner = null, code = ''} = {}) {
      super(detail || key);
      this.key = key;
      this.params = params;
      this.detail = detail;
      this.inner = inner;
      this.code = code;
    }
  }

  // An error answer of the API: one sentence per error code, with the server's message.
  function apiError(code, message) {
    if (known(`error.code.${code}`)) return new PageError(`error.code.${code}`, {detail: message, code});
    return new PageError('error.code.other', {params: {code}, detail: message, code});
  }

  // A server with a tokens file (docs/operations.md, "Security") needs one on every API
  // request: open the page as /#token=SECRET. The token is kept for this tab only
  // (sessionStorage) and taken out of the address bar, so it is not bookmarked or shared.
  const kTokenKey = 'idforge.token';
  function pageToken() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem(kTokenKey, decodeURIComponent(match[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    return sessionStorage.getItem(kTokenKey);
  }
  const token = pageToken();

  // GETs a JSON route; an error answer becomes a PageError carrying the server's message.
  async function api(path) {
    let response;
    const headers = {Accept: 'application/json'};
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      response = await fetch(path, {headers, cache: 'no-store'});
    } catch (e) {
      throw new PageError('error.network', {code: 'network'});
    }
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;  // not JSON: reported below
    }
    if (!response.ok) {
      const error = body && body.error;
      if (error && error.message) throw apiError(error.code || 'unknown', error.message);
      throw new PageError('error.http', {params: {status: response.status}, code: 'http'});
    }
    if (body === null || typeof body !== 'object') {
      throw new PageError('error.notJson', {code: 'bad_answer'});
    }
    return body;
  }

  function query(params) {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== '') search.set(key, value);
    }
    const text = search.toString();
    return text ? `?${text}` : '';
  }

  function errorNodes(error) {
    if (!(error instanceof PageError)) {
      error = new PageError('error.unexpected', {detail: String((error && error.message) || error),
                                                 code: 'page'});
    }
    const detail = error.inner
        ? el('span', {class: 'error-inner'}, ...errorNodes(error.inner))
        : el('span', {class: 'error-detail', translate: 'no', lang: 'en', text: error.detail});
    return tNodes(error.key, {...error.params, detail});
  }

  // Shows error (a PageError, or anything thrown) in the element id, or hides it for null.
  function showError(id, error) {
    const node = $(id);
    errors[id] = error || null;
    if (!error) {
      if (!node.hidden) node.replaceChildren();
      node.hidden = true;
      delete node.dataset.code;
      return;
    }
    node.replaceChildren(...errorNodes(error));
    node.dataset.code = error.code || 'page';
    node.hidden = false;
  }

  // Runs an action with its button disabled and the result region marked busy; shows errors.
  async function guarded(errorId, button, region, action) {
    showError(errorId, null);
    if (button) button.disabled = true;
    if (region) region.setAttribute('aria-busy', 'true');
    try {
      await action();
    } catch (e) {
      showError(errorId, e);
    } finally {
      if (button) button.disabled = false;
      if (region) region.removeAttribute('aria-busy');
    }
  }

  // --- time -------------------------------------------------------------------------------

  // en-US only for its numeric parts: the layout below is the same in every language.
  const localFormat = new Intl.DateTimeFormat('en-US', {
    year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
    second: '2-digit', fractionalSecondDigits: 3, hourCycle: 'h23', timeZoneName: 'shortOffset',
  });
  const localZone = localFormat.resolvedOptions().timeZone;

  // "2017-09-20 21:43:08.849 GMT+8 (Asia/Shanghai)": fixed field order whatever the locale,
  // so the same instant always reads the same way next to the UTC time.
  function formatLocal(unixMs) {
    const parts = {};
    for (const part of localFormat.formatToParts(new Date(unixMs))) parts[part.type] = part.value;
    const year = String(parts.year).padStart(4, '0');
    return `${year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}` +
           `.${parts.fractionalSecond} ${parts.timeZoneName} (${localZone})`;
  }

  function isoUtc(unixMs) {
    const date = new Date(unixMs);
    return Number.isNaN(date.getTime()) ? '' : date.toISOString();
  }

  function formatDuration(ms) {
    if (!Number.isFinite(ms)) return '–';
    const seconds = ms / 1000;
    if (seconds < 60) return t('dur.s', {n: seconds.toFixed(seconds < 10 ? 1 : 0)});
    if (seconds < 3600) {
      return t('dur.min', {m: Math.floor(seconds / 60), s: Math.floor(seconds % 60)});
    }
    if (seconds < 86400) return t('dur.h', {n: (seconds / 3600).toFixed(1)});
    if (seconds < 86400 * 365) return t('dur.days', {n: (seconds / 86400).toFixed(1)});
    return t('dur.years', {n: (seconds / (86400 * 365.25)).toFixed(1)});
  }

  const formatMs = (ms) => t('dur.ms', {n: ms ?? 0});

  // --- generate ---------------------------------------------------------------------------

  const kCrockford = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

  // The Unix ms inside a UUIDv7 (first 48 bits) or a ULID (first 10 base32 digits).
  function embeddedTime(kind, id) {
    if (kind === 'uuid7') {
      const hex = id.replace(/-/g, '').slice(0, 12);
      return /^[0-9a-fA-F]{12}$/.test(hex) ? parseInt(hex, 16) : null;
    }
    if (kind === 'ulid') {
      let ms = 0;
      for (const c of id.slice(0, 10).toUpperCase()) {
        const digit = kCrockford.indexOf(c);
        if (digit < 0) return null;
        ms = ms * 32 + digit;  // 48 bits: exact in a number
      }
      return ms;
    }
    return null;
  }

  function readCount() {
    const input = $('gen-count');
    let count = Math.trunc(Number(input.value));
    if (!Number.isFinite(count) || count < 1) count = 1;
    if (count > kMaxCount) count = kMaxCount;
    input.value = String(count);
    return count;
  }

  async function generate(kind, button) {
    const region = $('gen-result');
    await guarded('gen-error', button, region, async () => {
      const count = readCount();
      let path = `v1/${kind}${query({count})}`;
      if (kind === 'segment') {
        const tag = $('gen-tag').value.trim();
        if (!tag) throw new PageError('error.needTag', {code: 'invalid_argument'});
        path = `v1/segment/${encodeURIComponent(tag)}${query({count})}`;
      }
      const body = await api(path);
      shown.generated = {kind, body};
      renderGenerated(kind, body);
    });
  }

  function parseButton(id, layout) {
    const button = el('button', {type: 'button', class: 'secondary small',
                                 'aria-label': t('gen.parseThis', {id}), text: t('parse.button')});
    button.addEventListener('click', () => parseId(id, layout));
    return button;
  }

  function renderGenerated(kind, body) {
    const region = $('gen-result');
    const ids = Array.isArray(body.ids) ? body.ids : [];
    const title = tn(`gen.result.${kind}`, ids.length, {count: ids.length, tag: body.tag || ''});
    const list = el('ol', {class: 'id-list', dataset: {kind}});
    for (const id of ids) {
      const item = el('li', {'data-testid': 'generated-id', dataset: {kind, id}},
                      el('code', {class: 'mono id-text', translate: 'no', text: id}));
      const ms = embeddedTime(kind, id);
      if (ms !== null) {
        item.append(el('time', {class: 'id-note', datetime: isoUtc(ms),
                                title: t('gen.embeddedTime'), text: isoUtc(ms)}));
      }
      if (kind === 'snowflake') item.append(parseButton(id, ''));
      list.append(item);
    }
    region.dataset.kind = kind;
    region.replaceChildren(el('p', {class: 'result-title', text: title}), list);
  }

  // --- parse ------------------------------------------------------------------------------

  async function parseId(id, layout) {
    $('parse-input').value = id;
    $('parse-layout').value = layout || '';
    await guarded('parse-error', $('parse-button'), $('parse-result'), async () => {
      const text = id.trim();
      let decoded;
      try {
        if (!text) throw new PageError('error.needId', {code: 'invalid_argument'});
        decoded = await api(`v1/decode/${encodeURIComponent(text)}${query({layout})}`);
      } catch (e) {
        $('parse-result').hidden = true;  // an old answer next to the new error would mislead
        shown.decoded = null;
        throw e;
      }
      shown.decoded = decoded;
      renderDecoded(decoded);
    });
  }

  // The 64-character binary string, bit 63 first; from the ID itself if the answer lacks it.
  function binaryOf(decoded) {
    if (typeof decoded.binary === 'string' && /^[01]{64}$/.test(decoded.binary)) {
      return decoded.binary;
    }
    return BigInt.asUintN(64, BigInt(decoded.id)).toString(2).padStart(64, '0');
  }

  // Who owns each bit, as runs from bit 63 down: [{name, index, high, low}]. name is the
  // API's name of the field ('sign' and 'unused' for bits outside every field).
  function bitRuns(fields) {
    const owner = (bit) => fields.findIndex((f) => bit >= f.shift && bit < f.shift + f.bits);
    const runs = [];
    for (let bit = 63; bit >= 0; --bit) {
      const index = owner(bit);
      const last = runs[runs.length - 1];
      if (last && last.index === index) {
        last.low = bit;
      } else {
        runs.push({index, high: bit, low: bit});
      }
    }
    for (const run of runs) {
      if (run.index >= 0) {
        run.name = fields[run.index].name;
        run.value = fields[run.index].value;
      } else {
        run.name = run.high === 63 && run.low === 63 ? 'sign' : 'unused';
        run.value = null;
      }
    }
    return runs;
  }

  function renderDiagram(decoded, fields) {
    const bits = binaryOf(decoded);
    const runs = bitRuns(fields);
    const diagram = $('bit-diagram');
    const cells = [];
    const labels = [];
    const summary = [];
    for (const run of runs) {
      const colour = run.index >= 0 ? `f${run.index % 8}` : 'unused';
      const width = run.high - run.low + 1;
      const column = 64 - run.high;  // grid columns count from 1 at bit 63
      const name = fieldName(run.name);
      for (let bit = run.high; bit >= run.low; --bit) {
        cells.push(el('span', {class: `bit ${colour}`, 'data-testid': 'bit-cell',
                               dataset: {bit: String(bit), field: run.name},
                               title: t('diagram.bit', {bit, name})},
                          bits[63 - bit]));
      }
      const range = width === 1 ? `${run.high}` : `${run.high}..${run.low}`;
      const value = run.value === null ? '' : run.value;
      const params = {name, width, range, value};
      // A one- or two-bit run has room for a letter; the full text is in the title.
      const narrow = width <= 2;
      labels.push(el('span', {class: `bit-label ${colour}`,
                              style: `grid-column: ${column} / span ${width}`,
                              title: tn(value ? 'diagram.titleValue' : 'diagram.title', width, params)},
                     el('span', {class: 'bit-label-name', text: narrow ? Array.from(name)[0] : name}),
                     el('span', {class: 'bit-label-value mono', text: value}),
                     el('span', {class: 'bit-label-range', text: narrow ? '' : range})));
      summary.push(t(value ? 'diagram.summaryValue' : 'diagram.summary', params));
    }
    diagram.setAttribute('aria-label', t('diagram.aria', {id: decoded.id, runs: summary.join('; ')}));
    diagram.replaceChildren(el('div', {class: 'bit-row', 'aria-hidden': 'true'}, ...cells),
                            el('div', {class: 'bit-labels', 'aria-hidden': 'true'}, ...labels));
  }

  function renderDecoded(decoded) {
    const fields = Array.isArray(decoded.fields) ? decoded.fields : [];
    $('parse-id').textContent = decoded.id;
    $('parse-layout-name').textContent = decoded.layout || '';
    $('parse-layout-name').title = decoded.spec || '';
    const utc = $('parse-time-utc');
    utc.textContent = decoded.time || '';
    utc.dateTime = decoded.time || '';
    const local = $('parse-time-local');
    local.textContent = Number.isFinite(decoded.unix_ms) ? formatLocal(decoded.unix_ms) : '';
    local.dateTime = decoded.time || '';
    $('parse-unix-ms').textContent = String(decoded.unix_ms ?? '');

    renderDiagram(decoded, fields);

    const rows = fields.map((field, index) => el(
        'tr', {dataset: {field: field.name}},
        el('th', {scope: 'row'}, el('span', {class: `swatch f${index % 8}`, 'aria-hidden': 'true'}),
           fieldName(field.name)),
        el('td', {text: String(field.bits)}), el('td', {text: String(field.shift)}),
        el('td', {class: 'mono', 'data-testid': 'field-value', dataset: {field: field.name},
                  text: field.value})));
    $('parse-fields').tBodies[0].replaceChildren(...rows);
    $('parse-diagram-text').textContent = decoded.diagram || '';
    $('parse-result').hidden = false;
  }

  // --- compose ----------------------------------------------------------------------------

  let composeFieldsFor = null;  // the layout the field inputs were built for

  // The layout's non-time fields come from decoding 0 with it, so any preset or custom spec
  // the server accepts works without the page knowing layouts itself.
  // Returns whether the inputs match the layout now in the layout box.
  async function loadComposeFields() {
    const layout = $('compose-layout').value.trim();
    if (layout === composeFieldsFor) return true;
    composeFieldsFor = null;
    await guarded('compose-error', null, null, async () => {
      const decoded = await api(`v1/decode/0${query({layout})}`);
      shown.composeFields = decoded;
      renderComposeFields(decoded);
      composeFieldsFor = layout;
    });
    return composeFieldsFor === layout;
  }

  // One number input per non-time field of the layout decoded; values typed stay.
  function renderComposeFields(decoded) {
    const old = {};
    for (const input of $('compose-fields').querySelectorAll('input')) {
      old[input.name] = input.value;
    }
    const legend = el('legend', {text: decoded.layout ? t('compose.fieldsOf', {layout: decoded.layout})
                                                      : t('compose.fields')});
    const rows = [];
    (decoded.fields || []).forEach((field, index) => {
      if (field.role === 'time') return;
      const max = (2 ** field.bits) - 1;
      const id = `compose-field-${field.name}`;
      rows.push(el('div', {class: 'row'},
                   el('label', {for: id},
                      el('span', {class: `swatch f${index % 8}`, 'aria-hidden': 'true'}),
                      fieldName(field.name),
                      el('span', {class: 'hint block',
                                  text: tn('compose.fieldRange', field.bits, {bits: field.bits, max})})),
                   el('input', {id, name: field.name, type: 'number', min: 0, max,
                                step: 1, inputmode: 'numeric', value: old[field.name] ?? '0',
                                dataset: {field: field.name}})));
    });
    $('compose-fields').replaceChildren(legend, ...rows);
  }

  function setComposeTimeNow() {
    $('compose-time').value = new Date().toISOString();
  }

  async function compose(event) {
    event.preventDefault();
    const region = $('compose-result');
    if (!(await loadComposeFields())) return;
    await guarded('compose-error', $('compose-button'), region, async () => {
      const time = $('compose-time').value.trim();
      if (!time) throw new PageError('error.needTime', {code: 'invalid_argument'});
      const layout = $('compose-layout').value.trim();
      const params = {time};
      for (const input of $('compose-fields').querySelectorAll('input')) {
        params[input.name] = input.value.trim() || '0';
      }
      params.layout = layout;
      const answer = await api(`v1/compose${query(params)}`);
      shown.composed = {answer, layout};
      renderComposed(shown.composed);
      await parseId(answer.id, layout);
    });
  }

  function renderComposed({answer, layout}) {
    $('compose-result').replaceChildren(
        el('p', {class: 'result-title',
                 text: answer.layout ? t('compose.done', {layout: answer.layout})
                                     : t('compose.doneDefault')}),
        el('p', {class: 'composed'},
           el('code', {id: 'compose-id', class: 'mono id-text', translate: 'no',
                       'data-testid': 'composed-id', text: answer.id}),
           parseButton(answer.id, layout)),
        el('p', {class: 'hint', text: t('compose.timeNote', {time: answer.time || ''})}));
  }

  // --- status -----------------------------------------------------------------------------

  let previousPoll = null;  // {total, at} of the last status, for requests per second
  let knownTags = '';

  function setText(id, text) {
    const node = $(id);
    if (node.textContent !== text) node.textContent = text;
  }

  // A value the server names (a lease state, a policy) in the page's language.
  const named = (prefix, value) => (known(`${prefix}.${value}`) ? t(`${prefix}.${value}`) : value);

  function renderBuffers(tag) {
    const current = tag.current || {};
    const count = Number(current.count) || 0;
    const used = Number(current.used) || 0;
    let range = t('buffer.empty');
    if (current.first !== undefined && count > 0) {
      const last = BigInt(current.first) + BigInt(count) - 1n;
      range = `${current.first} – ${last}`;
    }
    const percent = count > 0 ? Math.min(100, (used * 100) / count) : 0;
    let nextState = 'empty';
    if (tag.fetching) nextState = 'fetching';
    else if (tag.next_ready) nextState = 'ready';

    return el(
        'article', {class: 'tag', 'data-testid': 'tag-buffers', dataset: {tag: tag.tag}},
        el('h4', {}, el('span', {translate: 'no', text: tag.tag}), ' ',
           el('span', {class: 'hint', text: t('status.step', {step: tag.step})})),
        el('div', {class: 'buffers'},
           el('div', {class: 'buffer current', dataset: {buffer: 'current'}},
              el('span', {class: 'buffer-name', text: t('buffer.current')}),
              el('span', {class: 'mono', text: range}),
              el('progress', {max: count || 1, value: used,
                              'aria-label': t('buffer.usedAria', {tag: tag.tag, used, count})}),
              el('span', {class: 'hint',
                          text: t('buffer.used', {used, count,
                                                  percent: percent.toFixed(percent < 10 ? 1 : 0)})})),
           el('div', {class: `buffer next ${tag.next_ready ? 'ready' : ''}`,
                      dataset: {buffer: 'next', state: nextState}},
              el('span', {class: 'buffer-name', text: t('buffer.next')}),
              el('span', {class: 'state', text: t(`buffer.${nextState}`)}))),
        el('p', {class: 'hint', text: tn('buffer.fetches', tag.fetches,
                                         {count: tag.fetches, ms: tag.last_fetch_ms})}),
        tag.last_error ? el('p', {class: 'error small',
                                  text: t('buffer.error', {error: tag.last_error})})
                       : null);
  }

  // A new answer of /v1/status: the rate of requests since the last one, then the view.
  function renderStatus(status) {
    const now = performance.now();
    const total = Number(status.requests && status.requests.total);
    if (previousPoll && Number.isFinite(total) && total >= previousPoll.total &&
        now > previousPoll.at) {
      const rate = ((total - previousPoll.total) * 1000) / (now - previousPoll.at);
      setText('status-rps', rate.toFixed(1));
    }
    if (Number.isFinite(total)) previousPoll = {total, at: now};
    shown.status = status;
    renderStatusView(status);
    $('status-dot').className = 'live-dot ok';
    showError('status-error', null);
  }

  function renderStatusView(status) {
    const lease = status.lease || {};
    const clock = status.clock || {};
    const layoutName = (status.layout && status.layout.name) || '?';

    const serverLine = $('server-line');
    delete serverLine.dataset.i18n;  // no longer "Connecting to the server…"
    setText('server-line', t('page.serverLine', {version: status.version || '', layout: layoutName,
                                                 uptime: formatDuration(status.uptime_ms)}));

    const state = lease.state || (lease.held ? 'held' : 'none');
    setText('status-lease-state', status.fenced
        ? t('status.fenced', {state: named('lease', lease.state || 'unknown')})
        : named('lease', state));
    $('status-lease-state').className = lease.held && !status.fenced ? 'good' : 'bad';
    $('status-lease-state').dataset.state = state;
    setText('status-lease-slot', lease.slot === undefined ? '–' : String(lease.slot));
    setText('status-lease-node', `${lease.datacenter ?? '–'} / ${lease.worker ?? '–'}`);
    setText('status-lease-left',
            Number.isFinite(lease.seconds_left)
                ? t('status.leaseLeft', {left: t('dur.s', {n: lease.seconds_left.toFixed(1)}),
                                         ttl: formatDuration(lease.ttl_ms)})
                : '–');
    setText('status-lease-renewals', `${lease.renewals ?? 0} / ${lease.failures ?? 0}`);
    // The server's own words when there is an error (kept in English), else "none".
    setText('status-lease-error', lease.last_error || t('status.none'));
    $('status-lease-error').translate = !lease.last_error;

    setText('status-clock-offset', formatMs(clock.offset_ms));
    setText('status-borrowed', formatMs(clock.borrowed_ms));
    setText('status-rollbacks', String(clock.rollbacks ?? 0));
    setText('status-waited', formatMs(clock.waited_ms));
    // The policy as people read it, then its name in the settings if that differs.
    const policy = status.policy ? named('policy', status.policy) : '–';
    setText('status-policy', policy === status.policy || !status.policy ? policy
                                                                        : `${policy} (${status.policy})`);
    setText('status-time-left', formatDuration(clock.time_left_ms));

    const total = Number(status.requests && status.requests.total);
    if (Number.isFinite(total)) setText('status-requests', String(total));
    const ids = status.ids || {};
    setText('status-ids',
            Object.entries(ids).map(([k, v]) => `${named('kind', k)} ${v}`).join(' · ') || '–');
    setText('status-layout', (status.layout && status.layout.name) || '–');
    $('status-layout').title = (status.layout && status.layout.spec) || '';
    setText('status-uptime', formatDuration(status.uptime_ms));

    const segments = status.segments || {};
    const tags = Array.isArray(segments.tags) ? segments.tags : [];
    let note = '';
    if (segments.ok === false) {
      note = segments.error ? t('status.storeError', {error: segments.error})
                            : t('status.storeSilent');
    } else if (!tags.length) {
      note = t('status.noTags');
    }
    setText('status-segments-note', note);
    $('status-tags').replaceChildren(...tags.map(renderBuffers));
    const names = tags.map((tag) => tag.tag).join('\n');
    if (names !== knownTags) {
      knownTags = names;
      $('tag-list').replaceChildren(...tags.map((tag) => el('option', {value: tag.tag})));
    }
  }

  async function pollStatus() {
    if (!document.hidden) {
      try {
        renderStatus(await api('v1/status'));
      } catch (e) {
        $('status-dot').className = 'live-dot bad';
        showError('status-error', new PageError('error.status', {inner: e, code: e.code}));
        previousPoll = null;
      }
    }
    setTimeout(pollStatus, kStatusPollMs);
  }

  // --- wiring -----------------------------------------------------------------------------

  function start() {
    const select = $('language');
    select.replaceChildren(...Object.entries(i18n.languages).map(
        ([code, lang]) => el('option', {value: code, lang: lang.htmlLang, text: lang.name})));
    select.addEventListener('change', () => {
      if (!Object.hasOwn(i18n.languages, select.value)) return;
      try {
        localStorage.setItem(kLanguageKey, select.value);
      } catch (e) {
        // storage refused: the choice holds until the page is left
      }
      setLanguage(select.value);
    });
    // The browser's languages changed in its settings: follow them unless one was chosen here.
    window.addEventListener('languagechange', () => {
      if (!storedLanguage()) setLanguage(browserLanguage());
    });
    setLanguage(storedLanguage() || browserLanguage());

    for (const button of document.querySelectorAll('#generate button[data-kind]')) {
      button.addEventListener('click', () => generate(button.dataset.kind, button));
    }
    $('generate-form').addEventListener('submit', (event) => event.preventDefault());
    $('parse-form').addEventListener('submit', (event) => {
      event.preventDefault();
      parseId($('parse-input').value, $('parse-layout').value.trim());
    });
    $('compose-form').addEventListener('submit', compose);
    $('compose-layout').addEventListener('change', loadComposeFields);
    $('compose-now').addEventListener('click', setComposeTimeNow);
    setComposeTimeNow();
    loadComposeFields();
    pollStatus();
  }

  start();
})();
