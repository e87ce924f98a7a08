// explore(testFn, {runs, seed}): a client tested under plans the emulator draws, each run in a
// fresh tenant; the buggy client's failure shrunk, bundled and replayed; the careful one passing.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { ExploreFailure, emulatorFromEnv, explore } from '../index.js';

let emu;

before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  assert.ok([0, null].includes(await emu.close()), 'the emulator shut down cleanly');
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'expired']);

/** Waits what an answer's Retry-After asks (seconds, or a date measured from its Date), else a little. */
function pause(resp, attempt) {
  const value = resp?.headers.get('retry-after');
  let ms = 50 * 2 ** attempt;
  if (value && /^\d+$/.test(value)) ms = Number(value) * 1000;
  else if (value) ms = Date.parse(value) - Date.parse(resp.headers.get('date') ?? new Date().toUTCString());
  return sleep(Math.min(Math.max(ms, 0), 30_000));
}

/**
 * A small client of the service: quote, generate with wait=true, retry what may succeed later
 * with the same key (freshKeyOnRetry is the bug explore must find), download every output,
 * resuming a cut one and refreshing an expired link.
 */
async function render(tenant, { freshKeyOnRetry = false } = {}) {
  const call = async (method, path, body, key) => {
    for (let attempt = 0; attempt < 8; attempt++) {
      const headers = { Authorization: `Bearer ${tenant.apiKey}` };
      if (body) headers['Content-Type'] = 'application/json';
      if (key) headers['Idempotency-Key'] = key.value;
      let resp;
      try {
        resp = await fetch(tenant.baseUrl + path, { method, headers, body: body && JSON.stringify(body) });
        const text = await resp.text();
        if (resp.ok) return JSON.parse(text);
        if (resp.status !== 429 && resp.status < 500) throw Object.assign(new Error(`${path}: ${resp.status} ${text}`), { refused: JSON.parse(text).code });
      } catch (err) {
        if (err.refused) throw err; // a refusal, never sent again as it is
        // A dropped connection or a broken body: nothing says whether the service acted.
      }
      await pause(resp, attempt);
      if (key && freshKeyOnRetry) key.value = randomUUID(); // the bug
    }
    throw new Error(`${method} ${path}: no answer after 8 attempts`);
  };
  const model = 'fal-ai/flux/schnell';
  const input = { prompt: 'a red fox' };
  for (let quotes = 0; quotes < 3; quotes++) {
    const quote = await call('POST', '/v1/quotes', { model, input });
    const body = { model, input, quote_id: quote.quote_id };
    const key = { value: randomUUID() };
    let job;
    try {
      job = await call('POST', '/v1/generate?wait=true', body, key);
    } catch (err) {
      if (err.refused === 'quote_expired') continue; // nothing made: quote again, under a new key
      throw err;
    }
    while (!TERMINAL.has(job.status)) {
      await sleep(200); // a wait=true again is a wait, not a poll: the pause only avoids a busy loop
      job = await call('POST', '/v1/generate?wait=true', body, key);
    }
    if (job.status !== 'succeeded') throw new Error(`job ${job.id} ended ${job.status}`);
    for (let i = 0; i < job.outputs.length; i++) {
      let got = Buffer.alloc(0);
      for (let attempt = 0; got.length < job.outputs[i].size_bytes; attempt++) {
        if (attempt === 16) throw new Error(`output ${i} never came whole`);
        let resp;
        try {
          resp = await fetch(job.outputs[i].url, { headers: got.length ? { Range: `bytes=${got.length}-` } : {} });
          if (resp.status === 403) {
            job = await call('GET', `/v1/jobs/${job.id}`); // a fresh link
            continue;
          }
          if (resp.status === 416 && got.length) break;
          if (resp.status !== 200 && resp.status !== 206 && resp.status !== 429 && resp.status < 500) throw new Error(`output ${i}: ${resp.status}`);
          if (resp.ok) {
            const chunks = [];
            try {
              for await (const chunk of resp.body) chunks.push(chunk);
            } finally {
              const part = Buffer.concat(chunks);
              got = resp.status === 206 ? Buffer.concat([got, part]) : part;
            }
            continue;
          }
        } catch (err) {
          if (/^output/.test(err.message)) throw err;
        }
        await pause(resp, attempt);
      }
    }
    return;
  }
  throw new Error('every quote expired');
}

test('explore finds the client that retries with a fresh key, shrinks the plan and writes a bundle that replays it', async () => {
  const out = mkdtempSync(join(tmpdir(), 'mediagen-explore-test-'));
  const buggy = explore((tenant) => render(tenant, { freshKeyOnRetry: true }), { runs: 30, seed: 7, emulator: emu, out, name: 'buggy', plan: '' });
  const err = await buggy().then(
    () => undefined,
    (e) => e,
  );
  assert.ok(err instanceof ExploreFailure, `explore passed the buggy client: ${err}`);
  assert.match(err.message, /new-key-on-retry/);
  assert.match(err.message, /POST \/v1\/generate/);
  assert.equal(err.path, join(out, 'buggy-seed7.json'));
  assert.ok(existsSync(err.path));
  const bundle = JSON.parse(readFileSync(err.path, 'utf8'));
  assert.equal(bundle.format, 'mediagen-explore-bundle/1');
  assert.equal(bundle.seed, 7);
  assert.ok(bundle.verdict.failed);
  assert.ok(bundle.plan.perturbations.length >= 1 && bundle.plan.perturbations.length <= 2, JSON.stringify(bundle.plan));
  assert.ok(err.found.smallest.plan.perturbations.length <= err.found.first.plan.perturbations.length);

  // The bundle replays: the buggy client fails again under its plan, the careful one passes.
  const again = await explore((tenant) => render(tenant, { freshKeyOnRetry: true }), { emulator: emu, plan: err.path })().then(
    () => undefined,
    (e) => e,
  );
  assert.ok(again instanceof ExploreFailure && /new-key-on-retry/.test(again.message), `the replay: ${again}`);
  await explore((tenant) => render(tenant), { emulator: emu, plan: err.path })();
});

test('the careful client passes every run', async () => {
  const runs = [];
  await explore(
    async (tenant, run) => {
      runs.push([run.run, tenant.name]);
      await render(tenant);
    },
    { runs: 12, seed: 7, emulator: emu, plan: '' },
  )();
  assert.deepEqual(
    runs.map(([n]) => n),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
  );
  assert.equal(new Set(runs.map(([, name]) => name)).size, 12, 'a fresh tenant for each run');
});
