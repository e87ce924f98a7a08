import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { emulatorFromEnv, tenantFor } from '@mediagen/emulator-testing';

let emu;
before(async () => (emu = await emulatorFromEnv())); // attach to $MEDIAGEN_EMULATOR_URL, or start one
after(() => emu.close());

describe('generations', { concurrency: 4 }, () => {
  for (const n of [1, 2, 3, 4]) {
    test(`generation ${n}`, async (t) => {
      const tenant = await tenantFor(t, emu); // a tenant of its own, deleted when the test ends
      const api = (path, body) =>
        fetch(tenant.baseUrl + path, {
          method: body ? 'POST' : 'GET',
          headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' },
          body: body && JSON.stringify(body),
        }).then((r) => r.json());
      const input = { prompt: `fox number ${n}` };
      const quote = await api('/v1/quotes', { model: 'fal-ai/flux/dev', input });
      const job = await api('/v1/generate', { model: 'fal-ai/flux/dev', input, quote_id: quote.quote_id });
      await tenant.control.advance('1m'); // this tenant's clock only
      assert.equal((await api(`/v1/jobs/${job.id}`)).status, 'succeeded');
    });
  }
});
