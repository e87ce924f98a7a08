import { inject, test, type TestContext } from 'vitest';
import { attachEmulator, tenantFor, type Job, type Quote, type Tenant } from '@mediagen/emulator-testing';

const emu = attachEmulator(inject('mediagenUrl')); // the admin token, if any, from $MEDIAGEN_ADMIN_TOKEN

// A tenant of the test's own, deleted when the test ends; the test fails if its tenant answered
// an error it did not declare with expectError. tenantFor takes onTestFinished from the test's
// context: under test.concurrent the one imported from 'vitest' belongs to whichever test is
// current after an await, which is not always this one (take expect from the context too).
async function ownTenant(context: TestContext): Promise<Tenant> {
  if (!(await emu.supportsTenants())) context.skip('this emulator has no tenants');
  return tenantFor(context, emu, { failOnUnexpected: true });
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
      await tenant.control.advance('1m'); // this tenant's clock only
      expect((await api<Job>(`/v1/jobs/${job.id}`)).status).toBe('succeeded');
    }
    expect((await tenant.control.requests({ path: '/v1/generate' })).length).toBe(7 - n); // its own journal
  });
}
