// The TypeScript adapter against mediagen-emulator, run as `mediagen-emulator conformance` and
// `explore` run it: a command with MEDIAGEN_EMULATOR_URL, MEDIAGEN_API_KEY and MEDIAGEN_TASK,
// in a tenant under adversity. It ends as it should, and the emulator's report finds nothing in it.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { type Emulator, type Tenant, emulatorFromEnv, tenantFor } from '@mediagen/emulator-testing';

const adapter = fileURLToPath(new URL('./adapter.mjs', import.meta.url));
const GENERATE = { method: 'POST', path: '/v1/generate' };

let emu: Emulator;
before(async () => {
  emu = await emulatorFromEnv();
});
after(async () => {
  await emu.close();
});

/** Runs the adapter on one task in the tenant: its exit status and the files it saved. */
function run(tenant: Tenant, prompt: string): Promise<{ code: number; files: string[]; stderr: string }> {
  const dir = join(mkdtempSync(join(tmpdir(), 'mediagen-adapter-')), 'out');
  const task = { model: 'fal-ai/flux/schnell', input: { prompt }, output_dir: dir };
  const env = { ...process.env, MEDIAGEN_EMULATOR_URL: tenant.baseUrl, MEDIAGEN_API_KEY: tenant.apiKey, MEDIAGEN_TASK: JSON.stringify(task) };
  return new Promise((resolve) => {
    execFile(process.execPath, [adapter], { env }, (err, _stdout, stderr) => {
      let files: string[] = [];
      try {
        files = readdirSync(dir);
      } catch {
        files = [];
      }
      resolve({ code: err ? Number(err.code ?? 1) : 0, files, stderr });
    });
  });
}

async function findings(tenant: Tenant): Promise<string[]> {
  return (await tenant.control.report()).findings.map((f) => f.rule);
}

for (const [name, fault] of [
  ['a 503 with Retry-After as a date', { status: 503, retry_after: 1, retry_after_format: 'date' }],
  ['a reset', { action: 'reset' }],
  ['a truncated answer', { action: 'truncated' }],
  ['a gateway page', { action: 'gateway' }],
] as const) {
  test(`the adapter survives ${name} of its generation`, async (t) => {
    const tenant = await tenantFor(t, emu);
    await tenant.control.addFault({ ...fault, match: GENERATE, count: 1 });
    const got = await run(tenant, 'a red fox');
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.files.length, 1);
    assert.deepEqual(await findings(tenant), []);
  });
}

test('the adapter resumes a cut download', async (t) => {
  const tenant = await tenantFor(t, emu);
  await tenant.control.addFault({ match: { method: 'GET', path: '/files/**' }, download: { cut_after: 1000 }, count: 2 });
  const got = await run(tenant, 'a red fox');
  assert.equal(got.code, 0, got.stderr);
  assert.deepEqual(await findings(tenant), []);
});

test('the adapter reports a refusal without sending it again', async (t) => {
  const tenant = await tenantFor(t, emu);
  const got = await run(tenant, 'a red fox [emulator:refuse]');
  assert.equal(got.code, 1, got.stderr);
  assert.deepEqual((await tenant.control.requests(GENERATE)).map((e) => e.status), [422]);
  assert.deepEqual(await findings(tenant), []);
});

test('the adapter reports a failed job without generating it again', async (t) => {
  const tenant = await tenantFor(t, emu);
  const got = await run(tenant, 'a red fox [emulator:fail]');
  assert.equal(got.code, 1, got.stderr);
  assert.equal((await tenant.control.requests(GENERATE)).length, 1);
});
