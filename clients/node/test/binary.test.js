// Finding the binary of the installed platform package, and `npx mediagen-emulator` running it.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const posix = process.platform !== 'win32'; // shell scripts stand in for the binary

function fakeBinary(dir, body = '#!/bin/sh\n') {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'mediagen-emulator');
  writeFileSync(path, body);
  chmodSync(path, 0o755);
  return path;
}

/** The package's own files in a fresh folder, as npm installs them into node_modules. */
function installed(t) {
  const root = mkdtempSync(join(tmpdir(), 'mediagen-binary-test-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const pkg = join(root, 'node_modules', '@mediagen', 'emulator-testing');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  for (const file of ['package.json', 'index.js', 'control.js', 'emulator.js', 'bin/mediagen-emulator.js', 'bin/signals.js']) {
    copyFileSync(join(here, '..', file), join(pkg, file));
  }
  return { root, pkg };
}

function withEnv(t, vars) {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  t.after(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
  for (const [k, v] of Object.entries(vars)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

test('finds the platform package binary without a path or a variable', { skip: !posix }, async (t) => {
  const { root, pkg } = installed(t);
  const { findBinary } = await import(pathToFileURL(join(pkg, 'emulator.js')).href);
  withEnv(t, { MEDIAGEN_EMULATOR_BIN: undefined, PATH: '' });
  assert.throws(() => findBinary(), (err) => {
    assert.match(err.message, new RegExp(`@mediagen/emulator-${process.platform}-${process.arch} is not installed`));
    assert.match(err.message, /go install \./);
    assert.doesNotMatch(err.message, /@latest/); // that module path answers 403 until it is published
    return true;
  });

  const platformPackage = join(root, 'node_modules', '@mediagen', `emulator-${process.platform}-${process.arch}`);
  mkdirSync(platformPackage, { recursive: true });
  writeFileSync(join(platformPackage, 'package.json'), JSON.stringify({ name: `@mediagen/emulator-${process.platform}-${process.arch}`, version: '0.0.0' }));
  const packaged = fakeBinary(join(platformPackage, 'bin'));
  assert.equal(findBinary(), packaged);

  const onPath = fakeBinary(join(root, 'elsewhere'));
  process.env.PATH = dirname(onPath);
  assert.equal(findBinary(), packaged); // the package's own comes before PATH
  process.env.MEDIAGEN_EMULATOR_BIN = onPath;
  assert.equal(findBinary(), onPath); // the variable comes before the package's
});

test('mediagen-emulator (the npx command) runs the binary with its arguments and status', { skip: !posix }, async (t) => {
  const { root, pkg } = installed(t);
  const fake = fakeBinary(join(root, 'fake'), '#!/bin/sh\necho "ran with $*"\nexit 3\n');
  const result = await new Promise((resolve) => {
    execFile(process.execPath, [join(pkg, 'bin', 'mediagen-emulator.js'), '--seed', '42', 'version'], { env: { ...process.env, MEDIAGEN_EMULATOR_BIN: fake } }, (err, stdout) =>
      resolve({ code: err ? err.code : 0, stdout }),
    );
  });
  assert.deepEqual(result, { code: 3, stdout: 'ran with --seed 42 version\n' });
});
