// Snapshots from JavaScript: snapshot and restore on the control client, and tenantFor's
// snapshotOnFailure under node:test (a real run in a child process) and under a Vitest-shaped
// context, against the real emulator.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { EmulatorError, emulatorFromEnv, tenantFor } from '../index.js';
import { Client, imageModel } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const ACCOUNT = 'acct_poor';
let emu;
let supported = false;
const scratch = mkdtempSync(join(tmpdir(), 'mediagen-snapshot-test-'));

before(async () => {
  emu = await emulatorFromEnv();
  supported = await emu.supportsTenants();
});
after(async () => {
  rmSync(scratch, { recursive: true, force: true });
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

/** A tenant deleted when t ends, or a skip when the emulator has none. */
function fresh(t, name) {
  const tenant = emu.newTenant(name);
  t.after(() => tenant.delete());
  return tenant;
}

/** Credits set, a fault, and a job half-way on the manual clock; resolves with the job's id. */
async function busy(tenant) {
  await tenant.control.setCredits(ACCOUNT, 4242);
  await tenant.control.addFault({ match: { path: '/v1/models' }, status: 503, count: 2 });
  const job = await new Client(tenant).generate(await imageModel(tenant.baseUrl), { prompt: 'a lighthouse' }, 'snap-key');
  assert.equal(job.status, 202, job.text);
  await tenant.control.advance('300ms');
  return job.json.id;
}

test('snapshot and restore carry a tenant into another', async (t) => {
  if (!supported) return t.skip('the emulator has no tenants');
  const a = fresh(t, 'snap-a');
  const b = fresh(t, 'snap-b');
  const jobId = await busy(a);
  const snap = await a.control.snapshot();
  assert.equal(snap.format, 1);
  assert.equal(snap.tenant, a.name);
  assert.equal(snap.journal, undefined);
  assert.deepEqual(snap.jobs.map((j) => j.id), [jobId]);
  const withJournal = await a.control.snapshot({ journal: true });
  assert.ok(withJournal.journal.entries.length > 0);

  const path = join(scratch, 'world.json');
  writeFileSync(path, JSON.stringify(withJournal));
  for (const doc of [snap, JSON.stringify(snap), new TextEncoder().encode(JSON.stringify(snap)), path, pathToFileURL(path)]) {
    const got = await b.control.restore(doc);
    assert.deepEqual([got.status, got.tenant, got.jobs], ['restored', b.name, 1]);
    assert.deepEqual(await b.control.balance(ACCOUNT), await a.control.balance(ACCOUNT));
    assert.deepEqual(await b.control.now(), await a.control.now());
  }
  assert.ok((await b.control.requests()).length > 0, "the file's journal was restored");

  // The restored job goes on as the original does.
  await a.control.advance('1m');
  await b.control.advance('1m');
  const original = await new Client(a).request('GET', `/v1/jobs/${jobId}`);
  const restored = await new Client(b).request('GET', `/v1/jobs/${jobId}`);
  assert.equal(restored.json.status, 'succeeded');
  assert.equal(restored.json.status, original.json.status);
});

test('a refused restore changes nothing and names each problem', async (t) => {
  if (!supported) return t.skip('the emulator has no tenants');
  const tenant = fresh(t, 'snap-refused');
  await busy(tenant);
  const c = tenant.control;
  const snap = await c.snapshot();
  await assert.rejects(c.restore({ format: 2 }), (err) => {
    assert.ok(err instanceof EmulatorError);
    assert.deepEqual([err.status, err.code, err.problem.errors[0].pointer], [422, 'invalid_snapshot', '/format']);
    return true;
  });
  await assert.rejects(c.restore(JSON.stringify(snap).slice(0, 200)), /not complete JSON/);

  const model = await imageModel(tenant.baseUrl);
  const edited = JSON.parse(JSON.stringify(snap).replaceAll(model, 'acme/none'));
  edited.accounts[0].held += 1;
  await assert.rejects(c.restore(edited), (err) => {
    const pointers = err.problem.errors.map((e) => e.pointer);
    assert.ok(pointers.length > 1, JSON.stringify(err.problem));
    for (const p of pointers) assert.ok(err.message.includes(`\n  ${p}: `), `${p} in ${err.message}`);
    assert.match(err.message, /acme\/none/);
    return true;
  });
  assert.equal((await c.balance(ACCOUNT)).available, 4242, 'a refused restore changed the tenant');
  await assert.rejects(c.restore(42), TypeError);
});

// The inner test file: one passing and one failing test, each with a tenant of its own.
const INNER = (index) => `
import { test } from 'node:test';
import { attachEmulator, tenantFor } from ${JSON.stringify(pathToFileURL(index).href)};
const emu = attachEmulator();
test('passes', async (t) => {
  const tenant = await tenantFor(t, emu, { snapshotOnFailure: process.env.SNAP_OPTION || undefined });
  await tenant.control.setCredits('acct_poor', 1);
});
test('fails', async (t) => {
  const tenant = await tenantFor(t, emu, { snapshotOnFailure: process.env.SNAP_OPTION || undefined });
  await tenant.control.setCredits('acct_poor', 4242);
  throw new Error('the world is kept');
});
`;

/** Runs the inner tests against this emulator; resolves with what node --test printed. */
async function runInner(env) {
  const file = join(scratch, 'inner.test.mjs');
  writeFileSync(file, INNER(join(here, '..', 'index.js')));
  const childEnv = { ...process.env, MEDIAGEN_EMULATOR_URL: emu.url, MEDIAGEN_SNAPSHOT_DIR: '', ...env };
  delete childEnv.NODE_TEST_CONTEXT; // a run of its own, not a part of this one
  const err = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=spec', file], { env: childEnv }).then(
    () => assert.fail('the inner run passed'),
    (e) => e,
  );
  assert.equal(err.code, 1, err.stderr);
  return err.stdout + err.stderr;
}

/** The one snapshot file in dir, which the output names. */
function saved(out, dir) {
  const files = readdirSync(dir);
  assert.equal(files.length, 1, `${files} in ${dir}:\n${out}`);
  assert.match(files[0], /^fails-[0-9a-f]{8}\.json$/);
  const path = join(dir, files[0]);
  assert.ok(out.includes(`is saved in ${path}`), out);
  return path;
}

test('tenantFor saves a failed node:test test\'s tenant and prints the file', async (t) => {
  if (!supported) return t.skip('the emulator has no tenants');
  const byOption = join(scratch, 'by-option');
  const path = saved(await runInner({ SNAP_OPTION: byOption }), byOption);
  assert.ok(JSON.parse(readFileSync(path, 'utf8')).journal, 'the journal is saved');
  const later = fresh(t, 'snap-later');
  await later.control.restore(path);
  assert.equal((await later.control.balance(ACCOUNT)).available, 4242);

  const byEnv = join(scratch, 'by-env');
  saved(await runInner({ MEDIAGEN_SNAPSHOT_DIR: byEnv }), byEnv);

  const out = await runInner({});
  assert.ok(!out.includes('is saved in'), out);
});

test('tenantFor saves a failed Vitest test\'s tenant, from onTestFinished', async (t) => {
  if (!supported) return t.skip('the emulator has no tenants');
  const dir = join(scratch, 'vitest');
  const printed = [];
  t.mock.method(console, 'error', (line) => printed.push(line));
  // Vitest's test context: a function (so its own name is "context") with task and
  // onTestFinished, whose callback gets the context (Vitest 3 and later) or the task's result
  // (Vitest 1 and 2).
  const context = (state) => {
    const handlers = [];
    const ctx = Object.assign(function context() {}, {
      task: { name: `vitest ${state}`, result: { state } },
      onTestFinished: (fn) => handlers.push(fn),
    });
    return { ctx, finish: () => Promise.all(handlers.map((fn) => fn(ctx))) };
  };
  const pass = context('pass');
  await tenantFor(pass.ctx, emu, { snapshotOnFailure: dir });
  await pass.finish();
  assert.deepEqual(printed, []);

  const fail = context('fail');
  const tenant = await tenantFor(fail.ctx, emu, { snapshotOnFailure: dir });
  await tenant.control.setCredits(ACCOUNT, 4242);
  await fail.finish();
  const files = readdirSync(dir);
  assert.equal(files.length, 1);
  assert.match(files[0], /^vitest_fail-/);
  assert.equal(printed.length, 1);
  assert.ok(printed[0].includes(join(dir, files[0])), printed[0]);
  assert.ok(!(await emu.control.tenants()).some((x) => x.name === tenant.name), 'the tenant is deleted after');
});

test('the Snapshots guide\'s example runs', async (t) => {
  if (!supported) return t.skip('the emulator has no tenants');
  const readme = readFileSync(join(here, '..', '..', '..', 'docs', 'snapshots.md'), 'utf8');
  const [code] = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).filter((b) => b.includes('snapshotOnFailure'));
  assert.ok(code, 'docs/snapshots.md has the example');
  const tenant = fresh(t, 'readme-a');
  const other = fresh(t, 'readme-b');
  await tenant.control.setCredits(ACCOUNT, 4242);
  const AsyncFunction = (async () => {}).constructor;
  await new AsyncFunction('tenant', 'other', 'tenantFor', 't', 'emu', code)(tenant, other, tenantFor, t, emu);
  assert.equal((await other.control.balance(ACCOUNT)).available, 4242);
});
