// Tenants keep tests apart on one emulator: concurrent tests, each moving its own clock, adding
// its own faults, spending its own credits, resetting, and seeing only what it did itself.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { DEFAULT_KEY, EmulatorError, emulatorFromEnv, tenantFor } from '../index.js';
import { Client, imageModel } from './helpers.js';

const ACCOUNT = 'acct_all';
let emu;
let supported = false;

before(async () => {
  emu = await emulatorFromEnv();
  supported = await emu.supportsTenants();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

/** A barrier for `n` parties: each awaits arrive() until all have arrived. */
function barrier(n) {
  let release;
  const all = new Promise((resolve) => (release = resolve));
  let count = 0;
  return () => {
    if (++count === n) release();
    return all;
  };
}

/** One test's worth of work in `tenant`; `i` makes this copy's numbers differ from the others'. */
async function exercise(tenant, i, arrive) {
  const client = new Client(tenant, { byHeader: i % 2 === 1 });
  const { control } = tenant;
  await control.setClockMode('manual'); // the wait=true below waits until this test moves the clock
  const model = await imageModel(tenant.baseUrl);
  const start = await control.now();
  const credits = 500_000 + i;
  await control.setCredits(ACCOUNT, credits);
  const fault = await control.addFault({ match: { path: '/v1/models/categories' }, status: 503, count: 1 });
  await arrive?.();

  await control.advance(`${i + 1}m`);
  assert.equal((await control.now()) - start, (i + 1) * 60_000);

  assert.deepEqual((await control.faults()).filter((f) => f.source === 'api').map((f) => f.id), [fault.id]);
  assert.equal((await client.request('GET', '/v1/models/categories')).status, 503);
  assert.equal((await client.request('GET', '/v1/models/categories')).status, 200);

  const mine = new Set();
  let spent = 0;
  for (let n = 0; n <= i % 3; n++) {
    const resp = await client.generate(model, { prompt: `copy ${i}, picture ${n}` }, `order-${n}`);
    assert.equal(resp.status, 202, resp.text);
    assert.equal(resp.headers.get('idempotent-replayed'), null);
    mine.add(resp.json.id);
    spent += resp.json.credits;
  }
  const last = await client.generate(model, { prompt: `copy ${i} waits` }, 'order-wait');
  mine.add(last.json.id);
  spent += last.json.credits;
  const waiting = client.generate(model, { prompt: `copy ${i} waits` }, 'order-wait', { quoteId: last.json.quote_id, wait: true });
  try {
    await control.waitForWaiting(1, { timeoutMs: 30_000 });
  } finally {
    await control.advance('1m');
  }
  const waited = await waiting;
  assert.equal(waited.status, 200);
  assert.equal(waited.json.status, 'succeeded');

  const listed = (await client.request('GET', '/v1/jobs?limit=500')).json;
  assert.deepEqual(new Set(listed.data.map((j) => j.id)), mine);
  assert.equal(listed.total, mine.size);
  assert.deepEqual(await control.balance(ACCOUNT), { account: ACCOUNT, available: credits - spent, held: 0, charged: spent, refunded: 0 });
  const journal = await control.requests();
  assert.equal(journal.length, client.sent);
  assert.deepEqual(new Set(journal.filter((e) => e.job_id).map((e) => e.job_id)), mine);

  await control.reset();
  assert.deepEqual(await control.now(), start);
  assert.deepEqual((await client.request('GET', '/v1/jobs')).json.data, []);
  assert.deepEqual(await control.balance(ACCOUNT), { account: ACCOUNT, available: 1_000_000, held: 0, charged: 0, refunded: 0 });
  assert.deepEqual((await control.faults()).filter((f) => f.source === 'api'), []);
  assert.deepEqual(await control.requests({ path: '/v1/generate' }), []);
}

describe('tenants', () => {
  const copies = 8;
  const arrive = barrier(copies);
  describe('concurrent tests, one tenant each', { concurrency: true }, () => {
    for (let i = 0; i < copies; i++) {
      test(`copy ${i}`, { timeout: 120_000 }, async (t) => {
        if (!supported) return t.skip('the emulator does not answer GET /_emulator/tenants: it has no tenants yet');
        // All copies reach the barrier before any moves on, so they surely overlap.
        await exercise(await tenantFor(t, emu), i, arrive);
      });
    }
  });

  test('a tenant is chosen by key form or header', async (t) => {
    if (!supported) return t.skip('no tenants');
    const tenant = await tenantFor(t, emu);
    const byKey = new Client(tenant);
    const byHeader = new Client(tenant, { byHeader: true });
    const job = (await byKey.generate(await imageModel(tenant.baseUrl), { prompt: 'seen from both sides' }, 'k1')).json;
    assert.equal((await byHeader.request('GET', `/v1/jobs/${job.id}`)).status, 200);
    const plain = new Client({ baseUrl: tenant.baseUrl, apiKey: DEFAULT_KEY, headers: {} });
    assert.equal((await plain.request('GET', `/v1/jobs/${job.id}`)).status, 404);
    const bad = await plain.request('GET', '/v1/models', { headers: { 'X-Emulator-Tenant': 'no spaces' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, 'invalid_tenant');
    const clash = await byKey.request('GET', '/v1/models', { headers: { 'X-Emulator-Tenant': 'someone-else' } });
    assert.equal(clash.json.code, 'invalid_tenant');
    assert.equal(tenant.key('mg_test_poor'), `mg_test_poor.${tenant.name}`);
  });

  test('listing and deleting tenants', async (t) => {
    if (!supported) return t.skip('no tenants');
    const tenant = emu.newTenant('listed');
    await new Client(tenant).generate(await imageModel(tenant.baseUrl), { prompt: 'one job' }, 'only');
    const info = (await emu.control.tenants()).find((x) => x.name === tenant.name);
    assert.equal(info.jobs, 1);
    assert.equal(info.clock.mode, (await emu.control.health()).clock);
    await tenant.delete({ missingOk: false });
    assert.ok(!(await emu.control.tenants()).some((x) => x.name === tenant.name));
    await assert.rejects(emu.control.deleteTenant(tenant.name), (err) => err instanceof EmulatorError && err.code === 'tenant_not_found');
    await tenant.delete(); // missingOk by default
    await assert.rejects(emu.control.deleteTenant('default'), (err) => err.status === 409);
  });

  test('tenantFor deletes its tenant when the test ends', async (t) => {
    if (!supported) return t.skip('no tenants');
    let name;
    await t.test('inner', async (inner) => {
      const tenant = await tenantFor(inner, emu);
      name = tenant.name;
      assert.ok(name.startsWith('inner-'));
      await tenant.control.advance('1s');
      assert.ok((await emu.control.tenants()).some((x) => x.name === name));
    });
    assert.ok(!(await emu.control.tenants()).some((x) => x.name === name));
  });
});
