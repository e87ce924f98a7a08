#!/usr/bin/env node
// Makes the npm tarballs of a release from its binaries, the way esbuild and Biome ship theirs:
//
//   node clients/node/npm/build.mjs --version 1.2.3 --binaries DIR --out DIR
//
// DIR (scripts/release's) holds mediagen-emulator_VERSION_GOOS_GOARCH/mediagen-emulator[.exe].
// For each platform built, the template clients/node/npm/emulator-PLATFORM/package.json becomes
// @mediagen/emulator-PLATFORM with the binary in bin/ ("os"/"cpu" let npm install it on that
// platform only). The main package, @mediagen/emulator-testing, is packed with the platform
// packages built this time as optional dependencies of the same version, so installing it
// fetches the one binary that fits and runs no install script. Only those built: an optional
// dependency that exists nowhere (a one-platform build's tarballs, installed from files) stays
// out of the project's lock file, and `npm ci` then refuses that lock file as out of sync.
// Everything is staged in a temporary folder; the checkout is left as it was.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const nodeDir = resolve(here, '..');
const { values } = parseArgs({ options: { version: { type: 'string' }, binaries: { type: 'string' }, out: { type: 'string' } } });
if (!values.version || !values.binaries || !values.out) {
  console.error('usage: node clients/node/npm/build.mjs --version X.Y.Z --binaries DIR --out DIR');
  process.exit(2);
}
const version = values.version.replace(/^v/, '');
const out = resolve(values.out);
mkdirSync(out, { recursive: true });

// Go's names for each platform package's os and cpu.
const goos = { linux: 'linux', darwin: 'darwin', win32: 'windows' };
const goarch = { x64: 'amd64', arm64: 'arm64' };

const readJSON = (path) => JSON.parse(readFileSync(path, 'utf8'));
const writeJSON = (path, value) => writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
const pack = (dir) => {
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop();
  console.log(`    ${file}`);
};

const stage = mkdtempSync(join(tmpdir(), 'mediagen-npm-'));
try {
  const platforms = [];
  for (const entry of readdirSync(here, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith('emulator-')) continue;
    const template = readJSON(join(here, entry.name, 'package.json'));
    const [os, cpu] = [template.os[0], template.cpu[0]];
    const exe = os === 'win32' ? 'mediagen-emulator.exe' : 'mediagen-emulator';
    const binary = join(values.binaries, `mediagen-emulator_${version}_${goos[os]}_${goarch[cpu]}`, exe);
    if (!existsSync(binary)) continue; // not built this time (RELEASE_PLATFORMS)
    platforms.push(template.name);
    const dir = join(stage, entry.name);
    mkdirSync(join(dir, 'bin'), { recursive: true });
    writeJSON(join(dir, 'package.json'), { ...template, version });
    copyFileSync(binary, join(dir, 'bin', exe));
    chmodSync(join(dir, 'bin', exe), 0o755);
    writeFileSync(
      join(dir, 'README.md'),
      `# ${template.name}\n\nThe \`mediagen-emulator\` ${version} binary for ${os}/${cpu}. Do not install it yourself:\n` +
        'install `@mediagen/emulator-testing`, which lists every platform package as an optional\n' +
        'dependency, so npm installs the one that fits this machine.\n',
    );
    copyFileSync(join(nodeDir, '..', '..', 'LICENSE'), join(dir, 'LICENSE'));
    pack(dir);
  }

  // The main package: the files it publishes, with this version and the platform packages.
  const main = readJSON(join(nodeDir, 'package.json'));
  const dir = join(stage, 'main');
  mkdirSync(dir);
  for (const file of main.files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(nodeDir, file), join(dir, file), { recursive: true });
  }
  copyFileSync(join(nodeDir, '..', '..', 'LICENSE'), join(dir, 'LICENSE'));
  main.version = version;
  main.optionalDependencies = Object.fromEntries(platforms.sort().map((name) => [name, version]));
  delete main.scripts;
  writeJSON(join(dir, 'package.json'), main);
  pack(dir);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
