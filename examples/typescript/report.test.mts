// Both clients against mediagen-emulator, through the same story: the first generation meets a
// 503 with Retry-After (a fault), jobs run on the manual clock (each client sleeps by moving it)
// and are forced to succeed (an outcome token in the prompt), the same picture is asked for
// twice, a price is shown and the
// picture rendered eleven minutes later, and then two hours pass. The emulator's report names
// each flaw of the sloppy client by its rule id, and has nothing to say about the careful one.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type Emulator, type Tenant, emulatorFromEnv, tenantFor } from '@mediagen/emulator-testing';

import { CarefulClient } from './careful-client.mjs';
import { ApiError, type ClientOptions, type Render } from './http.mjs';
import { SloppyClient } from './sloppy-client.mjs';

/** The careful client, its first download reached only after the output's signed link has
 * expired, as a consumer that takes its time would find it. */
class SlowConsumer extends CarefulClient {
  late = true;

  constructor(private readonly tenant: Tenant) {
    super(options(tenant));
  }

  protected override async download(url: string): Promise<Buffer> {
    if (this.late) {
      this.late = false;
      await this.tenant.control.advance('2m'); // past the scenario's one-minute links
    }
    return super.download(url);
  }
}

const MODEL = 'fal-ai/flux/schnell';
const FOX = { prompt: 'a red fox [emulator:succeed]' };
const BOAT = { prompt: 'a boat at dusk [emulator:succeed]' };

let emu: Emulator;
before(async () => {
  emu = await emulatorFromEnv({ seed: 42 }); // each test's tenant on the manual clock (tenantFor's clock)
});
after(() => emu.close());

/** What a client is given: the tenant's URL and key, and a sleep that moves the tenant's clock. */
function options(tenant: Tenant): ClientOptions {
  return { baseUrl: tenant.baseUrl, apiKey: tenant.apiKey, sleep: (ms) => tenant.control.advance(ms) };
}

/** Plays the story; resolves with the problem code of each step that failed, in order, and how many files the client downloaded. */
async function story(tenant: Tenant, client: SloppyClient | CarefulClient): Promise<{ failed: string[]; files: number }> {
  const { control } = tenant;
  const failed: string[] = [];
  let files = 0;
  const step = async (run: () => Promise<unknown>) => {
    try {
      const got = await run();
      if (got && typeof got === 'object' && 'files' in got) files += (got as Render).files.length;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      failed.push(err.code);
    }
  };
  await control.addFault({ match: { method: 'POST', path: '/v1/generate' }, status: 503, retry_after: 5, count: 1 });
  await step(() => client.render(MODEL, FOX));
  await step(() => client.render(MODEL, FOX)); // the same picture again
  await step(() => client.quote(MODEL, BOAT)); // a price shown to the user…
  await control.advance('11m'); // …who takes eleven minutes to decide (quotes live ten)
  await step(() => client.render(MODEL, BOAT));
  await control.advance('2h'); // outputs live an hour
  return { failed, files };
}

describe('the emulator judges the clients', { concurrency: true }, () => {
  test('the sloppy client: the report names each flaw', async (t) => {
    const tenant = await tenantFor(t, emu, { clock: 'manual' });
    const { failed, files } = await story(tenant, new SloppyClient(options(tenant)));
    assert.deepEqual(failed, ['quote_already_used', 'quote_expired']); // what its users would see
    assert.equal(files, 0);

    const report = await tenant.control.report();
    const fired = new Set(report.findings.map((f) => f.rule));
    for (const rule of ['new-key-on-retry', 'retry-after-ignored', 'poll-too-fast', 'quote-reused', 'expired-quote', 'outputs-never-downloaded'] as const) {
      assert.ok(fired.has(rule), `the report names ${rule}; it has: ${[...fired].join(', ')}`);
    }
    // The journal shows the double send: two keys for one quote.
    const sent = await tenant.control.requests({ method: 'POST', path: '/v1/generate' });
    assert.ok(new Set(sent.slice(0, 2).map((e) => e.idempotency_key)).size === 2);
    // The 503 was the test's own doing; the 409 and the 422 are the client's.
    await tenant.control.expectError({ status: 503, code: 'service_unavailable' });
    const unexpected = await tenant.control.unexpectedErrors();
    assert.deepEqual(unexpected.map((u) => u.entry.code), ['quote_already_used', 'quote_expired']);
    await assert.rejects(tenant.control.assertNoUnexpected(), /quote_already_used[\s\S]*quote_expired/);
  });

  test('the careful client: a clean report', async (t) => {
    const tenant = await tenantFor(t, emu, { clock: 'manual', failOnUnexpected: true }); // the test fails on an error no expectError declared
    await tenant.control.expectError({ status: 503, code: 'service_unavailable' }); // the fault below
    const client = new CarefulClient(options(tenant));
    assert.deepEqual(await story(tenant, client), { failed: [], files: 3 });

    const report = await tenant.control.report();
    assert.deepEqual(report.findings, [], JSON.stringify(report.findings, null, 2));
    // The retry after the 503 sent the first attempt's key, once Retry-After had passed.
    const [refused, accepted] = await tenant.control.requests({ method: 'POST', path: '/v1/generate' });
    assert.equal(refused?.status, 503);
    await tenant.control.assertRequested({ method: 'POST', path: '/v1/generate', status: 202, headers: { 'Idempotency-Key': refused!.idempotency_key! } }, { times: 1 });
    assert.equal(accepted?.idempotency_key, refused?.idempotency_key);
    await tenant.control.assertRequested({ method: 'POST', path: '/v1/generate', status: 202 }, { times: 3 }); // one per picture
  });

  test('the careful client: an expired link is refreshed, not fetched again', async (t) => {
    const tenant = await tenantFor(t, emu, { clock: 'manual', failOnUnexpected: true });
    await tenant.control.setScenario({ name: 'signed-links', defaults: { download: { url_ttl: '1m', reject_authorization: true } } });
    const client = new SlowConsumer(tenant);
    const { job, files } = await client.render(MODEL, FOX);
    assert.equal(job.status, 'succeeded');
    assert.ok(files.length > 0 && files.every((f) => f.length > 0));
    assert.equal(client.late, false); // the link did expire before the first download

    const report = await tenant.control.report();
    assert.deepEqual(report.findings, [], JSON.stringify(report.findings, null, 2));
    const coverage = await tenant.control.coverage({ require: ['link expired', 'link refreshed'] });
    assert.deepEqual(coverage.required_missing, []);
  });

  test('the careful client waits in a concurrency queue, its place moving up', async (t) => {
    const tenant = await tenantFor(t, emu, { clock: 'manual', failOnUnexpected: true });
    await tenant.control.setScenario({ name: 'one-at-a-time', defaults: { run: '1m' }, concurrency: [{ limit: 1 }] });
    const busy = new CarefulClient(options(tenant)); // another part of the program fills the line
    await busy.generate(MODEL, { prompt: 'a first job' });
    await busy.generate(MODEL, { prompt: 'a second job' });
    const client = new CarefulClient(options(tenant));
    const positions: number[] = [];
    client.onQueued = (_job, position) => positions.push(position);
    const { job, files } = await client.render(MODEL, FOX);
    assert.equal(job.status, 'succeeded');
    assert.ok(files.length > 0);
    assert.deepEqual(positions, [2, 1]);
    const report = await tenant.control.report();
    assert.deepEqual(report.findings, [], JSON.stringify(report.findings, null, 2));
    const coverage = await tenant.control.coverage({ require: ['queued behind a concurrency limit'] });
    assert.deepEqual(coverage.required_missing, []);
  });

  test('past a limit that refuses, the careful client waits out Retry-After; the sloppy one does not', async (t) => {
    const scenario = { name: 'one-or-429', defaults: { run: '1m' }, concurrency: [{ limit: 1, over: 'reject' }] };
    const tenant = await tenantFor(t, emu, { clock: 'manual', failOnUnexpected: true });
    await tenant.control.setScenario(scenario);
    await tenant.control.expectError({ status: 429, code: 'concurrency_limited' }); // the limit is the test's own doing
    await new CarefulClient(options(tenant)).generate(MODEL, { prompt: 'a first job' });
    const { job } = await new CarefulClient(options(tenant)).render(MODEL, FOX);
    assert.equal(job.status, 'succeeded');
    // The 429 held nothing, so the same key sent again after Retry-After made the job.
    const [, refused, accepted] = await tenant.control.requests({ method: 'POST', path: '/v1/generate' });
    assert.equal(refused?.status, 429);
    assert.equal(accepted?.status, 202);
    assert.equal(accepted?.idempotency_key, refused?.idempotency_key);
    assert.deepEqual((await tenant.control.report()).findings, []);

    const sloppy = await tenantFor(t, emu, { clock: 'manual' });
    await sloppy.control.setScenario(scenario);
    await new CarefulClient(options(sloppy)).generate(MODEL, { prompt: 'a first job' });
    await assert.rejects(new SloppyClient(options(sloppy)).render(MODEL, FOX), (err) => err instanceof ApiError && err.code === 'concurrency_limited');
    const fired = new Set((await sloppy.control.report()).findings.map((f) => f.rule));
    assert.ok(fired.has('retry-after-ignored'), [...fired].join(', '));
  });
});
