// idforge web page: generate, compose and parse IDs, and watch the server's status.
// Talks only to the JSON API of docs/api.md, with relative URLs so the page also works
// behind a reverse proxy under a sub-path. 64-bit IDs stay decimal strings; any arithmetic
// on them uses BigInt, because a JavaScript number loses integers above 2^53.
'use strict';

(() => {
  const kStatusPollMs = 1000;
  const kMaxCount = 100;  // the page's own cap; the server allows more

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

  class ApiError extends Error {
    constructor(message, code) {
      super(message);
      this.code = code;
    }
  }

  // GETs a JSON route; an error answer becomes an ApiError carrying the server's message.
  async function api(path) {
    let response;
    try {
      response = await fetch(path, {headers: {Accept: 'application/json'}, cache: 'no-store'});
    } catch (e) {
      throw new ApiError('Cannot reach the server.', 'network');
    }
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;  // not JSON: reported below
    }
    if (!response.ok) {
      const error = body && body.error;
      if (error && error.message) throw new ApiError(error.message, error.code);
      throw new ApiError(`HTTP ${response.status} ${response.statusText}`.trim(), 'http');
    }
    if (body === null || typeof body !== 'object') {
      throw new ApiError('The server did not answer with JSON.', 'bad_answer');
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

  function showError(id, message) {
    const node = $(id);
    node.textContent = message || '';
    node.hidden = !message;
  }

  // Runs an action with its button disabled and the result region marked busy; shows errors.
  async function guarded(errorId, button, region, action) {
    showError(errorId, '');
    if (button) button.disabled = true;
    if (region) region.setAttribute('aria-busy', 'true');
    try {
      await action();
    } catch (e) {
      showError(errorId, e instanceof ApiError ? e.message : `Unexpected error: ${e.message}`);
    } finally {
      if (button) button.disabled = false;
      if (region) region.removeAttribute('aria-busy');
    }
  }

  // --- time -------------------------------------------------------------------------------

  const localFormat = new Intl.DateTimeFormat(undefined, {
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
    if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.floor(seconds % 60)} s`;
    if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
    if (seconds < 86400 * 365) return `${(seconds / 86400).toFixed(1)} days`;
    return `${(seconds / (86400 * 365.25)).toFixed(1)} years`;
  }

  // --- generate ---------------------------------------------------------------------------

  const kKindNames = {
    snowflake: ['Snowflake ID', 'Snowflake IDs'],
    segment: ['segment ID', 'segment IDs'],
    uuid7: ['UUIDv7', 'UUIDv7s'],
    ulid: ['ULID', 'ULIDs'],
  };
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
        if (!tag) throw new ApiError('Enter a segment tag.', 'invalid_argument');
        path = `v1/segment/${encodeURIComponent(tag)}${query({count})}`;
      }
      const body = await api(path);
      renderGenerated(kind, body);
    });
  }

  function renderGenerated(kind, body) {
    const region = $('gen-result');
    const ids = Array.isArray(body.ids) ? body.ids : [];
    const title = `${ids.length} ${kKindNames[kind][ids.length === 1 ? 0 : 1]}` +
                  (body.tag ? ` for tag “${body.tag}”` : '');
    const list = el('ol', {class: 'id-list', dataset: {kind}});
    for (const id of ids) {
      const item = el('li', {'data-testid': 'generated-id', dataset: {kind, id}},
                      el('code', {class: 'mono id-text', text: id}));
      const ms = embeddedTime(kind, id);
      if (ms !== null) item.append(el('span', {class: 'id-note', text: isoUtc(ms)}));
      if (kind === 'snowflake') {
        const parse = el('button', {type: 'button', class: 'secondary small',
                                    'aria-label': `Parse ${id}`, text: 'Parse'});
        parse.addEventListener('click', () => parseId(id, ''));
        item.append(parse);
      }
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
      if (!text) throw new ApiError('Enter an ID to parse.', 'invalid_argument');
      let decoded;
      try {
        decoded = await api(`v1/decode/${encodeURIComponent(text)}${query({layout})}`);
      } catch (e) {
        $('parse-result').hidden = true;  // an old answer next to the new error would mislead
        throw e;
      }
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

  // Who owns each bit, as runs from bit 63 down: [{name, index, high, low}].
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
      for (let bit = run.high; bit >= run.low; --bit) {
        cells.push(el('span', {class: `bit ${colour}`, 'data-testid': 'bit-cell',
                               dataset: {bit: String(bit), field: run.name},
                               title: `bit ${bit}: ${run.name}`},
                          bits[63 - bit]));
      }
      const range = width === 1 ? `${run.high}` : `${run.high}..${run.low}`;
      const valueText = run.value === null ? '' : run.value;
      // A one- or two-bit run has room for a letter; the full text is in the title.
      const narrow = width <= 2;
      labels.push(el('span', {class: `bit-label ${colour}`,
                              style: `grid-column: ${column} / span ${width}`,
                              title: `${run.name} (${width} bit${width === 1 ? '' : 's'}, ` +
                                     `${range})${valueText ? ` = ${valueText}` : ''}`},
                     el('span', {class: 'bit-label-name', text: narrow ? run.name[0] : run.name}),
                     el('span', {class: 'bit-label-value mono', text: valueText}),
                     el('span', {class: 'bit-label-range', text: narrow ? '' : range})));
      summary.push(`${run.name}: bits ${range}${valueText ? `, value ${valueText}` : ''}`);
    }
    diagram.setAttribute('aria-label', `The 64 bits of ${decoded.id}. ${summary.join('; ')}.`);
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
           field.name),
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
      const old = {};
      for (const input of $('compose-fields').querySelectorAll('input')) {
        old[input.name] = input.value;
      }
      const legend = el('legend', {text: `Fields of ${decoded.layout || 'the layout'}`});
      const rows = [];
      (decoded.fields || []).forEach((field, index) => {
        if (field.role === 'time') return;
        const max = (2 ** field.bits) - 1;
        const id = `compose-field-${field.name}`;
        rows.push(el('div', {class: 'row'},
                     el('label', {for: id},
                        el('span', {class: `swatch f${index % 8}`, 'aria-hidden': 'true'}),
                        field.name,
                        el('span', {class: 'hint block', text: `${field.bits} bits, 0–${max}`})),
                     el('input', {id, name: field.name, type: 'number', min: 0, max,
                                  step: 1, inputmode: 'numeric', value: old[field.name] ?? '0',
                                  dataset: {field: field.name}})));
      });
      $('compose-fields').replaceChildren(legend, ...rows);
      composeFieldsFor = layout;
    });
    return composeFieldsFor === layout;
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
      if (!time) throw new ApiError('Enter a time.', 'invalid_argument');
      const layout = $('compose-layout').value.trim();
      const params = {time};
      for (const input of $('compose-fields').querySelectorAll('input')) {
        params[input.name] = input.value.trim() || '0';
      }
      params.layout = layout;
      const answer = await api(`v1/compose${query(params)}`);
      const parse = el('button', {type: 'button', class: 'secondary small', text: 'Parse'});
      parse.addEventListener('click', () => parseId(answer.id, layout));
      region.replaceChildren(
          el('p', {class: 'result-title', text: `Composed with ${answer.layout || 'the layout'}`}),
          el('p', {class: 'composed'}, el('code', {id: 'compose-id', class: 'mono id-text',
                                                   'data-testid': 'composed-id', text: answer.id}),
             parse),
          el('p', {class: 'hint', text: `time ${answer.time || ''}`}));
      await parseId(answer.id, layout);
    });
  }

  // --- status -----------------------------------------------------------------------------

  let previousPoll = null;  // {total, at} of the last status, for requests per second
  let knownTags = '';

  function setText(id, text) {
    const node = $(id);
    if (node.textContent !== text) node.textContent = text;
  }

  function renderBuffers(tag) {
    const current = tag.current || {};
    const count = Number(current.count) || 0;
    const used = Number(current.used) || 0;
    let range = 'empty';
    if (current.first !== undefined && count > 0) {
      const last = BigInt(current.first) + BigInt(count) - 1n;
      range = `${current.first} – ${last}`;
    }
    const percent = count > 0 ? Math.min(100, (used * 100) / count) : 0;
    let nextState = 'empty';
    if (tag.fetching) nextState = 'fetching…';
    else if (tag.next_ready) nextState = 'ready';

    return el(
        'article', {class: 'tag', 'data-testid': 'tag-buffers', dataset: {tag: tag.tag}},
        el('h4', {}, tag.tag, el('span', {class: 'hint', text: ` step ${tag.step}`})),
        el('div', {class: 'buffers'},
           el('div', {class: 'buffer current', dataset: {buffer: 'current'}},
              el('span', {class: 'buffer-name', text: 'Current buffer'}),
              el('span', {class: 'mono', text: range}),
              el('progress', {max: count || 1, value: used,
                              'aria-label': `${tag.tag}: ${used} of ${count} used`}),
              el('span', {class: 'hint', text: `${used} / ${count} used (${percent.toFixed(percent < 10 ? 1 : 0)}%)`})),
           el('div', {class: `buffer next ${tag.next_ready ? 'ready' : ''}`,
                      dataset: {buffer: 'next', state: nextState}},
              el('span', {class: 'buffer-name', text: 'Next buffer'}),
              el('span', {class: 'state', text: nextState}))),
        el('p', {class: 'hint',
                 text: `${tag.fetches} fetch${tag.fetches === 1 ? '' : 'es'} from the store, ` +
                       `last took ${tag.last_fetch_ms} ms`}),
        tag.last_error ? el('p', {class: 'error small', text: tag.last_error}) : null);
  }

  function renderStatus(status) {
    const lease = status.lease || {};
    const clock = status.clock || {};
    const now = performance.now();
    const total = Number(status.requests && status.requests.total);

    setText('server-line', `idforge ${status.version || ''} · layout ${
        (status.layout && status.layout.name) || '?'} · up ${formatDuration(status.uptime_ms)}`);

    const leaseState = status.fenced ? `${lease.state || 'unknown'} (fenced)`
                                     : (lease.state || (lease.held ? 'held' : 'none'));
    setText('status-lease-state', leaseState);
    $('status-lease-state').className = lease.held && !status.fenced ? 'good' : 'bad';
    setText('status-lease-slot', lease.slot === undefined ? '–' : String(lease.slot));
    setText('status-lease-node', `${lease.datacenter ?? '–'} / ${lease.worker ?? '–'}`);
    setText('status-lease-left',
            Number.isFinite(lease.seconds_left)
                ? `${lease.seconds_left.toFixed(1)} s of ${formatDuration(lease.ttl_ms)}`
                : '–');
    setText('status-lease-renewals', `${lease.renewals ?? 0} / ${lease.failures ?? 0}`);
    setText('status-lease-error', lease.last_error || 'none');

    setText('status-clock-offset', `${clock.offset_ms ?? 0} ms`);
    setText('status-borrowed', `${clock.borrowed_ms ?? 0} ms`);
    setText('status-rollbacks', String(clock.rollbacks ?? 0));
    setText('status-waited', `${clock.waited_ms ?? 0} ms`);
    setText('status-policy', status.policy || '–');
    setText('status-time-left', formatDuration(clock.time_left_ms));

    if (previousPoll && Number.isFinite(total) && total >= previousPoll.total &&
        now > previousPoll.at) {
      const rate = ((total - previousPoll.total) * 1000) / (now - previousPoll.at);
      setText('status-rps', rate.toFixed(1));
    }
    if (Number.isFinite(total)) {
      previousPoll = {total, at: now};
      setText('status-requests', String(total));
    }
    const ids = status.ids || {};
    setText('status-ids', Object.entries(ids).map(([k, v]) => `${k} ${v}`).join(' · ') || '–');
    setText('status-layout', (status.layout && status.layout.name) || '–');
    $('status-layout').title = (status.layout && status.layout.spec) || '';
    setText('status-uptime', formatDuration(status.uptime_ms));

    const segments = status.segments || {};
    const tags = Array.isArray(segments.tags) ? segments.tags : [];
    setText('status-segments-note',
            segments.ok === false ? `Segment store: ${segments.error || 'not answering'}`
                                  : tags.length ? '' : 'No tag has handed out IDs yet.');
    $('status-tags').replaceChildren(...tags.map(renderBuffers));
    const names = tags.map((t) => t.tag).join('\n');
    if (names !== knownTags) {
      knownTags = names;
      $('tag-list').replaceChildren(...tags.map((t) => el('option', {value: t.tag})));
    }
    $('status-dot').className = 'live-dot ok';
    showError('status-error', '');
  }

  async function pollStatus() {
    if (!document.hidden) {
      try {
        renderStatus(await api('v1/status'));
      } catch (e) {
        $('status-dot').className = 'live-dot bad';
        showError('status-error', `Status: ${e.message}`);
        previousPoll = null;
      }
    }
    setTimeout(pollStatus, kStatusPollMs);
  }

  // --- wiring -----------------------------------------------------------------------------

  function start() {
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
