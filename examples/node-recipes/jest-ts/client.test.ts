import { attachEmulator, type Job, type Quote, type Tenant } from '@mediagen/emulator-testing';

const emu = attachEmulator(); // $MEDIAGEN_EMULATOR_URL, set by the global setup
let tenant: Tenant;
beforeEach(() => {
  tenant = emu.newTenant(expect.getState().currentTestName); // a tenant per test
});
afterEach(() => tenant.delete());

async function api<T>(path: string, body?: unknown): Promise<T> {
  const resp = await fetch(tenant.baseUrl + path, {
    method: body ? 'POST' : 'GET',
    headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await resp.json()) as T;
}

test('a generation succeeds once the clock moves', async () => {
  const input = { prompt: 'a red fox' };
  const quote = await api<Quote>('/v1/quotes', { model: 'fal-ai/flux/dev', input });
  const job = await api<Job>('/v1/generate', { model: 'fal-ai/flux/dev', input, quote_id: quote.quote_id });
  expect(job.status).toBe('queued');
  await tenant.control.advance('1m'); // this tenant's clock
  expect((await api<Job>(`/v1/jobs/${job.id}`)).status).toBe('succeeded');
});
