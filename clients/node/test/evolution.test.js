// The forward-compatibility mode (a scenario's `evolution`) against the helpers: /v1 answers
// carry an undocumented member in every object and an undocumented header, jobs pass through
// `preparing`, the catalog lists a `3d` model. A client that reads what it knows, and the helpers
// that read the journal, the verification, coverage and snapshots of such a tenant, go on working.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { emulatorFromEnv, tenantFor } from '../index.js';
import { Client, imageModel } from './helpers.js';

const EVOLVING = { name: 'evolving', evolution: true };
const DOCUMENTED_OUTPUTS = new Set(['image', 'video', 'audio']);
const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'expired']);
let emu;

before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

/** The undocumented members of an object. */
const members = (v) => Object.keys(v).filter((k) => k.startsWith('x_mg_'));

/** A tenant of the test's own with the mode on. */
async function evolving(t) {
  const tenant = await tenantFor(t, emu);
  const sc = await tenant.control.setScenario(EVOLVING);
  assert.deepEqual(sc.evolution, { members: true, headers: true, status: true, output_type: true });
  return tenant;
}

/** Polls a job until its status is terminal, as a forward-compatible client does: a status it
 * does not know means "not finished yet". Resolves with the statuses seen. */
async function poll(client, id) {
  const seen = [];
  while (!seen.length || !TERMINAL.has(seen.at(-1))) {
    const resp = await client.request('GET', `/v1/jobs/${id}`);
    assert.equal(resp.status, 200, resp.text);
    seen.push(resp.json.status);
    assert.ok(seen.length < 20, seen.join(' '));
  }
  return seen;
}

test('a flow in the evolution mode', async (t) => {
  const tenant = await evolving(t);
  const { control } = tenant;
  const client = new Client(tenant);
  assert.equal((await control.scenario()).evolution.output_type, true);

  const listing = await client.request('GET', '/v1/models?limit=500');
  assert.equal(listing.status, 200, listing.text);
  const [member, ...more] = members(listing.json);
  assert.ok(member && more.length === 0, listing.text.slice(0, 200));
  assert.ok([...listing.headers.keys()].some((h) => h.startsWith('x-mediagen-')));
  assert.ok(listing.json.data.every((m) => member in m));
  const odd = listing.json.data.filter((m) => !DOCUMENTED_OUTPUTS.has(m.output_type));
  assert.deepEqual(odd.map((m) => m.output_type), ['3d']);
  const refused = await client.request('POST', '/v1/quotes', { body: { model: odd[0].id, input: { prompt: 'a teapot' } } });
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.json.code, 'model_unavailable');
  assert.ok(member in refused.json);

  const model = await imageModel(tenant.baseUrl);
  const created = await client.generate(model, { prompt: 'a lighthouse' }, 'evolve-1');
  assert.equal(created.status, 202, created.text);
  assert.ok(member in created.json);
  assert.deepEqual(created.json.input, { prompt: 'a lighthouse' });
  const seen = await poll(client, created.json.id);
  assert.ok(seen.includes('preparing') && seen.at(-1) === 'succeeded', seen.join(' '));
  const waited = await client.generate(model, { prompt: 'a harbour' }, 'evolve-2', { wait: true });
  assert.equal(waited.status, 200, waited.text);
  assert.equal(waited.json.status, 'succeeded');
  assert.ok(waited.json.outputs.every((o) => member in o));

  // The helpers read the tenant's evidence as they would without the mode.
  const polls = await control.requests({ path: '/v1/jobs/*' });
  assert.equal(polls.length, seen.length);
  assert.ok(polls.every((e) => e.status === 200));
  assert.equal((await control.verify({ method: 'GET', path: '/v1/jobs/*' })).count, seen.length);
  assert.ok((await control.unexpectedErrors())[0].detail.startsWith(`model "${odd[0].id}"`));
  await control.expectError({ status: 409, code: 'model_unavailable' });
  await control.assertNoUnexpected();
  assert.deepEqual((await control.coverage({ require: ['evolution *'] })).required_missing, []);
});

test('the mode survives a snapshot', async (t) => {
  if (!(await emu.supportsTenants())) return t.skip('the emulator has no tenants');
  const a = await evolving(t);
  const b = emu.newTenant('evolved-copy');
  t.after(() => b.delete());
  const job = await new Client(a).generate(await imageModel(a.baseUrl), { prompt: 'a kite' }, 'evolve-snap', { wait: true });
  assert.equal(job.status, 200, job.text);
  await b.control.restore(await a.control.snapshot());
  assert.equal((await b.control.scenario()).evolution.members, true);
  const original = (await new Client(a).request('GET', `/v1/jobs/${job.json.id}`)).json;
  const restored = (await new Client(b).request('GET', `/v1/jobs/${job.json.id}`)).json;
  assert.deepEqual(members(restored), members(original));
  assert.equal(members(restored).length, 1);
  assert.equal(restored[members(restored)[0]], original[members(original)[0]]);
});
