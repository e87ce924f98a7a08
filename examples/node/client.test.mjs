// A client test suite against mediagen-emulator with Node's built-in test runner and fetch
// (Node 20 or later, no npm packages).
//
// It starts the built emulator as a subprocess on a free port with a manual clock and a fixed
// seed, reads the address from the first line the emulator prints, and drives the whole flow of
// a Media Generation Service client: catalog, model schema, quote, generation, download, a
// forced failure and an expired quote. Time moves only when a test posts to /_emulator/clock, so
// nothing here sleeps.
//
//   MEDIAGEN_BIN=/path/to/mediagen-emulator node --test examples/node/client.test.mjs
//
// Without MEDIAGEN_BIN it uses ./mediagen-emulator at the repository root, or builds it with Go.

import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const KEY = 'mg_test_all'; // the embedded catalog's key with models:read and generate
const ACCOUNT = 'acct_all';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let workdir;
let proc;
let base;

/** The emulator to run: $MEDIAGEN_BIN, ./mediagen-emulator, or a fresh go build. */
function emulatorBinary() {
  if (process.env.MEDIAGEN_BIN) return process.env.MEDIAGEN_BIN;
  const built = join(REPO, 'mediagen-emulator');
  if (existsSync(built)) return built;
  const out = join(workdir, 'mediagen-emulator');
  execFileSync('go', ['build', '-o', out, '.'], { cwd: REPO, stdio: 'inherit' });
  return out;
}

/** Starts the emulator and resolves with its base URL, read from its first line. */
async function startEmulator() {
  workdir = mkdtempSync(join(tmpdir(), 'mediagen-node-'));
  // The emulator reads MEDIAGEN_* variables as flag defaults; leave them out so the suite runs
  // the same everywhere.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEDIAGEN_')));
  proc = spawn(emulatorBinary(), ['--addr', '127.0.0.1:0', '--clock', 'manual', '--seed', '42'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    env,
  });
  const lines = createInterface({ input: proc.stdout });
  const exited = once(proc, 'exit').then(([code]) => {
    throw new Error(`emulator exited with ${code} before listening`);
  });
  const [line] = await Promise.race([once(lines, 'line'), exited]);
  exited.catch(() => {}); // from here on an exit is checked in after()
  const prefix = 'listening on ';
  assert.ok(line.startsWith(prefix + 'http://'), `unexpected first line ${JSON.stringify(line)}`);
  return line.slice(prefix.length);
}

async function call(method, path, { body, headers = {}, key = KEY } = {}) {
  const url = path.startsWith('http') ? path : base + path;
  const hdrs = { ...headers };
  if (key) hdrs.Authorization = `Bearer ${key}`;
  if (body !== undefined) hdrs['Content-Type'] = 'application/json';
  const resp = await fetch(url, { method, headers: hdrs, body: body === undefined ? undefined : JSON.stringify(body) });
  const bytes = Buffer.from(await resp.arrayBuffer());
  const type = resp.headers.get('content-type') ?? '';
  const json = type.includes('json') && bytes.length ? JSON.parse(bytes.toString()) : undefined;
  return { status: resp.status, headers: resp.headers, bytes, json };
}

async function api(method, path, opts = {}) {
  const resp = await call(method, path, opts);
  if (opts.want !== undefined) {
    assert.equal(resp.status, opts.want, `${method} ${path}: ${resp.bytes.toString()}`);
  }
  return resp;
}

async function control(method, path, body) {
  const resp = await call(method, path, { body, key: null });
  assert.ok(resp.status < 300, `${method} ${path}: ${resp.status} ${resp.bytes.toString()}`);
  return resp.json;
}

/** Moves the emulator's clock; resolves once every job due by then has moved on. */
const advance = (duration) => control('POST', '/_emulator/clock', { advance: duration });

async function balance(account = ACCOUNT) {
  const { data } = await control('GET', '/_emulator/accounts');
  return data.find((b) => b.account === account);
}

async function firstImageModel() {
  const { json } = await api('GET', '/v1/models?category=text-to-image&limit=5', { want: 200 });
  assert.ok(json.total > 0);
  return json.data[0];
}

async function modelSchema(id) {
  // The id is used as-is in the path, slashes included.
  const { json } = await api('GET', `/v1/models/${id}`, { want: 200 });
  const doc = json.openapi;
  assert.match(doc.openapi, /^3\.1/);
  const bodies = Object.values(doc.paths).flatMap((item) => Object.values(item)).filter((op) => op.requestBody);
  assert.equal(bodies.length, 1, 'the OpenAPI document describes exactly one request body');
  return bodies[0].requestBody.content['application/json'].schema;
}

/** An input built from the schema's examples, asking for PNG when the model offers it. */
function inputFromSchema(schema) {
  const input = schema.examples?.length
    ? { ...schema.examples[0] }
    : Object.fromEntries((schema.required ?? []).map((name) => [name, schema.properties[name].examples[0]]));
  if (schema.properties?.output_format?.enum?.includes('png')) input.output_format = 'png';
  return input;
}

async function quote(model, input) {
  const { json } = await api('POST', '/v1/quotes', { body: { model, input }, want: 200 });
  assert.deepEqual(Object.keys(json).sort(), ['credits', 'expires_at', 'model', 'quote_id']);
  return json;
}

const generate = (model, input, quoteId, idempotencyKey, { query = '', headers = {} } = {}) =>
  api('POST', `/v1/generate${query}`, {
    body: { model, input, quote_id: quoteId },
    headers: { 'Idempotency-Key': idempotencyKey, ...headers },
  });

describe('a Media Generation Service client', () => {
  before(async () => {
    base = await startEmulator();
  });

  after(async () => {
    let code = proc.exitCode ?? proc.signalCode;
    if (code === null) {
      const exited = once(proc, 'exit');
      proc.kill('SIGTERM'); // a graceful shutdown
      const watchdog = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      const [exitCode, signal] = await exited;
      clearTimeout(watchdog);
      code = exitCode ?? signal;
    }
    rmSync(workdir, { recursive: true, force: true });
    assert.equal(code, 0, `emulator exited with ${code} after SIGTERM`);
  });

  beforeEach(() => control('POST', '/_emulator/reset'));

  test('lists models, each with an OpenAPI schema', async () => {
    const model = await firstImageModel();
    assert.equal(model.output_type, 'image');
    assert.equal(model.status, 'ready');
    const schema = await modelSchema(model.id);
    assert.equal(schema.type, 'object');
    assert.ok(schema.required.includes('prompt'));
  });

  test('quotes, generates and downloads a PNG', async () => {
    const model = (await firstImageModel()).id;
    const input = inputFromSchema(await modelSchema(model));
    const q = await quote(model, input);
    assert.ok(q.credits > 0);

    const job = await generate(model, input, q.quote_id, 'order-1');
    assert.equal(job.status, 202);
    assert.equal(job.json.status, 'queued');
    assert.equal(job.json.credit_status, 'held');

    // The manual clock stands still: move it past the job's run time, then look once.
    await advance('1m');
    const { json: done } = await api('GET', job.headers.get('location'), { want: 200 });
    assert.equal(done.status, 'succeeded');
    assert.equal(done.credit_status, 'charged');
    assert.equal(done.outputs.length, input.num_images ?? 1);

    const [output] = done.outputs;
    const file = await call('GET', output.url, { key: null }); // outputs need no key
    assert.equal(file.status, 200);
    assert.equal(file.headers.get('content-type'), 'image/png');
    assert.deepEqual(file.bytes.subarray(0, 8), PNG_SIGNATURE);
    assert.equal(file.bytes.length, output.size_bytes);
    // Width and height from the IHDR chunk.
    assert.deepEqual([file.bytes.readUInt32BE(16), file.bytes.readUInt32BE(20)], [output.width, output.height]);
    assert.equal((await balance()).charged, q.credits);
  });

  test('wait=true answers with the finished job', async () => {
    const model = (await firstImageModel()).id;
    const input = inputFromSchema(await modelSchema(model));
    const q = await quote(model, input);
    const first = await generate(model, input, q.quote_id, 'order-2');
    assert.equal(first.status, 202);

    // Retry the same generation with wait=true (the Idempotency-Key makes it the same job)
    // while the clock moves. Whether the clock moves before or during the wait, the answer is
    // the finished job with 200; the wait never depends on a timer.
    const waiting = generate(model, input, q.quote_id, 'order-2', { query: '?wait=true' });
    await advance('1m');
    const resp = await waiting;
    assert.equal(resp.status, 200);
    assert.equal(resp.headers.get('idempotent-replayed'), 'true');
    assert.equal(resp.json.id, first.json.id);
    assert.equal(resp.json.status, 'succeeded');
  });

  for (const [name, input, headers] of [
    ['the X-Emulator-Outcome header', { prompt: 'a red fox' }, { 'X-Emulator-Outcome': 'fail' }],
    ['an [emulator:fail] token', { prompt: 'a red fox [emulator:fail]' }, {}],
  ]) {
    test(`a failure forced by ${name} refunds the credits`, async () => {
      const model = (await firstImageModel()).id;
      const before = await balance();
      const q = await quote(model, input);
      const job = await generate(model, input, q.quote_id, 'fail-1', { headers });
      assert.equal(job.status, 202);
      assert.equal((await balance()).held, q.credits);
      await advance('1m');
      const { json: failed } = await api('GET', `/v1/jobs/${job.json.id}`, { want: 200 });
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'generation_failed');
      assert.equal(failed.credit_status, 'refunded');
      assert.deepEqual(failed.outputs, []);
      assert.deepEqual(await balance(), before);
    });
  }

  test('a quote expires on the manual clock', async () => {
    const model = (await firstImageModel()).id;
    const input = { prompt: 'a red fox' };
    const q = await quote(model, input);
    await advance('10m1s'); // quotes live 10 minutes
    const resp = await generate(model, input, q.quote_id, 'late');
    assert.equal(resp.status, 422);
    assert.equal(resp.headers.get('content-type'), 'application/problem+json');
    assert.equal(resp.json.code, 'quote_expired');
    assert.ok(resp.json.detail.includes(q.quote_id));
    assert.equal((await balance()).held, 0);
  });
});
