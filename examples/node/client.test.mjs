// A client test suite against mediagen-emulator with Node's test runner and
// @mediagen/emulator-testing (imported here from the checkout; in your project,
// `npm install ./clients/node` and import '@mediagen/emulator-testing').
//
// One emulator for the file (or the one at $MEDIAGEN_EMULATOR_URL); each test gets a tenant of
// its own, so the tests run concurrently without seeing each other's jobs, balances or clocks.
// The tiny `client` below stands in for your client library.
//
// The clock skips: time stands still, but a request that waits on a job (wait=true, a poll of a
// job not yet terminal) moves it to the job's next transition at once, so a wait=true answers
// the finished job in milliseconds. A test that looks at a job while it is queued or running
// asks for the manual clock: tenantFor(t, emu, { clock: 'manual' }).
//
//   MEDIAGEN_EMULATOR_BIN=./mediagen-emulator node --test examples/node/client.test.mjs

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { emulatorFromEnv, tenantFor } from '../../clients/node/index.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
let emu;

before(async () => {
  emu = await emulatorFromEnv(); // a skipping clock by default
});
after(() => emu.close());

/** The client under test: base URL and key, as it would take for the hosted service. */
function client({ baseUrl, apiKey }) {
  const call = async (method, path, body, headers = {}) => {
    const resp = await fetch(path.startsWith('http') ? path : baseUrl + path, {
      method,
      headers: { Authorization: `Bearer ${apiKey}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const bytes = Buffer.from(await resp.arrayBuffer());
    const json = resp.headers.get('content-type')?.includes('json') ? JSON.parse(bytes) : undefined;
    return { status: resp.status, headers: resp.headers, bytes, json };
  };
  return {
    call,
    async generate(model, input, key, { wait = false, headers = {} } = {}) {
      const quote = (await call('POST', '/v1/quotes', { model, input })).json;
      return call('POST', `/v1/generate${wait ? '?wait=true' : ''}`, { model, input, quote_id: quote.quote_id }, { 'Idempotency-Key': key, ...headers });
    },
  };
}

/** A tenant of the test's own, a client using it, and the first text-to-image model. */
async function setup(t, options) {
  const tenant = await tenantFor(t, emu, options); // deleted when the test ends
  const c = client(tenant); // the key form mg_test_all.<tenant> chooses the tenant
  const model = (await c.call('GET', '/v1/models?category=text-to-image&limit=1')).json.data[0].id;
  return { tenant, c, model, control: tenant.control };
}

describe('a Media Generation Service client', { concurrency: true }, () => {
  test('quotes, generates and downloads a PNG', async (t) => {
    const { c, model, control } = await setup(t);
    const job = await c.generate(model, { prompt: 'a red fox', output_format: 'png' }, 'order-1', { wait: true });
    assert.equal(job.status, 200); // the skipping clock: the wait=true answers the finished job at once
    const done = job.json;
    assert.deepEqual([done.status, done.credit_status], ['succeeded', 'charged']);

    const [output] = done.outputs;
    const file = await c.call('GET', output.url);
    assert.equal(file.headers.get('content-type'), 'image/png');
    assert.deepEqual(file.bytes.subarray(0, 8), PNG_SIGNATURE);
    assert.equal(file.bytes.length, output.size_bytes);
    assert.equal((await control.balance('acct_all')).charged, job.json.credits);
    assert.deepEqual((await control.report()).findings, []); // the client behaved as the service expects
  });

  test('wait=true with a manual clock', async (t) => {
    const { c, model, control } = await setup(t, { clock: 'manual' }); // the wait waits for the test
    const answer = c.generate(model, { prompt: 'a red fox' }, 'order-2', { wait: true });
    await control.waitForWaiting(1); // the generation now waits on its job...
    await control.advance('1m'); // ...so moving the clock finishes it
    const resp = await answer;
    assert.equal(resp.status, 200);
    assert.equal(resp.json.status, 'succeeded');
  });

  for (const [name, input, headers] of [
    ['the X-Emulator-Outcome header', { prompt: 'a red fox' }, { 'X-Emulator-Outcome': 'fail' }],
    ['an [emulator:fail] token', { prompt: 'a red fox [emulator:fail]' }, {}],
  ]) {
    test(`a failure forced by ${name} refunds the credits`, async (t) => {
      const { c, model, control } = await setup(t);
      const before = await control.balance('acct_all');
      const job = await c.generate(model, input, 'fail-1', { headers });
      await control.advance('1m');
      const failed = (await c.call('GET', `/v1/jobs/${job.json.id}`)).json;
      assert.deepEqual([failed.status, failed.error.code, failed.credit_status], ['failed', 'generation_failed', 'refunded']);
      const after = await control.balance('acct_all');
      assert.deepEqual([after.available, after.held, after.charged], [before.available, before.held, before.charged]);
      assert.equal(after.refunded - before.refunded, job.json.credits);
    });
  }

  test('a quote expires on the manual clock', async (t) => {
    const { c, model, control } = await setup(t);
    const input = { prompt: 'a red fox' };
    const quote = (await c.call('POST', '/v1/quotes', { model, input })).json;
    await control.advance('10m1s'); // quotes live 10 minutes
    const resp = await c.call('POST', '/v1/generate', { model, input, quote_id: quote.quote_id }, { 'Idempotency-Key': 'late' });
    assert.equal(resp.status, 422);
    assert.equal(resp.json.code, 'quote_expired');
  });

  test('surviving a fault', async (t) => {
    const { c, control } = await setup(t);
    await control.clearRequests(); // forget setup's own requests
    await control.addFault({ match: { path: '/v1/models' }, status: 503, count: 1 });
    assert.equal((await c.call('GET', '/v1/models')).status, 503); // your client would retry here
    assert.equal((await c.call('GET', '/v1/models')).status, 200);
    assert.deepEqual((await control.requests({ path: '/v1/models' })).map((e) => e.status), [503, 200]);
  });
});
