// Both clients edit an image against an emulator that fetches inputs as the hosted service does
// (--inputs fetch, an emulator of this file's own): the careful client uploads the image, reuses
// the upload, and gets outputs of the image's size with a clean report; behind a long job it
// meets an upload that expired in the queue and uploads again. The sloppy client sends a URL of
// its own machine: refused before anything is held, and the report names unreachable-input-url.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';

import { type Emulator, type Tenant, startEmulator } from '@mediagen/emulator-testing';

import { CarefulClient } from './careful-client.mjs';
import { ApiError, type ClientOptions } from './http.mjs';
import { SloppyClient } from './sloppy-client.mjs';

const MODEL = 'fal-ai/flux/dev/image-to-image';

let emu: Emulator;
before(async () => {
  emu = await startEmulator({ url: false, seed: 1, clock: 'manual', args: ['--inputs', 'fetch'] });
});
after(() => emu.close());

function options(tenant: Tenant): ClientOptions {
  return { baseUrl: tenant.baseUrl, apiKey: tenant.apiKey, sleep: (ms) => tenant.control.advance(ms) };
}

/** A plain width×height PNG. */
function png(width: number, height: number): Buffer {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = table[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (kind: string, data: Buffer) => {
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
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x60)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** A JPEG's (or a PNG's) [width, height], read from its bytes. */
function sizeOf(file: Buffer): [number, number] {
  if (file.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return [file.readUInt32BE(16), file.readUInt32BE(20)];
  for (let at = 2; at + 9 < file.length; at += 2 + file.readUInt16BE(at + 2)) {
    const marker = file[at + 1]!;
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) return [file.readUInt16BE(at + 7), file.readUInt16BE(at + 5)];
  }
  throw new Error('no frame in the JPEG');
}

describe('edits, with inputs fetched', { concurrency: true }, () => {
  test('the careful client uploads its image; the outputs have its size', async () => {
    const tenant = emu.newTenant('careful-edit');
    const client = new CarefulClient(options(tenant));
    const image = png(640, 480);
    const { job, files } = await client.edit(MODEL, image, { prompt: 'the same cat in snow', num_images: 2 });
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(job.outputs.map((o) => [o.width, o.height]), [[640, 480], [640, 480]]);
    assert.deepEqual(files.map(sizeOf), [[640, 480], [640, 480]]);
    await client.edit(MODEL, image, { prompt: 'the same cat at night' }); // the same file: its upload reused
    const [up, ...more] = await tenant.control.uploads();
    assert.equal(more.length, 0);
    assert.equal(up?.job_count, 2);
    const [media] = (await tenant.control.job(job.id)).media_inputs ?? [];
    assert.deepEqual([media?.source, media?.read, media?.width, media?.height], ['upload', true, 640, 480]);
    await tenant.control.assertRequested({ method: 'POST', path: '/v1/uploads' }, { times: 1 });
    const report = await tenant.control.report();
    assert.deepEqual(report.findings, [], JSON.stringify(report.findings, null, 2));
  });

  test('the careful client uploads again when its upload expired in the queue', async () => {
    const tenant = emu.newTenant('careful-late');
    await tenant.control.setScenario({ name: 'busy', inputs: { upload_ttl: '1m' }, concurrency: [{ limit: 1 }], defaults: { run: '90s', queue_timeout: '10m' } });
    const client = new CarefulClient(options(tenant));
    await client.generate('fal-ai/flux/dev', { prompt: 'a long job ahead' }); // holds the one slot for 90 s
    const { job, files } = await client.edit(MODEL, png(320, 200), { prompt: 'a cat' });
    assert.equal(job.status, 'succeeded');
    assert.deepEqual(files.map(sizeOf), [[320, 200]]);
    await tenant.control.assertRequested({ method: 'POST', path: '/v1/uploads' }, { times: 2 });
    assert.ok((await tenant.control.balance('acct_all')).refunded > 0, 'the expired job was refunded');
  });

  test('the sloppy client\'s localhost URL is refused and reported', async () => {
    const tenant = emu.newTenant('sloppy-edit');
    const client = new SloppyClient(options(tenant));
    await assert.rejects(client.edit(MODEL, { prompt: 'the same cat in snow' }),
      (err) => err instanceof ApiError && err.status === 422 && err.code === 'input_url_refused' && (err.problem.errors as { pointer: string }[])[0]?.pointer === '/input/image_url');
    assert.equal((await tenant.control.balance('acct_all')).held, 0); // refused before anything was held
    const report = await tenant.control.report();
    assert.ok(report.findings.some((f) => f.rule === 'unreachable-input-url'), JSON.stringify(report.findings));
  });
});
