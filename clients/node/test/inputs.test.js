// Media inputs from JavaScript: a tenant's upload() used as an image-to-image input whose
// outputs take its size, and a loopback URL refused before anything is held, against the real
// emulator started with --inputs fetch.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deflateSync } from 'node:zlib';

import { EmulatorError, startEmulator } from '../index.js';

const MODEL = 'fal-ai/flux/dev/image-to-image';
let emu;

before(async () => {
  emu = await startEmulator({ url: false, seed: 1, args: ['--inputs', 'fetch'] });
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

// png is a plain width×height PNG.
function png(width, height) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (kind, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(kind), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x80)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

async function post(tenant, path, body, key = 'k') {
  const resp = await fetch(tenant.baseUrl + path, {
    method: 'POST',
    headers: { Authorization: `Bearer ${tenant.apiKey}`, 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify(body),
  });
  return [resp.status, await resp.json()];
}

test('an upload sets the output size', async () => {
  const tenant = emu.newTenant('inputs');
  const up = await tenant.upload(png(640, 480));
  assert.equal(up.width, 640);
  assert.equal(up.height, 480);
  assert.equal(up.content_type, 'image/png');
  const input = { image_url: up.url, prompt: 'the same cat in snow', num_images: 2 };
  const [qs, quote] = await post(tenant, '/v1/quotes', { model: MODEL, input });
  assert.equal(qs, 200);
  const [gs, job] = await post(tenant, '/v1/generate?wait=true', { model: MODEL, input, quote_id: quote.quote_id }, 'cat-1');
  assert.equal(gs, 200);
  assert.equal(job.status, 'succeeded');
  assert.deepEqual(job.outputs.map((o) => [o.width, o.height]), [[640, 480], [640, 480]]);
});

test('a loopback URL is refused before anything is held', async () => {
  const tenant = emu.newTenant('loopback');
  const input = { image_url: 'http://127.0.0.1:5173/cat.png', prompt: 'a cat' };
  const [, quote] = await post(tenant, '/v1/quotes', { model: MODEL, input });
  const [status, problem] = await post(tenant, '/v1/generate', { model: MODEL, input, quote_id: quote.quote_id }, 'cat-2');
  assert.equal(status, 422);
  assert.equal(problem.code, 'input_url_refused');
  assert.equal(problem.errors[0].pointer, '/input/image_url');
  assert.equal((await tenant.control.balance('acct_all')).held, 0);
  await assert.rejects(tenant.upload(Buffer.from('not media'), 'text/plain'), (err) => err instanceof EmulatorError && err.status === 415);
});

test('the control API lists the uploads and a job\'s media inputs', async () => {
  const tenant = emu.newTenant('listed');
  const up = await tenant.upload(png(64, 48), 'image/png');
  const input = { image_url: up.url, prompt: 'a cat' };
  const [, quote] = await post(tenant, '/v1/quotes', { model: MODEL, input });
  const [, job] = await post(tenant, '/v1/generate', { model: MODEL, input, quote_id: quote.quote_id }, 'listed-1');
  const [listed, ...rest] = await tenant.control.uploads();
  assert.equal(rest.length, 0);
  assert.equal(listed.id, up.id);
  assert.deepEqual(listed.jobs, [job.id]);
  assert.deepEqual([listed.width, listed.height, listed.account], [64, 48, 'acct_all']);
  const { media_inputs: media } = await tenant.control.job(job.id);
  assert.deepEqual(media.map((m) => [m.member, m.source, m.upload, m.read, m.width, m.height]), [['image_url', 'upload', up.id, true, 64, 48]]);
});
