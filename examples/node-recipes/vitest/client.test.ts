import { inject, test, type TestContext } from 'vitest';
import { attachEmulator, type Job, type Quote, type Tenant } from '@mediagen/emulator-testing';

const emu = attachEmulator(inject('mediagenUrl')); // the admin token, if any, from $MEDIAGEN_ADMIN_TOKEN

// A tenant of the test's own, deleted when the test ends. Under test.concurrent, take
// onTestFinished (and expect) from the test's context: the ones imported from 'vitest' belong
// to whichever test is current after an await, which is not always this one.
async function ownTenant({ task, onTestFinished, skip }: TestContext): Promise<Tenant> {
  if (!(await emu.supportsTenants())) skip('this emulator has no tenants');
  const tenant = emu.newTenant(task.name);
  onTestFinished(() => tenant.delete());
  return tenant;
}

for (const n of [1, 2, 3, 4, 5, 6]) {
  test.concurrent(`${7 - n} generations`, async (context) => {
    const { expect } = context;
    const tenant = await ownTenant(context);
    const api = async <T,>(path: string, body?: unknown, key = ''): Promise<T> => {
      const resp = await fetch(tenant.baseUrl + path, {
        method: body ? 'POST' : 'GET',
        headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await resp.json()) as T;
    };
    for (let i = 1; i <= 7 - n; i++) {
      const input = { prompt: `fox ${i}` };
      const quote = await api<Quote>('/v1/quotes', { model: 'fal-ai/flux/dev', input });
      const job = await api<Job>('/v1/generate', { model: 'fal-ai/flux/dev', input, quote_id: quote.quote_id }, `k${i}`);
      await tenant.control.advance('1m'); // this tenant's manual clock only
      expect((await api<Job>(`/v1/jobs/${job.id}`)).status).toBe('succeeded');
    }
    expect((await tenant.control.requests({ path: '/v1/generate' })).length).toBe(7 - n); // its own journal
  });
}
