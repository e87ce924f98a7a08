import { afterEach, beforeEach, expect, test } from '@jest/globals';
import { attachEmulator } from '@mediagen/emulator-testing';

const emu = attachEmulator(); // $MEDIAGEN_EMULATOR_URL, set by the global setup
let tenant;
beforeEach(() => {
  tenant = emu.newTenant(expect.getState().currentTestName); // a tenant per test
});
afterEach(() => tenant.delete());

test('a generation succeeds once the clock moves', async () => {
  const api = (path, body) =>
    fetch(tenant.baseUrl + path, {
      method: body ? 'POST' : 'GET',
      headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' },
      body: body && JSON.stringify(body),
    }).then((r) => r.json());
  const input = { prompt: 'a red fox' };
  const quote = await api('/v1/quotes', { model: 'fal-ai/flux/dev', input });
  const job = await api('/v1/generate', { model: 'fal-ai/flux/dev', input, quote_id: quote.quote_id });
  expect(job.status).toBe('queued');
  await tenant.control.advance('1m'); // this tenant's clock
  expect((await api(`/v1/jobs/${job.id}`)).status).toBe('succeeded');
});
