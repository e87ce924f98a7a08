// The dashboard: reads the control API of the emulator that served it, listens to its event
// stream, and redraws only what changed. Plain JavaScript, no build step, nothing from elsewhere.
'use strict';

const PAGE = { jobs: 50, journal: 100, uploads: 50 };
const TOKEN_KEY = 'mediagen.adminToken';
const TENANT_KEY = 'mediagen.tenant';
const FAIL_CODES = ['generation_failed', 'provider_timeout', 'content_policy_violation', 'provider_error', 'out_of_capacity'];

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

// The address keeps what is shown, so a link names it: #tenant=NAME&view=jobs&job=ID (or
// view=journal&entry=SEQ). A test that fails can print such a link to what it saw.
const TABS = ['jobs', 'journal', 'scenario', 'accounts', 'coverage', 'report', 'uploads'];
function fromHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  const entry = Number(q.get('entry'));
  return {
    tenant: q.get('tenant') || '',
    tab: TABS.includes(q.get('view')) ? q.get('view') : '',
    job: q.get('job') || null,
    entry: q.has('entry') && Number.isInteger(entry) ? entry : null,
  };
}
const linked = fromHash();

const state = {
  tenant: linked.tenant || sessionStorage.getItem(TENANT_KEY) || 'default',
  tab: linked.tab || 'jobs',
  manual: false,
  clock: null, // {now: ms at fetch, at: performance.now() at fetch, mode}
  jobs: { offset: 0, total: 0, items: [], selected: linked.job, detailKey: '', shown: '' },
  journal: { page: 0, total: 0, items: [], selected: linked.entry, seek: linked.entry !== null },
  uploads: { offset: 0, total: 0 },
  locked: false, // the control API needs a token we do not have, or is off
  stream: null,
};

// ---- talking to the emulator ----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || ('HTTP ' + status));
    this.status = status;
    this.code = body && body.code;
    this.body = body;
  }
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) h['X-Emulator-Admin-Token'] = token;
  if (state.tenant && state.tenant !== 'default') h['X-Emulator-Tenant'] = state.tenant;
  return h;
}

async function api(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { detail: text }; }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (err.code === 'admin_token_required') askToken(sessionStorage.getItem(TOKEN_KEY) ? 'That token was not accepted.' : '');
    if (err.code === 'control_api_disabled') showDisabled();
    throw err;
  }
  return data;
}

// toHash writes what is shown into the address, without a new history entry per click.
function toHash() {
  const q = new URLSearchParams({ tenant: state.tenant, view: state.tab });
  if (state.tab === 'jobs' && state.jobs.selected) q.set('job', state.jobs.selected);
  if (state.tab === 'journal' && state.journal.selected !== null) q.set('entry', String(state.journal.selected));
  const h = '#' + q;
  if (location.hash !== h) history.replaceState(null, '', h);
}

// ---- small helpers -------------------------------------------------------------------------

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'style') Object.assign(e.style, v); // an object: the page's policy refuses style attributes
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}

function clockTime(iso) { // 2026-01-01T00:00:01.5Z → 00:00:01.500
  if (!iso) return '—';
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toISOString().slice(11, 23);
}

function fullTime(iso) { return iso ? new Date(iso).toISOString().replace('.000Z', 'Z') : '—'; }

function fmtInt(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '—'; }

function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KB';
  return (n / (1 << 20)).toFixed(1) + ' MB';
}

function pretty(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  return JSON.stringify(v, null, 2);
}

let noticeTimer = 0;
function notice(text, kind) {
  const n = $('#notice');
  n.textContent = text;
  n.dataset.kind = kind || 'info';
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { n.hidden = true; }, kind === 'error' ? 8000 : 3500);
}

function failed(err) {
  if (err instanceof ApiError && (err.code === 'admin_token_required' || err.code === 'control_api_disabled')) return;
  notice(err.message || String(err), 'error');
}

// ---- locked states: no token, or the control API is off ------------------------------------

function showDisabled() {
  state.locked = true;
  stopStream();
  $('#overlay-title').textContent = 'The control API is off';
  const body = $('#overlay-body');
  body.replaceChildren(
    el('p', { text: 'This emulator listens beyond loopback without an admin token, so its control API — and with it this dashboard — is switched off.' }),
    el('p', {}, 'Restart it with ', el('code', { text: '--admin-token SECRET' }), ' (or set ', el('code', { text: 'MEDIAGEN_ADMIN_TOKEN' }), '), then reload this page: it will ask for the token.'),
    el('p', { class: 'muted small', text: 'The /v1 API and health keep working either way.' }));
  $('#token-form').hidden = true;
  $('#overlay').hidden = false;
  setConn('off', 'control off');
}

function askToken(problemText) {
  state.locked = true;
  stopStream();
  $('#overlay-title').textContent = 'Admin token required';
  $('#overlay-body').replaceChildren(
    el('p', {}, 'This emulator was started with ', el('code', { text: '--admin-token' }), '. Enter it to use the dashboard.'),
    problemText ? el('p', { class: 'error-box', text: problemText }) : null);
  $('#token-form').hidden = false;
  $('#overlay').hidden = false;
  $('#token-input').focus();
  setConn('off', 'locked');
}

function unlock() {
  state.locked = false;
  $('#overlay').hidden = true;
}

// ---- the event stream ----------------------------------------------------------------------

function setConn(s, text) {
  const c = $('#conn');
  c.dataset.state = s;
  c.textContent = text || s;
}

function stopStream() {
  if (state.stream) state.stream.abort();
  state.stream = null;
}

// startStream reads /_emulator/events with fetch (EventSource cannot send the token header)
// and reconnects after a pause when it ends.
function startStream() {
  stopStream();
  const ctl = new AbortController();
  state.stream = ctl;
  let delay = 500;
  const run = async () => {
    while (!ctl.signal.aborted && !state.locked) {
      try {
        const res = await fetch('/_emulator/events', { headers: headers({ Accept: 'text/event-stream' }), signal: ctl.signal });
        if (!res.ok) {
          let body = null;
          try { body = await res.json(); } catch (e) { body = null; }
          const err = new ApiError(res.status, body);
          if (err.code === 'admin_token_required') { askToken(''); return; }
          if (err.code === 'control_api_disabled') { showDisabled(); return; }
          if (err.code === 'too_many_streams') {
            setConn('reconnecting', 'too many open');
            const wait = Number(res.headers.get('Retry-After')) || 5;
            await new Promise(r => setTimeout(r, wait * 1000));
            continue;
          }
          throw err;
        }
        setConn('live', 'live');
        delay = 500;
        await readEvents(res.body.getReader(), ctl.signal);
      } catch (e) {
        if (ctl.signal.aborted) return;
      }
      if (ctl.signal.aborted) return;
      setConn('reconnecting', 'reconnecting');
      await new Promise(r => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5000);
    }
  };
  run();
}

async function readEvents(reader, signal) {
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done || signal.aborted) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = 'message', data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      if (block.startsWith(':')) continue; // keep-alive
      onEvent(event, data ? JSON.parse(data) : {});
    }
  }
}

// ALL is every part of the state an event may name.
const ALL = ['jobs', 'journal', 'clock', 'scenario', 'accounts', 'webhooks'];

function onEvent(event, data) {
  if (data.now) setClock(data.now, data.mode);
  if ('next_due' in data) drawNextDue(data.next_due);
  if (event === 'gone') {
    notice('Tenant "' + state.tenant + '" was dropped; showing the default tenant.', 'error');
    switchTenant('default');
    return;
  }
  if (event === 'reset') {
    state.jobs.selected = null;
    state.journal.selected = null;
    state.jobs.detailKey = '';
    notice('Tenant "' + state.tenant + '" was reset.');
  }
  refresh(data.changed || ALL);
}

// ---- refreshing: one pass at a time, another if something changed meanwhile ---------------

// The parts of the state each view shows: an event that names none of them fetches nothing.
// The scenario view counts 429s and fault firings, which come with journal entries.
// Coverage counts error answers (journaled) and job endings.
const VIEW_PARTS = { jobs: ['jobs'], journal: ['journal'], scenario: ['scenario', 'journal', 'webhooks'], accounts: ['accounts'], coverage: ['journal', 'jobs'], report: ['journal', 'jobs', 'clock'],
  // An upload is a /v1 request (journaled); the jobs that read it, and its expiry on the clock.
  uploads: ['journal', 'jobs', 'clock'] };

// refresh reloads the view when one of parts (default: all) is among what it shows.
let refreshing = false, again = false;
async function refresh(parts) {
  if (state.locked) return;
  if (parts && !parts.some(p => VIEW_PARTS[state.tab].includes(p))) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  try {
    do {
      again = false;
      await loadView();
    } while (again && !state.locked);
  } catch (e) {
    failed(e);
  } finally {
    refreshing = false;
  }
}

function loadView() {
  switch (state.tab) {
    case 'jobs': return loadJobs().then(() => loadJobDetail(false));
    case 'journal': return loadJournal();
    case 'scenario': return Promise.all([loadScenario(), loadWebhooks()]);
    case 'accounts': return loadAccounts();
    case 'coverage': return loadCoverage();
    case 'report': return loadReport();
    case 'uploads': return loadUploads();
  }
}

// ---- clock ---------------------------------------------------------------------------------

function setClock(now, mode) {
  const ms = Date.parse(now);
  if (isNaN(ms)) return;
  state.clock = { now: ms, at: performance.now(), mode };
  state.manual = mode === 'manual' || mode === 'skip'; // both stand still until moved
  $('#clock-mode').textContent = mode;
  const ctl = $('#clock-controls');
  if (state.manual) delete ctl.dataset.disabled; else ctl.dataset.disabled = '';
  $$('#clock-controls button, #clock-controls input').forEach(b => { b.disabled = !state.manual; });
  drawClock();
}

function drawClock() {
  const c = state.clock;
  if (!c) return;
  const ms = c.mode !== 'real' ? c.now : c.now + (performance.now() - c.at);
  const iso = new Date(ms).toISOString();
  $('#clock-now').textContent = iso.slice(0, 10) + ' ' + iso.slice(11, 23);
  $('#clock-now').title = iso + ' (UTC, the emulator\'s clock)';
}

// drawNextDue shows the next job transition an event carried.
function drawNextDue(nd) {
  const due = $('#next-due');
  if (nd) {
    due.textContent = 'next: ' + nd.job_id.slice(0, 8) + ' leaves ' + nd.status + ' at ' + clockTime(nd.at);
    due.title = 'job ' + nd.job_id + ' leaves ' + nd.status + ' at ' + nd.at;
  } else {
    due.textContent = 'nothing due';
    due.title = '';
  }
}

// changeClock moves the clock; the stream's event then says what moved with it.
async function changeClock(body) {
  try {
    const c = await api('POST', '/_emulator/clock', body);
    setClock(c.now, c.mode);
  } catch (e) { failed(e); }
}

// ---- jobs ----------------------------------------------------------------------------------

function jobsQuery() {
  const q = new URLSearchParams({ limit: PAGE.jobs, offset: state.jobs.offset });
  const st = $('#jobs-status').value, model = $('#jobs-model').value.trim();
  if (st) q.set('status', st);
  if (model) q.set('model', model);
  return q;
}

async function loadJobs() {
  const page = await api('GET', '/_emulator/jobs?' + jobsQuery());
  if (page.total > 0 && state.jobs.offset >= page.total) { // the page emptied: go back to one that has rows
    state.jobs.offset = Math.max(0, Math.floor((page.total - 1) / PAGE.jobs) * PAGE.jobs);
    return loadJobs();
  }
  state.jobs.items = page.data;
  state.jobs.total = page.total;
  drawJobs();
}

function drawJobs() {
  const body = $('#jobs-table tbody');
  const items = state.jobs.items;
  // Reuse rows: only text changes, so nothing on screen moves as jobs stream in.
  while (body.rows.length > items.length) body.deleteRow(-1);
  while (body.rows.length < items.length) {
    const tr = body.insertRow();
    tr.tabIndex = -1;
    for (let i = 0; i < 9; i++) tr.insertCell();
    tr.cells[0].className = 'mono';
    tr.cells[1].className = 'mono';
    tr.cells[2].className = 'mono model'; // wraps onto a second line rather than cut a long id
    tr.cells[3].className = 'mono';
    tr.cells[4].className = 'mono';
    tr.cells[7].className = 'num';
    tr.cells[8].className = 'mono';
  }
  items.forEach((j, i) => {
    const tr = body.rows[i];
    tr.dataset.id = j.id;
    tr.setAttribute('aria-selected', String(j.id === state.jobs.selected));
    setText(tr.cells[0], clockTime(j.created_at), fullTime(j.created_at));
    setText(tr.cells[1], j.id.slice(0, 8), j.id);
    setModel(tr.cells[2], j.model);
    // A deprecated or retired model is marked beside its id (by CSS), the id left as it is.
    if ((tr.cells[2].dataset.phase || '') !== (j.model_phase || '')) tr.cells[2].dataset.phase = j.model_phase || '';
    setText(tr.cells[3], j.output_type || '—');
    setText(tr.cells[4], j.account, j.account);
    const st = tr.cells[5];
    // A job waiting behind a concurrency limit shows its place in the line.
    const stKey = j.status + (j.queue_position ? ' #' + j.queue_position : '');
    if (st.dataset.v !== stKey) {
      st.dataset.v = stKey;
      const badge = el('span', { class: 'st ' + j.status, text: j.status });
      if (j.queue_position) st.replaceChildren(badge, el('span', { class: 'qp', title: 'place in the line for a concurrency slot', text: '#' + j.queue_position }));
      else st.replaceChildren(badge);
    }
    const pct = Math.round((j.progress || 0) * 100);
    const pc = tr.cells[6];
    if (pc.dataset.v !== String(pct)) {
      pc.dataset.v = String(pct);
      pc.replaceChildren(el('span', { class: 'bar' }, el('i', { style: { width: pct + '%' } })), pct + '%');
    }
    const cr = tr.cells[7];
    const crKey = j.credits + '/' + j.credit_status + '/' + (j.credits_charged ?? '');
    if (cr.dataset.v !== crKey) {
      cr.dataset.v = crKey;
      // A partial result was charged less than its quote: show what it paid.
      const status = j.filtered_outputs ? j.credit_status + ' ' + fmtInt(j.credits_charged) : j.credit_status;
      cr.replaceChildren(fmtInt(j.credits), el('span', { class: 'cs', text: status }));
    }
    setText(tr.cells[8], clockTime(j.finished_at), fullTime(j.finished_at)); // started: in the detail
  });
  $('#jobs-empty').hidden = items.length > 0;
  $('#jobs-count').textContent = fmtInt(state.jobs.total) + (state.jobs.total === 1 ? ' job' : ' jobs');
  drawPager('jobs', state.jobs.offset, items.length, state.jobs.total);
}

// setModel shows a model id that may break onto a second line only after a slash, never
// inside a name such as "text-to-video"; its text stays the id itself.
function setModel(cell, id) {
  if (cell.dataset.v === id) return;
  cell.dataset.v = id;
  cell.title = id;
  const parts = id.split('/');
  cell.replaceChildren(...parts.flatMap((p, i) => i < parts.length - 1 ? [el('span', { text: p + '/' }), el('wbr')] : [el('span', { text: p })]));
}

function setText(cell, text, title) {
  if (cell.textContent !== text) cell.textContent = text;
  if (title !== undefined && cell.title !== title) cell.title = title;
}

function drawPager(name, offset, shown, total) {
  const p = $('[data-pager=' + name + ']');
  $('.range', p).textContent = total ? (fmtInt(offset + 1) + '–' + fmtInt(offset + shown) + ' of ' + fmtInt(total)) : '0 of 0';
  $('[data-page=prev]', p).disabled = offset <= 0;
  $('[data-page=next]', p).disabled = offset + shown >= total;
}

// loadJobDetail fetches the selected job when asked to (force) or when its row in the list
// shows it moved on since the detail was drawn.
async function loadJobDetail(force = true) {
  const id = state.jobs.selected;
  const box = $('#job-detail');
  if (!id) {
    if (!$('.placeholder', box)) box.replaceChildren(el('p', { class: 'placeholder', text: 'Select a job (j/k, Enter) to see its input, plan and outputs.' }));
    state.jobs.detailKey = '';
    state.jobs.shown = '';
    return;
  }
  const row = state.jobs.items.find(j => j.id === id);
  const rowKey = row ? [row.id, row.status, row.queue_position, row.progress, row.credit_status, row.finished_at].join('|') : '';
  if (!force && rowKey && rowKey === state.jobs.shown) return;
  let job;
  try {
    job = await api('GET', '/_emulator/jobs/' + encodeURIComponent(id));
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      box.replaceChildren(el('p', { class: 'placeholder', text: 'Job ' + id + ' is no longer kept.' }));
      state.jobs.detailKey = '';
      return;
    }
    throw e;
  }
  if (state.jobs.selected !== id) return;
  state.jobs.shown = [job.id, job.status, job.queue_position, job.progress, job.credit_status, job.finished_at].join('|');
  drawJobDetail(job);
}

function drawJobDetail(j) {
  const box = $('#job-detail');
  // Keyed by the files, not their links: a signed link changes on every read.
  const outKey = (j.outputs || []).map(o => o.url.split('?')[0]).join(' ');
  const key = j.id + '|' + outKey;
  // Rebuild the outputs only when they change, so a playing video is not restarted by an update.
  if (state.jobs.detailKey !== key || !$('#jd-head', box)) {
    state.jobs.detailKey = key;
    box.replaceChildren(
      el('h2', { id: 'jd-head' }, el('span', { class: 'mono', text: j.id })),
      el('div', { class: 'actions' },
        el('button', { id: 'force-succeed', title: 'Force it to succeed now (s)', onclick: () => force(j.id, 'complete') }, 'Succeed now'),
        el('button', { id: 'force-fail', class: 'danger', title: 'Force it to fail now (f)', onclick: () => force(j.id, 'fail') }, 'Fail now'),
        el('select', { id: 'fail-code', 'aria-label': 'Failure code' }, FAIL_CODES.map(c => el('option', { text: c })))),
      el('dl', { class: 'kv', id: 'jd-summary' }),
      el('h3', { text: 'Plan' }),
      el('dl', { class: 'kv', id: 'jd-plan' }),
      el('div', { id: 'jd-error' }),
      el('h3', { text: 'Outputs' }),
      el('div', { class: 'outputs', id: 'jd-outputs' }, outputsOf(j)),
      el('div', { id: 'jd-media' }),
      el('h3', { text: 'Input' }),
      el('pre', { class: 'json', id: 'jd-input' }));
  }
  const head = $('#jd-head', box);
  const badge = $('.st', head);
  if (!badge || badge.textContent !== j.status) {
    if (badge) badge.remove();
    head.append(el('span', { class: 'st ' + j.status, text: j.status }));
  }
  const live = j.status === 'queued' || j.status === 'running';
  $('#force-succeed', box).disabled = !live;
  $('#force-fail', box).disabled = !live;
  $('#fail-code', box).disabled = !live;
  kv($('#jd-summary', box), [
    ['model', j.model + (j.model_phase ? ' (' + j.model_phase + ')' : '')], ['account', j.account], ['quote', j.quote_id],
    ['credits', fmtInt(j.credits) + ' · ' + j.credit_status + (j.filtered_outputs ? ' ' + fmtInt(j.credits_charged) + ', ' + j.filtered_outputs + ' output(s) filtered out' : '')],
    ['created', fullTime(j.created_at)], ['started', fullTime(j.started_at)], ['finished', fullTime(j.finished_at)],
    ['progress', Math.round((j.progress || 0) * 100) + '%'],
    ...(j.queue_position ? [['queue position', j.queue_position + ' in the line for a concurrency slot']] : []),
  ]);
  const p = j.plan || {};
  const ending = p.ending || {};
  kv($('#jd-plan', box), [
    ['queue', p.queue], ['run', p.run], ['queue timeout', p.queue_timeout || 'none'],
    ['ending', ending.status + (ending.code ? ' · ' + ending.code : '') + (ending.in_queue ? ' (in the queue)' : '') + (ending.at ? ' at ' + Math.round(ending.at * 100) + '% of the run' : '')],
    ['decided by', p.decided_by === 'directive' ? 'directive: ' + p.directive : 'the scenario\'s draw'],
    ['filtered', p.filtered ? p.filtered + ' output(s)' : 'none'],
    ['ended by', p.ended_by_control ? 'the control API (forced)' : (live ? '—' : 'its plan')],
  ]);
  const errBox = $('#jd-error', box);
  const errKey = j.error ? j.error.code + j.error.message : '';
  if (errBox.dataset.v !== errKey) {
    errBox.dataset.v = errKey;
    errBox.replaceChildren(...(j.error ? [el('h3', { text: 'Error' }),
      el('div', { class: 'error-box' }, el('code', { text: j.error.code }), ' — ', j.error.message)] : []));
  }
  refreshLinks($('#jd-outputs', box), j);
  drawMediaInputs($('#jd-media', box), j.media_inputs);
  const input = pretty(j.input);
  const pre = $('#jd-input', box);
  if (pre.textContent !== input) pre.textContent = input;
}

// SOURCES says how each media input was read, as the control API's source names it.
const SOURCES = { upload: 'upload', output: 'a job\'s output', data: 'data: URI', fetched: 'fetched (--inputs-allow)', stand_in: 'stand-in' };

// shapeOf is what a media input or an upload decoded to: its size, its length, its bytes.
function shapeOf(x) {
  const parts = [];
  if (x.width) parts.push(x.width + '×' + x.height);
  if (x.duration) parts.push(x.duration + ' s');
  if (x.size_bytes) parts.push(fmtBytes(x.size_bytes));
  return parts.join(' · ');
}

// drawMediaInputs lists a job's media inputs (with inputs fetched): the member, the URL or the
// data: URI's type, whether it was read or stood in, and what it decoded to.
function drawMediaInputs(box, inputs) {
  const key = JSON.stringify(inputs || []);
  if (box.dataset.v === key) return;
  box.dataset.v = key;
  if (!inputs || !inputs.length) { box.replaceChildren(); return; }
  box.replaceChildren(el('h3', { text: 'Media inputs' }), el('ul', { class: 'media-inputs', id: 'jd-inputs' }, inputs.map(m => {
    const how = m.read ? 'read' : 'stood in';
    const what = [m.content_type, shapeOf(m)].filter(Boolean).join(' ');
    return el('li', { 'data-member': m.member, 'data-source': m.source },
      el('code', { text: m.pointer.replace(/^\/input\//, '') }), ' · ', SOURCES[m.source] || m.source, ' · ', el('span', { class: 'mi-read', text: how }),
      what ? ' · ' + what : null,
      m.failure ? el('span', { class: 'mi-fail' }, ' · fails ', el('code', { text: m.failure })) : null,
      el('span', { class: 'mi-url mono', text: m.url, title: m.url }));
  })));
}

function kv(dl, pairs) {
  const key = JSON.stringify(pairs);
  if (dl.dataset.v === key) return;
  dl.dataset.v = key;
  dl.replaceChildren(...pairs.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v === undefined ? '—' : v })]));
}

function outputsOf(j) {
  const outs = j.outputs || [];
  if (!outs.length) {
    const why = j.status === 'succeeded' ? 'none' : (j.status === 'queued' || j.status === 'running') ? 'shown once the job succeeds' : 'none: the job did not succeed';
    return [el('p', { class: 'muted', text: why })];
  }
  return outs.map((o, i) => {
    let media;
    if (o.type === 'image') media = el('a', { href: o.url, target: '_blank', rel: 'noopener' }, el('img', { src: o.url, alt: 'output ' + i, loading: 'lazy', width: o.width, height: o.height }));
    else if (o.type === 'audio') media = el('audio', { controls: true, preload: 'metadata', src: o.url });
    else if (o.type === 'video') media = el('video', { controls: true, preload: 'metadata', muted: true, src: o.url });
    const meta = [o.type, o.content_type];
    if (o.width) meta.push(o.width + '×' + o.height);
    if (o.duration_seconds) meta.push(o.duration_seconds + ' s');
    meta.push(fmtBytes(o.size_bytes));
    return el('div', { class: 'output', 'data-type': o.type }, media,
      el('div', { class: 'meta' }, meta.map(m => el('span', { text: m })),
        el('span', { class: 'expiry' }),
        el('a', { class: 'download', href: o.url, download: '', text: 'download' })));
  });
}

// refreshLinks puts each output's latest link and its expiry in place: a scenario's url_ttl
// signs links that expire before the file does, and every read gives fresh ones.
function refreshLinks(box, j) {
  (j.outputs || []).forEach((o, i) => {
    const out = box.children[i];
    if (!out || !out.classList.contains('output')) return;
    const a = $('a.download', out);
    if (a && a.getAttribute('href') !== o.url) a.setAttribute('href', o.url);
    const text = (o.url_expires_at ? 'link until ' + fullTime(o.url_expires_at) + ' · ' : '') + (o.expires_at ? 'kept until ' + fullTime(o.expires_at) : '');
    const span = $('.expiry', out);
    if (span && span.textContent !== text) span.textContent = text;
  });
}

async function force(id, how) {
  try {
    const body = how === 'fail' ? { code: $('#fail-code').value } : undefined;
    await api('POST', '/_emulator/jobs/' + encodeURIComponent(id) + '/' + how, body);
    notice('Job ' + id.slice(0, 8) + (how === 'fail' ? ' failed' : ' succeeded') + ' on request.');
  } catch (e) { failed(e); }
}

function selectJob(id, focus) {
  state.jobs.selected = id;
  $$('#jobs-table tbody tr').forEach(tr => {
    const on = tr.dataset.id === id;
    tr.setAttribute('aria-selected', String(on));
    if (on && focus) tr.focus({ preventScroll: false });
  });
  toHash();
  loadJobDetail().catch(failed);
}

// ---- journal -------------------------------------------------------------------------------

function journalFilter() {
  const q = new URLSearchParams();
  const m = $('#journal-method').value, p = $('#journal-path').value.trim(), s = $('#journal-status').value.trim(), a = $('#journal-account').value.trim();
  if (m) q.set('method', m);
  if (p) q.set('path', p);
  if (/^\d{3}$/.test(s)) q.set('status', s);
  if (a) q.set('account', a);
  return q;
}

// loadJournal shows the newest entries first: the journal lists oldest first, so it asks for
// the total, then for the window that holds this page.
async function loadJournal() {
  const f = journalFilter();
  const probe = new URLSearchParams(f); probe.set('limit', '1');
  const head = await api('GET', '/_emulator/requests?' + probe);
  const total = head.total, n = PAGE.journal;
  if (state.journal.seek && state.journal.selected !== null && head.data.length && !f.toString()) {
    // A linked entry opens on the page that holds it: unfiltered, seqs follow one another from
    // the oldest entry kept.
    const at = state.journal.selected - head.data[0].seq;
    if (at >= 0 && at < total) state.journal.page = Math.floor((total - 1 - at) / n);
  }
  state.journal.seek = false;
  let pageNo = state.journal.page;
  if (pageNo > 0 && pageNo * n >= total) pageNo = state.journal.page = Math.max(0, Math.ceil(total / n) - 1);
  const end = total - pageNo * n, start = Math.max(0, end - n);
  let items = [];
  if (end > 0) {
    const q = new URLSearchParams(f); q.set('offset', start); q.set('limit', end - start);
    items = (await api('GET', '/_emulator/requests?' + q)).data.reverse();
  }
  state.journal.items = items;
  state.journal.total = total;
  drawJournal();
}

function drawJournal() {
  const body = $('#journal-table tbody');
  const items = state.journal.items;
  while (body.rows.length > items.length) body.deleteRow(-1);
  while (body.rows.length < items.length) {
    const tr = body.insertRow();
    tr.tabIndex = -1;
    for (let i = 0; i < 8; i++) tr.insertCell();
    tr.cells[0].className = 'num mono';
    tr.cells[1].className = 'mono';
    tr.cells[2].className = 'mono';
    tr.cells[3].className = 'mono';
    tr.cells[4].className = 'mono';
    tr.cells[7].className = 'num';
  }
  items.forEach((e, i) => {
    const tr = body.rows[i];
    tr.dataset.seq = e.seq;
    tr.setAttribute('aria-selected', String(e.seq === state.journal.selected));
    setText(tr.cells[0], String(e.seq));
    setText(tr.cells[1], clockTime(e.time), fullTime(e.time));
    setText(tr.cells[2], e.method);
    const path = e.path + (e.query ? '?' + e.query : '');
    setText(tr.cells[3], path, path);
    const sc = tr.cells[4];
    const label = e.status + (e.code ? ' ' + e.code : '') + (e.fault ? ' ⚡' : '');
    setText(sc, label, e.fault ? 'fault ' + e.fault : (e.code || ''));
    sc.className = 'mono code-' + String(e.status)[0];
    setText(tr.cells[5], e.account || '—');
    setText(tr.cells[6], e.tenant || '');
    setText(tr.cells[7], (e.duration_ms || 0).toFixed(1) + ' ms');
  });
  $('#journal-empty').hidden = items.length > 0;
  $('#journal-count').textContent = fmtInt(state.journal.total) + (state.journal.total === 1 ? ' request' : ' requests');
  const n = PAGE.journal, offset = state.journal.page * n;
  drawPager('journal', offset, items.length, state.journal.total);
  const sel = items.find(e => e.seq === state.journal.selected);
  if (sel) drawEntry(sel);
}

function selectEntry(seq, focus) {
  state.journal.selected = seq;
  $$('#journal-table tbody tr').forEach(tr => {
    const on = Number(tr.dataset.seq) === seq;
    tr.setAttribute('aria-selected', String(on));
    if (on && focus) tr.focus();
  });
  toHash();
  const e = state.journal.items.find(x => x.seq === seq);
  if (e) drawEntry(e);
}

function drawEntry(e) {
  const box = $('#entry-detail');
  const key = String(e.seq);
  if (box.dataset.v === key) return;
  box.dataset.v = key;
  box.replaceChildren(
    el('h2', {}, el('span', { class: 'mono', text: e.method + ' ' + e.path })),
    el('dl', { class: 'kv' }, [
      ['status', e.status + (e.code ? ' · ' + e.code : '')], ['time', fullTime(e.time)], ['latency', (e.duration_ms || 0) + ' ms'],
      ['query', e.query || '—'], ['account', e.account || '—'], ['tenant', e.tenant], ['model', e.model || '—'],
      ['job', e.job_id || '—'], ['idempotency key', e.idempotency_key || '—'], ['fault', e.fault || '—'], ['request id', e.request_id],
    ].flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })])),
    el('h3', { text: 'Request body' }),
    e.request_body !== undefined ? el('pre', { class: 'json', text: pretty(e.request_body) }) : el('p', { class: 'muted', text: 'none' }),
    el('h3', { text: 'Response body' }),
    e.response_body !== undefined ? el('pre', { class: 'json', text: pretty(e.response_body) }) : el('p', { class: 'muted', text: 'not recorded' }));
}

// ---- scenario and faults -------------------------------------------------------------------

async function loadScenario() {
  const [sc, faults, limited] = await Promise.all([
    api('GET', '/_emulator/scenario'), api('GET', '/_emulator/faults'), api('GET', '/_emulator/requests?status=429&limit=1')]);
  const sel = $('#scenario-select');
  const names = sc.available.includes(sc.name) ? sc.available : [sc.name].concat(sc.available);
  const optKey = names.join(',');
  if (sel.dataset.v !== optKey) {
    sel.dataset.v = optKey;
    sel.replaceChildren(...names.map(n => el('option', { text: n })));
  }
  if (document.activeElement !== sel) sel.value = sc.name;
  kv($('#scenario-info'), [['in force', sc.name], ['about', sc.description || '—'], ['source', sc.source || '—'],
    ['overrides', String(sc.overrides)], ['faults', sc.faults + ' of its own still in force'], ['latency', (sc.latency || 0) + ' answer delay rule(s)'],
    ...(sc.concurrency ? [['concurrency', sc.concurrency + ' rule(s): jobs past a limit wait their turn (queue position) or answer 429']] : []),
    ...(sc.evolution ? [['evolution', 'on: ' + Object.keys(sc.evolution).filter(k => sc.evolution[k]).join(', ') + ' (/v1 answers go beyond the contract)']] : [])]);
  $('#ratelimit-info').textContent = (sc.rate_limits ? sc.rate_limits + ' rate limit rule(s) in force' : 'No rate limits in this scenario') +
    '; ' + limited.total + ' request(s) answered 429 in the journal.';
  const body = $('#faults-table tbody');
  const rows = faults.data.map(f => {
    const m = f.match || {};
    const match = [m.method, m.path, m.model && 'model ' + m.model, m.category && 'category ' + m.category, m.output_type].filter(Boolean).join(' ') || 'every request';
    let does = f.action;
    if (f.action === 'error') does = (f.status || '') + (f.code ? ' ' + f.code : '');
    if (f.action === 'gateway') does = 'gateway ' + f.status + ' (HTML, no request id)';
    if (f.action === 'download' && f.download) {
      const d = f.download;
      does = 'download' + [d.bytes_per_second && d.bytes_per_second + ' B/s', d.chunk_bytes && 'chunks of ' + d.chunk_bytes,
        d.pause && 'pause ' + d.pause, d.cut_after && 'cut after ' + d.cut_after + ' bytes',
        d.length_delta && 'Content-Length ' + (d.length_delta > 0 ? '+' : '') + d.length_delta].filter(Boolean).map(x => ' ' + x).join(',');
    }
    if (f.retry_after) does += ', Retry-After ' + f.retry_after + 's' + (f.retry_after_format === 'date' ? ' as a date' : '');
    if (f.delay) does += ' after ' + f.delay;
    if (f.probability !== undefined) does += ' (p=' + f.probability + ')';
    return el('tr', { 'data-id': f.id },
      el('td', { class: 'mono', text: f.id }), el('td', { text: f.source }), el('td', { class: 'mono', text: match, title: match }),
      el('td', { text: does }), el('td', { class: 'num', text: f.remaining < 0 ? '∞' : f.remaining === 0 ? 'spent' : String(f.remaining), title: f.remaining < 0 ? 'no limit' : f.remaining + ' left' }), el('td', { class: 'num', text: String(f.fired) }),
      el('td', {}, el('button', { class: 'ghost', onclick: () => removeFault(f.id), title: 'Remove fault ' + f.id }, 'Remove')));
  });
  body.replaceChildren(...rows);
  $('#faults-empty').hidden = rows.length > 0;
  $('#faults-count').textContent = rows.length ? '(' + rows.length + ')' : '';
}

// loadWebhooks shows the tenant's webhook (never its secret, which the API never shows) and its
// newest delivery attempts first.
async function loadWebhooks() {
  const [hooks, log] = await Promise.all([api('GET', '/_emulator/webhooks'), api('GET', '/_emulator/webhooks/deliveries')]);
  const c = hooks.config, d = hooks.deliveries;
  kv($('#webhooks-info'), c ? [['url', c.url], ['events', c.events.join(', ')], ['set by', c.source || '—'],
    ['secret', c.secret_set ? 'set' : 'none: nothing is sent until PUT /_emulator/webhooks sets one'], ['audit', c.audit ? 'on' : 'off'],
    ['deliveries', d.delivered + ' delivered, ' + d.pending + ' pending, ' + d.in_flight + ' in flight, ' + d.gave_up + ' given up, ' + d.dropped + ' dropped']]
    : [['webhook', 'none (PUT /_emulator/webhooks, a scenario or --webhook sets one)']]);
  const rows = log.data.slice(-50).reverse().map(a => el('tr', {},
    el('td', { class: 'mono', text: a.at.replace('T', ' ').replace('Z', ''), title: a.id }), el('td', { text: a.event }),
    el('td', { class: 'mono', text: a.job.slice(0, 8), title: a.job }), el('td', { class: 'num', text: String(a.attempt) }),
    el('td', { text: a.kind }), el('td', { class: 'num', text: a.status ? String(a.status) : '—' }),
    el('td', { class: 'num', text: String(a.latency_ms) }),
    el('td', { text: a.outcome + (a.error ? ' (' + a.error + ')' : '') + (a.next ? ', next ' + a.next : '') })));
  $('#webhooks-table tbody').replaceChildren(...rows);
  $('#webhooks-empty').hidden = rows.length > 0;
  $('#webhooks-count').textContent = log.data.length ? '(' + log.data.length + ' attempts)' : '';
}

async function removeFault(id) {
  try { await api('DELETE', '/_emulator/faults/' + encodeURIComponent(id)); } catch (e) { failed(e); }
}

function faultFromForm(form) {
  const v = name => form.elements[name].value.trim();
  const match = {};
  if (v('method')) match.method = v('method');
  if (v('path')) match.path = v('path');
  if (v('model')) match.model = v('model');
  const f = { match, action: v('action') };
  if (f.action === 'error') {
    if (v('status')) f.status = Number(v('status'));
    if (v('code')) f.code = v('code');
  }
  if (f.action === 'gateway' && (v('status') === '502' || v('status') === '504')) f.status = Number(v('status'));
  if (f.action === 'download') {
    f.download = {};
    if (v('bytes_per_second')) f.download.bytes_per_second = Number(v('bytes_per_second'));
    if (v('cut_after')) f.download.cut_after = Number(v('cut_after'));
  }
  if (v('retry_after_format')) f.retry_after_format = v('retry_after_format');
  if (v('delay')) f.delay = v('delay');
  if (v('count')) f.count = Number(v('count'));
  if (v('probability')) f.probability = Number(v('probability'));
  return f;
}

// ---- accounts ------------------------------------------------------------------------------

async function loadAccounts() {
  const acc = await api('GET', '/_emulator/accounts');
  const body = $('#accounts-table tbody');
  const focused = document.activeElement && document.activeElement.closest('#accounts-table');
  if (focused && body.rows.length === acc.data.length) { // keep a half-typed value: update numbers only
    acc.data.forEach((b, i) => ['available', 'held', 'charged', 'refunded'].forEach((k, c) => setText(body.rows[i].cells[c + 1], fmtInt(b[k]))));
    return;
  }
  body.replaceChildren(...acc.data.map(b => el('tr', { 'data-account': b.account },
    el('td', { class: 'mono', text: b.account }),
    el('td', { class: 'num', text: fmtInt(b.available) }), el('td', { class: 'num', text: fmtInt(b.held) }),
    el('td', { class: 'num', text: fmtInt(b.charged) }), el('td', { class: 'num', text: fmtInt(b.refunded) }),
    el('td', {}, el('form', { class: 'inline', onsubmit: (ev) => { ev.preventDefault(); setCredits(b.account, ev.target.elements.credits.value); } },
      el('input', { name: 'credits', size: 12, inputmode: 'numeric', placeholder: String(b.available), 'aria-label': 'Credits for ' + b.account, autocomplete: 'off' }),
      el('button', { type: 'submit' }, 'Set'))))));
}

async function setCredits(account, value) {
  const n = Number(String(value).replace(/[,_\s]/g, ''));
  if (!Number.isInteger(n) || n < 0) { notice('Credits must be a whole number of 0 or more.', 'error'); return; }
  try {
    await api('PUT', '/_emulator/accounts/' + encodeURIComponent(account), { credits: n });
    notice(account + ' can now spend ' + fmtInt(n) + ' credits.');
    document.activeElement.blur();
  } catch (e) { failed(e); }
}

// ---- coverage ------------------------------------------------------------------------------

async function loadCoverage() {
  const scope = $('#coverage-scope').value;
  const c = await api('GET', '/_emulator/coverage?scope=' + scope);
  $('#coverage-summary').textContent = c.exercised + ' of ' + c.total + ' cases exercised' + (scope === 'run' ? ' in the whole run' : '');
  const unseen = $('#coverage-unseen').checked;
  const rows = c.cases.filter(k => !unseen || k.count === 0);
  const body = $('#coverage-table tbody');
  const key = scope + JSON.stringify(rows);
  if (body.dataset.v === key) return;
  body.dataset.v = key;
  body.replaceChildren(...rows.map(k => el('tr', { 'data-case': k.id, class: k.count ? 'seen' : 'unseen' },
    el('td', { text: k.group }), el('td', { class: 'mono', text: k.id }), el('td', { class: 'num', text: fmtInt(k.count) }))));
}

// ---- report --------------------------------------------------------------------------------

async function loadReport() {
  const run = $('#report-run').checked;
  const rep = await api('GET', '/_emulator/report' + (run ? '?scope=run' : ''));
  const total = Object.values(rep.counts).reduce((a, b) => a + b, 0);
  $('#report-summary').textContent = total === 0
    ? 'No findings in ' + fmtInt(rep.examined) + ' requests and downloads.'
    : fmtInt(total) + ' finding' + (total === 1 ? '' : 's') + ' in ' + fmtInt(rep.examined) + ' requests and downloads: ' +
      rep.rules.filter(r => rep.counts[r.id]).map(r => r.id + ' ×' + rep.counts[r.id]).join(', ') +
      (rep.findings.length < total ? ' (the first ' + fmtInt(rep.findings.length) + ' listed)' : '');
  const titles = Object.fromEntries(rep.rules.map(r => [r.id, r.title]));
  $('#report-table tbody').replaceChildren(...rep.findings.map(f => el('tr', { 'data-rule': f.rule },
    el('td', { class: 'mono', text: f.rule, title: titles[f.rule] }),
    el('td', {}, el('span', { class: 'badge sev-' + f.severity, text: f.severity })),
    el('td', { class: 'reason', text: (f.tenant ? f.tenant + ': ' : '') + f.reason, title: f.reason }),
    el('td', { class: 'mono entries' }, f.entries.flatMap((seq, i) => [i ? ', ' : null, entryLink(f.tenant || state.tenant, seq)])))));
}

// entryLink opens a journal entry of a tenant, as the address names it.
function entryLink(tenant, seq) {
  const q = new URLSearchParams({ tenant, view: 'journal', entry: String(seq) });
  return el('a', { href: '#' + q, text: String(seq), title: 'Open entry ' + seq + ' in the journal' });
}

// ---- uploads -------------------------------------------------------------------------------

async function loadUploads() {
  const q = new URLSearchParams({ limit: PAGE.uploads, offset: state.uploads.offset });
  const page = await api('GET', '/_emulator/uploads?' + q);
  if (page.total > 0 && state.uploads.offset >= page.total) { // the page emptied as uploads expired
    state.uploads.offset = Math.max(0, Math.floor((page.total - 1) / PAGE.uploads) * PAGE.uploads);
    return loadUploads();
  }
  state.uploads.total = page.total;
  const body = $('#uploads-table tbody');
  const key = JSON.stringify(page.data);
  if (body.dataset.v !== key) {
    body.dataset.v = key;
    body.replaceChildren(...page.data.map(u => el('tr', { 'data-id': u.id },
      el('td', { class: 'mono', text: clockTime(u.created_at), title: fullTime(u.created_at) }),
      el('td', { class: 'mono' }, el('a', { href: u.url, target: '_blank', rel: 'noopener', text: u.id.slice(0, 8), title: u.url })),
      el('td', { class: 'mono', text: u.account }),
      el('td', { class: 'mono', text: u.content_type }),
      el('td', { class: 'num', text: fmtBytes(u.size_bytes), title: fmtInt(u.size_bytes) + ' bytes' }),
      el('td', { class: u.failure ? 'mi-fail' : '', text: u.failure ? 'does not decode: jobs fail ' + u.failure : (shapeOf({ width: u.width, height: u.height, duration: u.duration }) || '—') }),
      el('td', { class: 'mono', text: clockTime(u.expires_at), title: fullTime(u.expires_at) }),
      el('td', { class: 'mono uses' }, u.jobs.length ? u.jobs.flatMap((id, i) => [i ? ', ' : null, jobLink(id)]) : el('span', { class: 'muted', text: 'no job yet' }),
        u.job_count > u.jobs.length ? ' and ' + (u.job_count - u.jobs.length) + ' more' : null))));
  }
  $('#uploads-empty').hidden = page.data.length > 0;
  $('#uploads-count').textContent = page.total ? '(' + fmtInt(page.total) + ')' : '';
  drawPager('uploads', state.uploads.offset, page.data.length, page.total);
}

// jobLink opens a job of this tenant in the jobs view, as the address names it.
function jobLink(id) {
  const q = new URLSearchParams({ tenant: state.tenant, view: 'jobs', job: id });
  return el('a', { href: '#' + q, text: id.slice(0, 8), title: 'Open job ' + id });
}

// ---- tenants -------------------------------------------------------------------------------

async function loadTenants() {
  const ts = await api('GET', '/_emulator/tenants');
  const sel = $('#tenant');
  const names = ts.data.map(t => t.name);
  if (!names.includes(state.tenant)) names.push(state.tenant);
  const key = ts.data.map(t => t.name + ':' + t.jobs).join(',');
  if (sel.dataset.v !== key) {
    sel.dataset.v = key;
    sel.replaceChildren(...ts.data.map(t => el('option', { value: t.name, text: t.name + ' (' + t.jobs + ' jobs)' })));
  }
  sel.value = state.tenant;
}

function switchTenant(name) {
  state.tenant = name;
  sessionStorage.setItem(TENANT_KEY, name);
  state.jobs = { offset: 0, total: 0, items: [], selected: null, detailKey: '', shown: '' };
  state.journal = { page: 0, total: 0, items: [], selected: null };
  state.uploads = { offset: 0, total: 0 };
  $('#job-detail').replaceChildren(el('p', { class: 'placeholder', text: 'Select a job (j/k, Enter) to see its input, plan and outputs.' }));
  $('#entry-detail').replaceChildren(el('p', { class: 'placeholder', text: 'Select a request to see what was sent and answered.' }));
  delete $('#entry-detail').dataset.v;
  toHash();
  loadTenants().catch(failed);
  startStream(); // its hello refreshes the view
}

// ---- snapshots -----------------------------------------------------------------------------

// downloadSnapshot saves the tenant's whole world, journal included, as a file named after the
// tenant and its clock.
async function downloadSnapshot() {
  const res = await fetch('/_emulator/snapshot?journal=true', { headers: headers({}) });
  if (!res.ok) {
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    throw new ApiError(res.status, body);
  }
  const blob = await res.blob();
  const c = state.clock;
  const at = c ? '-' + new Date(c.mode === 'manual' ? c.now : c.now + (performance.now() - c.at)).toISOString().slice(0, 19).replace(/[-:]/g, '') + 'Z' : '';
  const a = el('a', { href: URL.createObjectURL(blob), download: 'snapshot-' + state.tenant + at + '.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
  notice('Snapshot of tenant "' + state.tenant + '" downloaded.');
}

function openSnapshotDialog() {
  $('#snapshot-form').reset();
  $('#snapshot-problems').hidden = true;
  $('#snapshot-dialog').hidden = false;
  $('#snapshot-file').focus();
}

function closeSnapshotDialog() { $('#snapshot-dialog').hidden = true; }

// snapshotProblems shows why a snapshot was not opened: the detail, and each problem with
// where in the document it is.
function snapshotProblems(detail, errors, models) {
  $('#snapshot-detail').textContent = detail;
  const items = (errors || []).map(e => el('li', {}, e.pointer ? el('code', { text: e.pointer }) : null, e.pointer ? ' ' : null, e.message || ''));
  if (models && models.length) items.push(el('li', { text: 'models this emulator lacks: ' + models.join(', ') }));
  $('#snapshot-errors').replaceChildren(...items);
  $('#snapshot-problems').hidden = false;
}

// suggestTenant names the new tenant after the snapshot's own, made unique among the tenants.
async function suggestTenant() {
  const file = $('#snapshot-file').files[0];
  if (!file || $('#snapshot-tenant').value) return;
  let base = 'snapshot';
  try { base = (JSON.parse(await file.text()).tenant || 'default').replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 55); } catch (e) { /* the server says what is wrong */ }
  const names = $$('#tenant option').map(o => o.value);
  let name = base + '-copy';
  for (let i = 2; names.includes(name); i++) name = base + '-copy' + i;
  if (!$('#snapshot-tenant').value) $('#snapshot-tenant').value = name;
}

// openSnapshot restores the chosen file into a new tenant and shows it, or lists the problems.
async function openSnapshot() {
  const file = $('#snapshot-file').files[0];
  const name = $('#snapshot-tenant').value.trim();
  $('#snapshot-problems').hidden = true;
  if (!file || !name) return;
  await loadTenants().catch(() => {});
  if ($$('#tenant option').some(o => o.value === name)) {
    snapshotProblems('Tenant "' + name + '" already exists; choose a new name.', [], []);
    return;
  }
  const h = headers({ 'Content-Type': 'application/json' });
  h['X-Emulator-Tenant'] = name;
  const res = await fetch('/_emulator/snapshot', { method: 'PUT', headers: h, body: await file.text() });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    const err = new ApiError(res.status, body);
    if (err.code === 'admin_token_required' || err.code === 'control_api_disabled') { closeSnapshotDialog(); api('GET', '/_emulator/health').catch(() => {}); return; }
    // The request itself made the tenant it named; a refused snapshot leaves none behind.
    const ts = await api('GET', '/_emulator/tenants').catch(() => ({ data: [] }));
    if (ts.data.some(t => t.name === name)) await api('DELETE', '/_emulator/tenants/' + encodeURIComponent(name)).catch(() => {});
    loadTenants().catch(() => {});
    snapshotProblems(err.message, body && body.errors, body && body.models);
    return;
  }
  closeSnapshotDialog();
  switchTenant(name);
  notice('Opened ' + file.name + ' into tenant "' + name + '": ' + body.jobs + ' jobs, ' + body.quotes + ' quotes, clock at ' + fullTime(body.now) + '.');
}

// ---- views and keys ------------------------------------------------------------------------

function showTab(tab, load = true) {
  state.tab = tab;
  $$('.tabs button').forEach(b => b.setAttribute('aria-selected', String(b.dataset.tab === tab)));
  $$('.view').forEach(v => { v.hidden = v.id !== 'view-' + tab; });
  toHash();
  if (load) refresh();
}

function moveRow(delta) {
  if (state.tab === 'jobs') {
    const items = state.jobs.items;
    if (!items.length) return;
    let i = items.findIndex(j => j.id === state.jobs.selected);
    i = i < 0 ? 0 : Math.max(0, Math.min(items.length - 1, i + delta));
    selectJob(items[i].id, true);
  } else if (state.tab === 'journal') {
    const items = state.journal.items;
    if (!items.length) return;
    let i = items.findIndex(e => e.seq === state.journal.selected);
    i = i < 0 ? 0 : Math.max(0, Math.min(items.length - 1, i + delta));
    selectEntry(items[i].seq, true);
  }
}

function turnPage(dir) {
  if (state.tab === 'jobs') {
    const next = state.jobs.offset + dir * PAGE.jobs;
    if (next < 0 || (dir > 0 && next >= state.jobs.total)) return;
    state.jobs.offset = next;
  } else if (state.tab === 'journal') {
    const next = state.journal.page + dir;
    if (next < 0 || (dir > 0 && next * PAGE.journal >= state.journal.total)) return;
    state.journal.page = next;
  } else if (state.tab === 'uploads') {
    const next = state.uploads.offset + dir * PAGE.uploads;
    if (next < 0 || (dir > 0 && next >= state.uploads.total)) return;
    state.uploads.offset = next;
  } else return;
  refresh();
}

function onKey(ev) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const t = ev.target;
  const typing = t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA');
  if (ev.key === 'Escape') {
    if (!$('#help').hidden) { $('#help').hidden = true; return; }
    if (!$('#snapshot-dialog').hidden) { closeSnapshotDialog(); return; }
    if (typing) { t.blur(); return; }
    if (state.tab === 'jobs' && state.jobs.selected) { state.jobs.selected = null; toHash(); drawJobs(); loadJobDetail().catch(failed); }
    return;
  }
  if (typing || !$('#overlay').hidden || !$('#snapshot-dialog').hidden) return;
  const k = ev.key;
  const tabs = { 1: 'jobs', 2: 'journal', 3: 'scenario', 4: 'accounts', 5: 'coverage', 6: 'report', 7: 'uploads' };
  if (tabs[k]) { showTab(tabs[k]); }
  else if (k === 'j' || k === 'ArrowDown') { moveRow(1); }
  else if (k === 'k' || k === 'ArrowUp') { moveRow(-1); }
  else if (k === ']') { turnPage(1); }
  else if (k === '[') { turnPage(-1); }
  else if (k === '/') { const f = $('#view-' + state.tab + ' [data-filter]'); if (f) f.focus(); }
  else if (k === '.') { if (state.manual) changeClock({ advance: '1s' }); }
  else if (k === '?') { $('#help').hidden = false; $('#help-close').focus(); }
  else if (k === 's' && state.tab === 'jobs' && state.jobs.selected) { const b = $('#force-succeed'); if (b && !b.disabled) b.click(); }
  else if (k === 'f' && state.tab === 'jobs' && state.jobs.selected) { const b = $('#force-fail'); if (b && !b.disabled) b.click(); }
  else if (k === 'Enter' && t && t.closest && t.closest('tbody tr')) { /* the row is already open */ }
  else return;
  ev.preventDefault();
}

function debounce(f, ms) {
  let t = 0;
  return () => { clearTimeout(t); t = setTimeout(f, ms); };
}

function wire() {
  $$('.tabs button').forEach(b => b.addEventListener('click', () => showTab(b.dataset.tab)));
  $('#tenant').addEventListener('change', ev => switchTenant(ev.target.value));
  $('#tenant').addEventListener('focus', () => loadTenants().catch(failed));
  $$('[data-advance]').forEach(b => b.addEventListener('click', () => changeClock({ advance: b.dataset.advance })));
  $('#advance-form').addEventListener('submit', ev => { ev.preventDefault(); const v = $('#advance-input').value.trim(); if (v) changeClock({ advance: v }); });
  $('#set-form').addEventListener('submit', ev => { ev.preventDefault(); const v = $('#set-input').value.trim(); if (v) changeClock({ set: v }); });
  $('#reset-btn').addEventListener('click', async () => {
    if (!confirm('Reset tenant "' + state.tenant + '"? Its jobs, quotes, journal, faults, balances and clock go back to the start.')) return;
    try { await api('POST', '/_emulator/reset'); } catch (e) { failed(e); }
  });
  $('#snapshot-download').addEventListener('click', () => downloadSnapshot().catch(failed));
  $('#snapshot-open').addEventListener('click', openSnapshotDialog);
  $('#snapshot-cancel').addEventListener('click', closeSnapshotDialog);
  $('#snapshot-file').addEventListener('change', () => { $('#snapshot-problems').hidden = true; suggestTenant(); });
  $('#snapshot-form').addEventListener('submit', ev => { ev.preventDefault(); openSnapshot().catch(e => snapshotProblems(e.message || String(e), [], [])); });
  const jobsChanged = () => { state.jobs.offset = 0; refresh(); };
  $('#jobs-status').addEventListener('change', jobsChanged);
  $('#jobs-model').addEventListener('input', debounce(jobsChanged, 200));
  $('#jobs-filters').addEventListener('submit', ev => ev.preventDefault());
  $('#jobs-table tbody').addEventListener('click', ev => { const tr = ev.target.closest('tr'); if (tr) selectJob(tr.dataset.id, false); });
  $('#report-run').addEventListener('change', () => refresh());
  $('#jobs-table tbody').addEventListener('keydown', ev => { if (ev.key === 'Enter') { const tr = ev.target.closest('tr'); if (tr) selectJob(tr.dataset.id, true); } });
  const journalChanged = () => { state.journal.page = 0; refresh(); };
  $('#journal-method').addEventListener('change', journalChanged);
  ['#journal-path', '#journal-status', '#journal-account'].forEach(s => $(s).addEventListener('input', debounce(journalChanged, 200)));
  $('#journal-filters').addEventListener('submit', ev => ev.preventDefault());
  $('#journal-clear').addEventListener('click', async () => { try { await api('DELETE', '/_emulator/requests'); } catch (e) { failed(e); } });
  $('#journal-table tbody').addEventListener('click', ev => { const tr = ev.target.closest('tr'); if (tr) selectEntry(Number(tr.dataset.seq), false); });
  $$('[data-pager]').forEach(p => {
    $('[data-page=prev]', p).addEventListener('click', () => turnPage(-1));
    $('[data-page=next]', p).addEventListener('click', () => turnPage(1));
  });
  $('#scenario-form').addEventListener('submit', async ev => {
    ev.preventDefault();
    try { const sc = await api('PUT', '/_emulator/scenario', { name: $('#scenario-select').value }); notice('Scenario "' + sc.name + '" is in force.'); } catch (e) { failed(e); }
  });
  $('#fault-form').addEventListener('submit', async ev => {
    ev.preventDefault();
    try {
      const f = await api('POST', '/_emulator/faults', faultFromForm(ev.target));
      notice('Fault ' + f.id + ' added.');
    } catch (e) {
      const detail = e.body && e.body.errors ? e.body.errors.map(x => x.message).join('; ') : '';
      if (e instanceof ApiError && e.status === 422) notice('Fault not added: ' + (detail || e.message), 'error'); else failed(e);
    }
  });
  $('#coverage-scope').addEventListener('change', () => refresh());
  $('#coverage-unseen').addEventListener('change', () => refresh());
  $('#coverage-filters').addEventListener('submit', ev => ev.preventDefault());
  $('#faults-clear').addEventListener('click', async () => { try { await api('DELETE', '/_emulator/faults'); } catch (e) { failed(e); } });
  $('#token-form').addEventListener('submit', ev => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#token-input').value);
    $('#token-input').value = '';
    unlock();
    start();
  });
  $('#help-btn').addEventListener('click', () => { $('#help').hidden = false; $('#help-close').focus(); });
  $('#help-close').addEventListener('click', () => { $('#help').hidden = true; });
  document.addEventListener('keydown', onKey);
  // A link pasted into this tab, or the back button: show what the address names.
  window.addEventListener('hashchange', () => {
    const h = fromHash();
    if (h.tenant && h.tenant !== state.tenant) { switchTenant(h.tenant); $('#tenant').value = h.tenant; }
    state.jobs.selected = h.job;
    state.journal.selected = h.entry;
    state.journal.seek = h.entry !== null;
    showTab(h.tab || state.tab);
  });
  // In real mode time moves between events: the clock ticks here, without asking the emulator.
  setInterval(() => { if (state.clock && state.clock.mode === 'real') drawClock(); }, 250);
}

function loadModels() {
  // Suggest the models seen in the table: the catalog itself needs an API key, which the
  // dashboard does not hold.
  const seen = new Set(state.jobs.items.map(j => j.model));
  const dl = $('#models');
  const have = new Set($$('option', dl).map(o => o.value));
  seen.forEach(m => { if (!have.has(m)) dl.append(el('option', { value: m })); });
}

async function start() {
  const control = document.body.dataset.control;
  if (control === 'off') { showDisabled(); return; }
  if (control === 'token' && !sessionStorage.getItem(TOKEN_KEY)) { askToken(''); return; }
  let health;
  try {
    const res = await fetch('/_emulator/health', { headers: headers({}) });
    health = await res.json();
  } catch (e) {
    notice('Cannot reach the emulator: ' + e.message, 'error');
    return;
  }
  if (health.control === false) { showDisabled(); return; }
  try {
    await loadTenants();
  } catch (e) {
    failed(e);
    return;
  }
  if (state.tenant !== 'default' && !$$('#tenant option').some(o => o.value === state.tenant)) {
    state.tenant = 'default';
    sessionStorage.setItem(TENANT_KEY, 'default');
    $('#tenant').value = 'default';
  }
  showTab(state.tab, false);
  startStream(); // its hello event loads the view
}

setInterval(() => { if (state.tab === 'jobs') loadModels(); }, 5000); // from the rows held, no request
wire();
start();
