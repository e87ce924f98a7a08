// The control client against the real emulator, each test in a world of its own.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { EmulatorError, EmulatorTimeoutError, emulatorFromEnv } from '../index.js';
import { Client, imageModel, own } from './helpers.js';

const ACCOUNT = 'acct_all';
let emu;

before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

describe('control', () => {
  test('health', async (t) => {
    const { control } = await own(t, emu);
    const h = await control.health();
    assert.equal(h.status, 'ok');
    assert.equal(h.clock, 'skip');
    assert.ok(h.models > 0);
  });

  test('the clock moves only when told', async (t) => {
    const { control } = await own(t, emu);
    assert.equal((await control.clock()).mode, 'skip');
    assert.equal((await control.setClockMode('manual')).mode, 'manual');
    const start = await control.now();
    assert.equal((await control.clock()).mode, 'manual');
    await control.advance('90s');
    await control.advance(60_000);
    await control.advance(2500);
    assert.equal((await control.now()) - start, 152_500);
    await control.setTime(new Date(start.getTime() + 3_600_000));
    assert.equal((await control.now()).getTime(), start.getTime() + 3_600_000);
    await assert.rejects(control.setTime(start), (err) => err instanceof EmulatorError && err.code === 'invalid_clock_change');
    assert.throws(() => control.advance(Number.NaN), TypeError);
  });

  test('forcing a job to complete or fail', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    const client = new Client(tenant);
    const model = await imageModel(tenant.baseUrl);
    const before = await control.balance(ACCOUNT);
    const ok = await client.generate(model, { prompt: 'a lighthouse' }, 'complete-me');
    assert.equal(ok.status, 202);
    const done = await control.completeJob(ok.json.id);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.credit_status, 'charged');
    assert.ok(done.outputs.length > 0);

    const bad = await client.generate(model, { prompt: 'a harbour' }, 'fail-me');
    const failed = await control.failJob(bad.json.id, { code: 'provider_timeout', message: 'too long' });
    assert.equal(failed.status, 'failed');
    assert.deepEqual(failed.error, { code: 'provider_timeout', message: 'too long' });
    assert.equal(failed.credit_status, 'refunded');
    const after = await control.balance(ACCOUNT);
    assert.equal(after.charged - before.charged, done.credits);
    assert.equal(after.held, 0);
    await assert.rejects(control.completeJob(failed.id), (err) => err.status === 409);
    await assert.rejects(control.failJob('00000000-0000-0000-0000-000000000000'), (err) => err.code === 'job_not_found');
  });

  test('wait for a wait=true generation, then move the clock', async (t) => {
    const tenant = await own(t, emu);
    await tenant.control.setClockMode('manual'); // so the wait=true waits until the test moves time
    const client = new Client(tenant);
    const model = await imageModel(tenant.baseUrl);
    const first = await client.generate(model, { prompt: 'a red fox' }, 'order-1');
    assert.equal(first.status, 202);
    const waiting = client.generate(model, { prompt: 'a red fox' }, 'order-1', { quoteId: first.json.quote_id, wait: true });
    try {
      assert.ok((await tenant.control.waitForWaiting(1, { timeoutMs: 30_000 })) >= 1);
    } finally {
      await tenant.control.advance('1m');
    }
    const resp = await waiting;
    assert.equal(resp.status, 200);
    assert.equal(resp.json.id, first.json.id);
    assert.equal(resp.json.status, 'succeeded');
  });

  test('waiting for nobody times out', async (t) => {
    const { control } = await own(t, emu);
    await assert.rejects(control.waitForWaiting(1, { timeoutMs: 200 }), /the tenant's clock skips/);
    await control.setClockMode('manual');
    await assert.rejects(control.waitForWaiting(1, { timeoutMs: 200 }), EmulatorTimeoutError);
  });

  test('on the skipping clock a wait=true answers at once and polls see the job move on', async (t) => {
    const tenant = await own(t, emu);
    const client = new Client(tenant);
    const model = await imageModel(tenant.baseUrl);
    let began = performance.now();
    const done = await client.generate(model, { prompt: 'a red fox' }, 'skip-wait', { wait: true });
    const waited = performance.now() - began;
    assert.equal(done.status, 200);
    assert.equal(done.json.status, 'succeeded');
    assert.ok(Date.parse(done.json.finished_at) > Date.parse(done.json.started_at));

    let job = (await client.generate(model, { prompt: 'a grey wolf' }, 'skip-poll')).json;
    let polls = 0;
    began = performance.now();
    while (job.status === 'queued' || job.status === 'running') {
      await new Promise((r) => setTimeout(r, 50)); // the client's own pace, not a wait for the emulator
      job = (await client.request('GET', `/v1/jobs/${job.id}`)).json;
      polls++;
    }
    const polled = performance.now() - began;
    assert.deepEqual([job.status, polls], ['succeeded', 2]);
    assert.ok(waited < 5000 && polled < 5000, `wait=true ${waited} ms, polling ${polled} ms`); // generous bounds
    t.diagnostic(`wait=true answered in ${waited.toFixed(1)} ms; polling every 50 ms saw the end after ${polls} polls, ${polled.toFixed(1)} ms`);
  });

  test('faults', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    const client = new Client(tenant);
    const outage = await control.addFault({ match: { path: '/v1/models/categories' }, status: 503, count: 1, retry_after: 7 });
    assert.equal(outage.remaining, 1);
    const slow = await control.addFault({ match: { path: '/v1/jobs/**' }, delay: 2000 });
    assert.equal(slow.action, 'delay');
    assert.equal(slow.delay, '2s');
    const first = await client.request('GET', '/v1/models/categories');
    assert.equal(first.status, 503);
    assert.equal(first.headers.get('retry-after'), '7');
    assert.equal((await client.request('GET', '/v1/models/categories')).status, 200);
    assert.equal((await control.faults()).find((f) => f.id === outage.id).fired, 1);
    await control.deleteFault(slow.id);
    assert.ok(!(await control.faults()).some((f) => f.id === slow.id));
    await assert.rejects(control.deleteFault(slow.id), (err) => err.status === 404);
    await assert.rejects(control.addFault({ match: { path: '/v1/models' }, actoin: 'reset' }), (err) => err.problem.errors[0].message.includes('actoin'));
    await control.clearFaults();
    assert.deepEqual((await control.faults()).filter((f) => f.source === 'api'), []);
  });

  test('scenario by name and inline', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    assert.equal((await control.scenario()).name, 'default');
    assert.equal((await control.setScenario('flaky')).name, 'flaky');
    const inline = await control.setScenario({ name: 'blackout', faults: [{ match: { path: '/v1/models' }, status: 503 }] });
    assert.equal(inline.faults, 1);
    assert.equal((await new Client(tenant).request('GET', '/v1/models')).status, 503);
    await control.clearFaults({ includeScenario: true });
    assert.equal((await new Client(tenant).request('GET', '/v1/models')).status, 200);
    await assert.rejects(control.setScenario('no-such-scenario'), (err) => err.status === 404);
    assert.throws(() => control.setScenario(), TypeError);
  });

  test('accounts and credits', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    assert.ok((await control.accounts()).some((b) => b.account === ACCOUNT));
    assert.deepEqual(await control.setCredits(ACCOUNT, 0), { account: ACCOUNT, available: 0, held: 0, charged: 0, refunded: 0 });
    const resp = await new Client(tenant).generate(await imageModel(tenant.baseUrl), { prompt: 'a red fox' }, 'broke');
    assert.equal(resp.status, 402);
    await assert.rejects(control.setCredits('acct_nobody', 5), (err) => err.status === 404);
    await assert.rejects(control.balance('acct_nobody'), /no account/);
  });

  test('journal', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    const client = new Client(tenant);
    await control.clearRequests();
    await client.generate(await imageModel(tenant.baseUrl), { prompt: 'a red fox' }, 'journal-1');
    await client.request('GET', '/v1/models/nope/nope');
    const generated = await control.requests({ path: '/v1/generate' });
    assert.deepEqual(generated.map((e) => [e.method, e.status, e.idempotency_key]), [['POST', 202, 'journal-1']]);
    assert.deepEqual((await control.requests({ status: 404 })).map((e) => e.path), ['/v1/models/nope/nope']);
    assert.equal((await control.requests()).length, client.sent);
    assert.equal((await control.requests({ limit: 1 })).length, 1);
    await control.clearRequests();
    assert.deepEqual(await control.requests(), []);
  });

  test('reset puts everything back', async (t) => {
    const tenant = await own(t, emu);
    const { control } = tenant;
    const start = await control.now();
    await control.setCredits(ACCOUNT, 5);
    await control.setScenario('slow');
    await control.addFault({ match: { path: '/v1/models' }, status: 500 });
    await control.advance('1h');
    await control.reset();
    assert.deepEqual(await control.now(), start);
    assert.equal((await control.balance(ACCOUNT)).available, 1_000_000);
    assert.equal((await control.scenario()).name, 'default');
    assert.deepEqual((await control.faults()).filter((f) => f.source === 'api'), []);
    assert.equal((await new Client(tenant).request('GET', '/v1/models')).status, 200);
  });
});
