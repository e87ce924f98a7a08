#!/usr/bin/env node
// mediagen-emulator [ARGS...]: runs the mediagen-emulator binary that came with this package (its
// platform package), else $MEDIAGEN_EMULATOR_BIN or the one on PATH, with ARGS, and exits with
// its status. `npx mediagen-emulator --seed 42` serves on http://127.0.0.1:8080.

import { spawn } from 'node:child_process';

import { findBinary } from '../emulator.js';

let exe;
try {
  exe = findBinary();
} catch (err) {
  console.error(`mediagen-emulator: ${err.message}`);
  process.exit(2);
}
const child = spawn(exe, process.argv.slice(2), { stdio: 'inherit' });
// The emulator shuts down gracefully on SIGINT and SIGTERM; pass them on and wait for it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.once('error', (err) => {
  console.error(`mediagen-emulator: cannot run ${exe}: ${err.message}`);
  process.exit(127);
});
child.once('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
