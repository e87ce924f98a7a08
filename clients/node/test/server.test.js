// Starting, attaching, stopping, the command wrapper, and the declared types.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import * as pkg from '../index.js';
import { BIN_ENV, Control, Emulator, EmulatorError, EmulatorStartError, URL_ENV, attachEmulator, durationText, findBinary, startEmulator, tenantName } from '../index.js';

const here = dirname(fileURLToPath(import.meta.url));

test('starts on a free port and stops gracefully', async () => {
  const emu = await startEmulator({ seed: 7, scenario: 'flaky', args: ['--quote-ttl', '2m'] });
  assert.match(emu.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const h = await emu.control.health();
  assert.deepEqual([h.status, h.clock, h.scenario, h.seeded], ['ok', 'skip', 'flaky', true]);
  assert.equal(await emu.close(), 0);
  assert.equal(await emu.close(), 0); // twice is harmless
  assert.equal(existsSync(emu.logPath), false); // a clean run leaves no log
});

test('a real clock, an admin token, and Symbol.asyncDispose (await using) stopping it', async () => {
  const emu = await startEmulator({ clock: 'real', adminToken: 's3cret' });
  try {
    assert.equal((await emu.control.clock()).mode, 'real');
    await assert.rejects(new Control(emu.url).clock(), (err) => err instanceof EmulatorError && err.code === 'admin_token_required');
    assert.equal((await attachEmulator(emu.url, { adminToken: 's3cret' }).control.clock()).mode, 'real');
  } finally {
    await emu[Symbol.asyncDispose]();
  }
  assert.equal(emu.exitCode, 0);
  await assert.rejects(fetch(emu.url + '/_emulator/health'));
});

test('a bad start says why', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mediagen-node-test-'));
  writeFileSync(join(dir, 'catalog.yaml'), 'models: [\n');
  await assert.rejects(startEmulator({ catalog: join(dir, 'catalog.yaml') }), (err) => err instanceof EmulatorStartError && err.message.includes('catalog.yaml'));
  await assert.rejects(startEmulator({ binary: join(dir, 'missing') }), /not an executable file/);
});

test('finds the binary: path, then environment, then PATH', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mediagen-node-test-'));
  const fake = join(dir, 'mediagen-emulator');
  writeFileSync(fake, '#!/bin/sh\n');
  chmodSync(fake, 0o755);
  const saved = { bin: process.env[BIN_ENV], path: process.env.PATH };
  t.after(() => {
    if (saved.bin === undefined) delete process.env[BIN_ENV];
    else process.env[BIN_ENV] = saved.bin;
    process.env.PATH = saved.path;
  });
  process.env[BIN_ENV] = fake;
  assert.equal(findBinary(), fake);
  assert.equal(findBinary(process.execPath), process.execPath);
  delete process.env[BIN_ENV];
  process.env.PATH = dir;
  assert.equal(findBinary(), fake);
  process.env.PATH = '';
  assert.throws(() => findBinary(), /MEDIAGEN_EMULATOR_BIN/);
});

test('attaches from the environment', (t) => {
  const saved = process.env[URL_ENV];
  t.after(() => (saved === undefined ? delete process.env[URL_ENV] : (process.env[URL_ENV] = saved)));
  process.env[URL_ENV] = 'http://127.0.0.1:9/';
  const emu = attachEmulator();
  assert.equal(emu.url, 'http://127.0.0.1:9');
  assert.equal(emu.process, undefined);
  delete process.env[URL_ENV];
  assert.throws(() => attachEmulator(), EmulatorStartError);
});

test('tenant names and handles', () => {
  const names = new Set(Array.from({ length: 50 }, () => tenantName('suite > a test / ç')));
  assert.equal(names.size, 50);
  for (const name of names) assert.match(name, /^suite-a-test-[0-9a-f]{6}$/);
  assert.match(tenantName('x'.repeat(200)), /^[A-Za-z0-9_-]{64}$/);
  assert.match(tenantName('//'), /^t-[0-9a-f]{6}$/);
  const tenant = new Emulator('http://127.0.0.1:1').tenant('checkout-1');
  assert.equal(tenant.apiKey, 'mg_test_all.checkout-1');
  assert.deepEqual(tenant.headers, { 'X-Emulator-Tenant': 'checkout-1' });
  assert.deepEqual(tenant.control.headers, { 'X-Emulator-Tenant': 'checkout-1' });
  assert.equal(durationText('1h30m'), '1h30m');
  assert.equal(durationText(1500), '1500ms');
});

test('mediagen-emulator-run runs a command attached to a fresh emulator', async () => {
  const probe = "const r = await fetch(process.env.MEDIAGEN_EMULATOR_URL + '/_emulator/health'); process.exit((await r.json()).status === 'ok' ? 3 : 1)";
  const run = promisify(execFile)(process.execPath, [join(here, '..', 'bin', 'run.js'), '--seed', '1', '--', process.execPath, '--input-type=module', '-e', probe]);
  await assert.rejects(run, (err) => err.code === 3 && /listening on http:\/\/127\.0\.0\.1:/.test(err.stderr));
});

test('index.d.ts declares what index.js exports', () => {
  const dts = readFileSync(join(here, '..', 'index.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export declare (?:const|class|function) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual(declared, new Set(Object.keys(pkg)));
  const controlBlock = dts.slice(dts.indexOf('export declare class Control {'), dts.indexOf('\n}\n', dts.indexOf('export declare class Control {')));
  const methods = new Set([...controlBlock.matchAll(/^ {2}(\w+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]).filter((m) => m !== 'constructor'));
  const actual = new Set(Object.getOwnPropertyNames(Control.prototype).filter((m) => m !== 'constructor' && typeof Control.prototype[m] === 'function'));
  assert.deepEqual(methods, actual);
  const emuBlock = dts.slice(dts.indexOf('export declare class Emulator {'), dts.indexOf('\n}\n', dts.indexOf('export declare class Emulator {')));
  const emuMethods = new Set([...emuBlock.matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]).filter((m) => m !== 'constructor'));
  const emuActual = new Set(Object.getOwnPropertyNames(Emulator.prototype).filter((m) => m !== 'constructor' && typeof Emulator.prototype[m] === 'function'));
  assert.deepEqual(emuMethods, emuActual);
});
