#!/usr/bin/env node
// mediagen-emulator [ARGS...]: runs the mediagen-emulator binary that came with this package (its
// platform package), else $MEDIAGEN_EMULATOR_BIN or the one on PATH, with ARGS, and exits with
// its status. `npx mediagen-emulator --seed 42` serves on http://127.0.0.1:8080. SIGINT, SIGTERM
// and SIGHUP reach the emulator, which shuts down gracefully, and the launcher exits once it has:
// `kill $!` frees the port, even when $! is npx.

import { spawn } from 'node:child_process';

import { findBinary } from '../emulator.js';
import { onStop } from './signals.js';

let exe;
try {
  exe = findBinary();
} catch (err) {
  console.error(`mediagen-emulator: ${err.message}`);
  process.exit(2);
}
const child = spawn(exe, process.argv.slice(2), { stdio: 'inherit' });
// The emulator shuts down gracefully on SIGINT and SIGTERM; pass them on and wait for it.
const stopListening = onStop((signal) => child.kill(signal));
child.once('error', (err) => {
  console.error(`mediagen-emulator: cannot run ${exe}: ${err.message}`);
  process.exit(127);
});
child.once('exit', (code, signal) => {
  stopListening();
  if (signal) {
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
