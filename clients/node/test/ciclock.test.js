// The README's first test in CI: startEmulator() with $MEDIAGEN_EMULATOR_URL naming the service
// container, whose emulator the documented recipes configure with --clock manual. startEmulator
// attaches to it, tenantFor puts each test's tenant on the skip clock it has locally (unless
// the test asks for another), and a wait=true that runs out of time on a manual clock says so.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { URL_ENV, attachEmulator, emulatorFromEnv, startEmulator, tenantFor } from '../index.js';
import { Client, imageModel } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
let ci; // the CI job's emulator: a manual clock, and a wait bound short enough for a test
let scratch;
before(async () => {
  ci = await startEmulator({ url: false, clock: 'manual', args: ['--max-wait', '1s'] });
  scratch = mkdtempSync(join(tmpdir(), 'mediagen-ciclock-test-'));
});
after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  assert.equal(await ci.close(), 0);
});

function withUrl(t, url) {
  const saved = process.env[URL_ENV];
  process.env[URL_ENV] = url;
  t.after(() => {
    if (saved === undefined) delete process.env[URL_ENV];
    else process.env[URL_ENV] = saved;
  });
}

test('startEmulator attaches to $MEDIAGEN_EMULATOR_URL, and its tenants skip', async (t) => {
  withUrl(t, ci.url);
  const emu = await startEmulator();
  assert.equal(emu.url, ci.url);
  assert.equal(emu.process, undefined, 'attached, not started');
  assert.equal(emu.tenantClock, 'skip');
  const tenant = await tenantFor(t, emu);
  assert.equal((await tenant.control.clock()).mode, 'skip');
  const resp = await new Client(tenant).generate(await imageModel(ci.url), { prompt: 'a red fox' }, 'fox-1', { wait: true });
  assert.deepEqual([resp.status, resp.json.status], [200, 'succeeded']); // the README's first test, in milliseconds
  await tenant.control.reset();
  assert.equal((await tenant.control.clock()).mode, 'skip', 'a reset keeps the clock tenantFor gave');
  assert.equal((await ci.control.clock()).mode, 'manual', 'the default tenant is left as configured');
  assert.equal(await emu.close(), null);
});

test('a test that asks for another clock gets it', async (t) => {
  withUrl(t, ci.url);
  const manual = await tenantFor(t, await startEmulator(), { clock: 'manual' });
  assert.equal((await manual.control.clock()).mode, 'manual');
  const emu = await startEmulator({ clock: 'real' }); // attached: the clock of its tenants
  assert.equal(emu.tenantClock, 'real');
  assert.equal((await (await tenantFor(t, emu)).control.clock()).mode, 'real');
  const asIs = await tenantFor(t, attachEmulator(ci.url, { clock: null }));
  assert.equal((await asIs.control.clock()).mode, 'manual', 'clock null: the emulator\'s');
  assert.equal((await emulatorFromEnv()).tenantClock, 'skip');
});

test('startEmulator({ url: false }) starts its own whatever the environment says', async (t) => {
  withUrl(t, ci.url);
  const emu = await startEmulator({ url: false });
  try {
    assert.notEqual(emu.url, ci.url);
    assert.ok(emu.process);
    assert.equal(emu.tenantClock, undefined);
    assert.equal((await emu.control.clock()).mode, 'skip');
  } finally {
    assert.equal(await emu.close(), 0);
  }
});

test('clockDiagnosis names the manual clock a wait=true ran out on', async (t) => {
  const tenant = await tenantFor(t, attachEmulator(ci.url, { clock: 'manual' }));
  const c = tenant.control;
  assert.equal(await c.clockDiagnosis(), undefined, 'nothing waited yet');
  const resp = await new Client(tenant).generate(await imageModel(ci.url), { prompt: 'a red fox' }, 'fox-1', { wait: true });
  assert.equal(resp.status, 202);
  const text = await c.clockDiagnosis();
  assert.ok(text?.includes(`the tenant ${tenant.name} is on a manual clock`), text);
  assert.ok(text.includes('1 wait=true generation answered 202, the job not finished (#2)'), text);
  await c.setClockMode('skip');
  assert.equal(await c.clockDiagnosis(), undefined, 'a skipping clock never leaves a wait waiting');
});

const INNER = (index, model) => `
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEmulator, tenantFor } from ${JSON.stringify(pathToFileURL(index).href)};
const emu = await startEmulator({ clock: 'manual' }); // attached, its tenants on the manual clock
test('waits on a manual clock', async (t) => {
  const tenant = await tenantFor(t, emu);
  const post = (path, body) => fetch(tenant.baseUrl + path, { method: 'POST', body: JSON.stringify(body),
    headers: { Authorization: 'Bearer ' + tenant.apiKey, 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' } });
  const request = { model: ${JSON.stringify(model)}, input: { prompt: 'a red fox' } };
  const quote = await (await post('/v1/quotes', request)).json();
  const resp = await post('/v1/generate?wait=true', { ...request, quote_id: quote.quote_id });
  assert.equal(resp.status, 200);
});
`;

test('a failed test whose wait=true ran out on a manual clock prints why', async () => {
  const file = join(scratch, 'inner.test.mjs');
  writeFileSync(file, INNER(join(here, '..', 'index.js'), await imageModel(ci.url)));
  const env = { ...process.env, [URL_ENV]: ci.url, MEDIAGEN_SNAPSHOT_DIR: '' };
  delete env.NODE_TEST_CONTEXT; // a run of its own, not a part of this one
  const err = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=spec', file], { env }).then(
    () => assert.fail('the inner run passed'),
    (e) => e,
  );
  const out = err.stdout + err.stderr;
  assert.match(out, /mediagen-emulator: the tenant waits-on-a-manual-clock-\w+ is on a manual clock/);
  assert.match(out, /1 wait=true generation answered 202/);
  assert.match(out, /control\.advance\('5m'\)/);
});
