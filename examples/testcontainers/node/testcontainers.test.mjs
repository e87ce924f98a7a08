// The emulator's image under Testcontainers for Node, with node:test and a tenant per test.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GenericContainer, Wait } from 'testcontainers';
import { attachEmulator, tenantFor } from '@mediagen/emulator-testing';

const IMAGE = process.env.MEDIAGEN_IMAGE ?? 'ghcr.io/mediagen/mediagen-emulator:latest';
const TOKEN = 'testcontainers-admin-token'; // the control API is off in a container without one

let container;
let emu;
before(async () => {
  container = await new GenericContainer(IMAGE)
    .withExposedPorts(8080)
    .withEnvironment({ MEDIAGEN_CLOCK: 'manual', MEDIAGEN_SEED: '42', MEDIAGEN_ADMIN_TOKEN: TOKEN })
    .withWaitStrategy(Wait.forLogMessage('listening on'))
    .start();
  emu = attachEmulator(`http://${container.getHost()}:${container.getMappedPort(8080)}`, { adminToken: TOKEN });
});
after(() => container?.stop());

test('a generation succeeds once the clock moves', async (t) => {
  const tenant = await tenantFor(t, emu);
  const post = (path, body) =>
    fetch(tenant.baseUrl + path, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': 'k1' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const input = { prompt: 'a red fox' };
  const quote = await post('/v1/quotes', { model: 'fal-ai/flux/dev', input });
  const job = await post('/v1/generate', { model: 'fal-ai/flux/dev', input, quote_id: quote.quote_id });
  assert.equal(job.status, 'queued');
  await tenant.control.advance('1m');
  const [entry] = await tenant.control.requests({ path: '/v1/generate' });
  assert.equal(entry.status, 202);
});
