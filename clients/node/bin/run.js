#!/usr/bin/env node
// mediagen-emulator-run [--seed N] [--clock skip|manual|real] [--scenario S] [--catalog F]
//                       [--admin-token T] [--bin PATH] -- COMMAND...
//
// Starts the emulator, runs COMMAND with MEDIAGEN_EMULATOR_URL (and MEDIAGEN_ADMIN_TOKEN) set so
// every test process attaches to it, stops it, and exits with COMMAND's status (or 1 when the
// emulator did not shut down cleanly). SIGINT, SIGTERM and SIGHUP go on to COMMAND and stop the
// emulator; the launcher exits once both have ended, so `kill $!` frees the port.

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';

import { ADMIN_TOKEN_ENV, URL_ENV, startEmulator } from '../index.js';
import { onStop } from './signals.js';

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      bin: { type: 'string' },
      seed: { type: 'string' },
      clock: { type: 'string', default: 'skip' },
      scenario: { type: 'string' },
      catalog: { type: 'string' },
      'admin-token': { type: 'string' },
    },
  });
} catch (err) {
  console.error(`mediagen-emulator-run: ${err.message}`);
  process.exit(2);
}
const { values, positionals: command } = parsed;
if (command.length === 0) {
  console.error('usage: mediagen-emulator-run [--seed N] [--clock skip|manual|real] [--scenario S] [--catalog F] [--admin-token T] [--bin PATH] -- COMMAND...');
  process.exit(2);
}

// Listen from the start: a stop that comes while the emulator starts ends it once it has.
let emu, child, stoppedBy;
const stopListening = onStop((signal) => {
  stoppedBy ??= signal;
  child?.kill(signal);
  emu?.close(); // at once: a command slow to stop must not keep the port
});
try {
  emu = await startEmulator({
    url: false, // a fresh emulator for the command, even where $MEDIAGEN_EMULATOR_URL names one
    binary: values.bin,
    seed: values.seed,
    clock: values.clock,
    scenario: values.scenario,
    catalog: values.catalog,
    adminToken: values['admin-token'],
  });
} catch (err) {
  console.error(`mediagen-emulator-run: ${err.message}`);
  process.exit(2);
}
if (stoppedBy) {
  await emu.close();
  process.exit(128 + constants.signals[stoppedBy]);
}
console.error(`mediagen-emulator-run: listening on ${emu.url}`);
const env = { ...process.env, [URL_ENV]: emu.url };
if (values['admin-token']) env[ADMIN_TOKEN_ENV] = values['admin-token'];
child = spawn(command[0], command.slice(1), { stdio: 'inherit', env });
const status = await new Promise((resolve) => {
  child.once('error', (err) => {
    console.error(`mediagen-emulator-run: cannot run ${command[0]}: ${err.message}`);
    resolve(127);
  });
  child.once('exit', (code, signal) => resolve(code ?? 128 + (constants.signals[signal] ?? 0)));
});
stopListening();
const code = await emu.close();
if (stoppedBy && code === 0) process.exit(status || 128 + constants.signals[stoppedBy]);
if (code !== 0) {
  console.error(`mediagen-emulator-run: the emulator exited with ${code} (log: ${emu.logPath})`);
  process.exit(status || 1);
}
process.exit(status);
