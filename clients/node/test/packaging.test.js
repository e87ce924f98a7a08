// npm/build.mjs, the release's npm tarballs: the main package depends on the platform packages
// that were built, and on no other, so a lock file made from the tarballs can list every one of
// its dependencies (npm ci refuses a lock file that misses one). scripts/dist-test installs a
// release's seven tarballs as the README says and runs npm ci on the lock file.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const build = join(here, '..', 'npm', 'build.mjs');
const npm = (() => {
  try {
    execFileSync('npm', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Runs build.mjs over stand-in binaries for `platforms` (GOOS/GOARCH) and returns the main package's package.json. */
function buildFor(t, platforms) {
  const root = mkdtempSync(join(tmpdir(), 'mediagen-packaging-test-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const p of platforms) {
    const [goos, goarch] = p.split('/');
    const dir = join(root, 'bin', `mediagen-emulator_1.2.3_${goos}_${goarch}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, goos === 'windows' ? 'mediagen-emulator.exe' : 'mediagen-emulator'), '#!/bin/sh\n');
  }
  execFileSync(process.execPath, [build, '--version', '1.2.3', '--binaries', join(root, 'bin'), '--out', join(root, 'out')], { stdio: 'ignore' });
  const tarballs = readdirSync(join(root, 'out')).sort();
  const main = tarballs.find((f) => f.startsWith('mediagen-emulator-testing-'));
  execFileSync('tar', ['-xzf', join(root, 'out', main), '-C', root]);
  return { tarballs, pkg: JSON.parse(readFileSync(join(root, 'package', 'package.json'), 'utf8')) };
}

test('a one-platform build depends on that platform package only', { skip: !npm && 'npm is not installed' }, (t) => {
  const { tarballs, pkg } = buildFor(t, ['linux/amd64']);
  assert.deepEqual(tarballs, ['mediagen-emulator-linux-x64-1.2.3.tgz', 'mediagen-emulator-testing-1.2.3.tgz']);
  assert.deepEqual(pkg.optionalDependencies, { '@mediagen/emulator-linux-x64': '1.2.3' });
});
