// The webhook receiver against the real emulator: deliveries verify, a test awaits its job's
// event, a retry keeps its id, and verifyWebhook refuses what the specification refuses.

import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { WebhookVerificationError, emulatorFromEnv, newSecret, verifyWebhook, webhookReceiver } from '../index.js';
import { Client, imageModel, own } from './helpers.js';

let emu;

before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

describe('webhooks', () => {
  test('a receiver awaits the job\'s end, which carries the job as polled', async (t) => {
    const tenant = await own(t, emu);
    const client = new Client(tenant);
    const receiver = await webhookReceiver(tenant.control);
    t.after(() => receiver.close());
    const job = (await client.generate(await imageModel(tenant.baseUrl), { prompt: 'a lighthouse' }, 'hook-1')).json;
    await tenant.control.advance('10m');
    const d = await receiver.waitFor(job.id, 'job.succeeded');
    assert.equal(d.error, undefined);
    assert.match(d.id, /^msg_/);
    assert.deepEqual(d.event.data, (await client.request('GET', `/v1/jobs/${job.id}`)).json);
    assert.deepEqual((await tenant.control.webhookDeliveries()).map((a) => a.outcome), ['delivered']);
    const shown = await tenant.control.webhooks();
    assert.equal(shown.config.secret_set, true);
    assert.equal(shown.config.secret, undefined);
  });

  test('a refused delivery is retried with its id', async (t) => {
    const tenant = await own(t, emu);
    const client = new Client(tenant);
    const receiver = await webhookReceiver(tenant.control);
    t.after(() => receiver.close());
    let n = 0;
    receiver.answer = () => (++n === 1 ? 500 : 204);
    await client.generate(await imageModel(tenant.baseUrl), { prompt: 'a harbour' }, 'hook-2');
    await tenant.control.advance('10m');
    const [first, second] = receiver.deliveries;
    assert.equal(receiver.deliveries.length, 2);
    assert.equal(first.id, second.id);
    assert.equal(second.timestamp - first.timestamp, 5);
    assert.equal(second.status, 204);
    await tenant.control.deleteWebhook();
    assert.equal((await tenant.control.webhooks()).config, null);
  });

  test('verifyWebhook follows the specification', () => {
    const secret = newSecret();
    const key = Buffer.from(secret.slice(6), 'base64');
    const body = JSON.stringify({ type: 'job.succeeded' });
    const now = new Date('2026-01-01T00:00:00Z');
    const ts = String(now.getTime() / 1000);
    const sig = createHmac('sha256', key).update(`msg_1.${ts}.${body}`).digest('base64');
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': ts, 'webhook-signature': `v1,bad v1,${sig}` };
    assert.equal(verifyWebhook(secret, headers, body, now).type, 'job.succeeded');
    assert.equal(verifyWebhook(secret, new Headers(headers), Buffer.from(body), now).type, 'job.succeeded');
    for (const bad of [
      { ...headers, 'webhook-signature': `v1,${sig.split('').reverse().join('')}` },
      { ...headers, 'webhook-timestamp': String(Number(ts) - 301) },
      { ...headers, 'webhook-id': 'msg_2' },
      { 'webhook-id': 'msg_1' },
    ]) {
      assert.throws(() => verifyWebhook(secret, bad, body, now), WebhookVerificationError);
    }
  });
});
