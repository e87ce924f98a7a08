// The launchers stop what they started when they are told to stop: `kill $!` frees the port,
// whether $! is the launcher itself or a parent that does not pass signals on (npx, `sh -c`).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { findBinary } from '../index.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'bin');
const posix = process.platform !== 'win32';

let binary;
try {
  binary = findBinary();
} catch {
  binary = undefined; // the tests below say so when they skip
}
const skip = !posix ? 'POSIX signals' : !binary ? 'no mediagen-emulator binary (set MEDIAGEN_EMULATOR_BIN)' : false;

/** Starts argv and resolves with the process and the first emulator URL its output names. */
function launch(t, argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MEDIAGEN_EMULATOR_BIN: binary } });
  t.after(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const url = new Promise((resolve, reject) => {
    const look = (chunk) => {
      output += chunk;
      // The emulator's own line, or the command's (mediagen-emulator-run's own comes earlier).
      const m = /^(?:listening on )?(http:\/\/127\.0\.0\.1:\d+)$/m.exec(output);
      if (m) resolve(m[1]);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    exited.then(() => reject(new Error(`exited before listening:\n${output}`)));
  });
  return { child, url, exited, output: () => output };
}

/** Whether something accepts connections at url. */
function listening(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(port), hostname);
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

/** Resolves once nothing listens at url; fails after a generous bound of real time. */
async function freed(url) {
  const deadline = Date.now() + 20_000;
  while (await listening(url)) {
    assert.ok(Date.now() < deadline, `${url} still listens 20 s after the launcher was stopped`);
    await new Promise((r) => setTimeout(r, 50)); // a process exiting, not the emulator's clock
  }
}

const launchers = {
  'mediagen-emulator': [join(bin, 'mediagen-emulator.js'), '--addr', '127.0.0.1:0'],
  'mediagen-emulator-run': [join(bin, 'run.js'), '--', process.execPath, '-e', 'console.log(process.env.MEDIAGEN_EMULATOR_URL); setInterval(() => {}, 1000)'],
};

for (const [name, args] of Object.entries(launchers)) {
  test(`${name}: SIGTERM to the launcher stops the emulator and frees its port`, { skip }, async (t) => {
    const run = launch(t, [process.execPath, ...args]);
    const url = await run.url;
    assert.equal(await listening(url), true);
    run.child.kill('SIGTERM');
    const { code, signal } = await run.exited;
    // The emulator shuts down gracefully and exits 0; a command killed by the signal is 143.
    assert.ok(code === 0 || code === 143 || signal === 'SIGTERM', `exit ${code} ${signal}:\n${run.output()}`);
    await freed(url);
  });

  test(`${name}: SIGTERM to a parent that does not pass it on (as npx) frees the port too`, { skip }, async (t) => {
    // `; exit` keeps the shell from replacing itself with node: it stays the parent, as npx's does.
    const run = launch(t, ['/bin/sh', '-c', `"${process.execPath}" "$@"; exit`, 'sh', ...args]);
    const url = await run.url;
    run.child.kill('SIGTERM');
    await run.exited;
    await freed(url);
  });
}
