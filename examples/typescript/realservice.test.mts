// What real services do beyond the contract, met by both clients: a partial result, a prompt the
// content policy refuses (asked for twice) and a deprecated model (asked for twice). The report
// names the sloppy client's retry-unchanged and deprecated-model-used; the careful client gets a
// clean report.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { type Emulator, type Tenant, emulatorFromEnv, tenantFor } from '@mediagen/emulator-testing';

import { CarefulClient } from './careful-client.mjs';
import { ApiError, type ClientOptions } from './http.mjs';
import { SloppyClient } from './sloppy-client.mjs';

// FLUX.1 [schnell] deprecated long ago, FLUX.1 [dev] its successor.
const RETIRING = {
  name: 'real-service',
  lifecycle: [{ match: { model: 'fal-ai/flux/schnell' }, deprecated_at: '2000-01-01T00:00:00Z', replacement: 'fal-ai/flux/dev' }],
};

let emu: Emulator;
before(async () => {
  emu = await emulatorFromEnv({ seed: 42 });
});
after(() => emu.close());

function options(tenant: Tenant): ClientOptions {
  return { baseUrl: tenant.baseUrl, apiKey: tenant.apiKey, sleep: (ms) => tenant.control.advance(ms) };
}

/** Plays the story; resolves with the models that made the two renders of the deprecated one
 * (or the code of a render that failed). */
async function story(tenant: Tenant, client: SloppyClient | CarefulClient): Promise<string[]> {
  await tenant.control.setScenario(RETIRING);
  await tenant.control.expectError({ status: 422, code: 'content_policy_violation' }); // the refusals are the test's own doing
  const partial = await client.render('fal-ai/flux/dev', { prompt: 'four foxes [emulator:partial]', num_images: 4 });
  assert.ok((partial.job.filtered_outputs ?? 0) >= 1 && partial.job.outputs.length + partial.job.filtered_outputs! === 4);
  for (let i = 0; i < 2; i++) {
    await assert.rejects(client.render('fal-ai/flux/dev', { prompt: 'a fox [emulator:refuse]' }),
      (err) => err instanceof ApiError && err.status === 422 && err.code === 'content_policy_violation');
  }
  const models: string[] = [];
  for (let i = 0; i < 2; i++) {
    try {
      models.push((await client.render('fal-ai/flux/schnell', { prompt: 'a lighthouse at dawn' })).job.model);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      models.push(err.code); // the sloppy client's cached quote, used again
    }
  }
  await tenant.control.advance('2h');
  return models;
}

describe('refusals, partial results and deprecation', { concurrency: true }, () => {
  test('the sloppy client: the report names retry-unchanged and deprecated-model-used', async (t) => {
    const tenant = await tenantFor(t, emu);
    assert.deepEqual(await story(tenant, new SloppyClient(options(tenant))), ['fal-ai/flux/schnell', 'quote_already_used']);
    const fired = new Set((await tenant.control.report()).findings.map((f) => f.rule));
    for (const rule of ['retry-unchanged', 'deprecated-model-used'] as const) {
      assert.ok(fired.has(rule), `the report names ${rule}; it has: ${[...fired].join(', ')}`);
    }
  });

  test('the careful client: a clean report', async (t) => {
    const tenant = await tenantFor(t, emu, { failOnUnexpected: true });
    assert.deepEqual(await story(tenant, new CarefulClient(options(tenant))), ['fal-ai/flux/dev', 'fal-ai/flux/dev']);
    const report = await tenant.control.report();
    assert.deepEqual(report.findings, [], JSON.stringify(report.findings, null, 2));
    await tenant.control.assertRequested({ method: 'POST', path: '/v1/generate', status: 422 }, { times: 1 }); // the second refusal never left
  });
});
