"use strict";
// Starting the emulator binary, or attaching to a running one, and handing out tenants.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Emulator = exports.EmulatorStartError = exports.DEFAULT_KEY = exports.TENANT_ENV = exports.KEY_ENV = exports.ADMIN_TOKEN_ENV = exports.URL_ENV = exports.BIN_ENV = void 0;
exports.findBinary = findBinary;
exports.tenantName = tenantName;
exports.startEmulator = startEmulator;
exports.attachEmulator = attachEmulator;
exports.emulatorFromEnv = emulatorFromEnv;
exports.tenantFor = tenantFor;
exports.upload = upload;
const node_child_process_1 = require("node:child_process");
const node_crypto_1 = require("node:crypto");
const node_fs_1 = require("node:fs");
const node_module_1 = require("node:module");
const node_os_1 = require("node:os");
const node_path_1 = require("node:path");
const node_readline_1 = require("node:readline");
const control_js_1 = require("./control.js");
exports.BIN_ENV = 'MEDIAGEN_EMULATOR_BIN';
exports.URL_ENV = 'MEDIAGEN_EMULATOR_URL';
exports.ADMIN_TOKEN_ENV = 'MEDIAGEN_ADMIN_TOKEN';
// The key and tenant a client under test is run with by `mediagen-emulator explore` and
// `conformance`; tenantFor then gives every test that tenant.
exports.KEY_ENV = 'MEDIAGEN_API_KEY';
exports.TENANT_ENV = 'MEDIAGEN_TENANT';
exports.DEFAULT_KEY = 'mg_test_all'; // the embedded catalog's key with models:read and generate
const LISTENING = 'listening on ';
/** The emulator binary could not be found or did not start listening. */
class EmulatorStartError extends Error {
    constructor(message) {
        super(message);
        this.name = 'EmulatorStartError';
    }
}
exports.EmulatorStartError = EmulatorStartError;
function executable(path) {
    try {
        (0, node_fs_1.accessSync)(path, node_fs_1.constants.X_OK);
        return (0, node_fs_1.statSync)(path).isFile();
    }
    catch {
        return false;
    }
}
// The platform package that carries this machine's binary, e.g. @mediagen/emulator-linux-x64.
const PLATFORM_PACKAGE = `@mediagen/emulator-${process.platform}-${process.arch}`;
const EXE = process.platform === 'win32' ? 'mediagen-emulator.exe' : 'mediagen-emulator';
/** The binary of the platform package installed with this one, or undefined. */
function packagedBinary() {
    let path;
    try {
        path = (0, node_module_1.createRequire)(require("node:url").pathToFileURL(__filename).href).resolve(`${PLATFORM_PACKAGE}/bin/${EXE}`);
    }
    catch {
        return undefined; // not installed: a checkout, or a platform without a package
    }
    return executable(path) ? path : undefined;
}
/**
 * The binary to run: `path`, else $MEDIAGEN_EMULATOR_BIN, else the one installed with this
 * package (its platform package), else mediagen-emulator on PATH.
 */
function findBinary(path) {
    for (const [candidate, origin] of [[path, 'the path given'], [process.env[exports.BIN_ENV], `$${exports.BIN_ENV}`]]) {
        if (!candidate)
            continue;
        if (executable(candidate))
            return candidate;
        throw new EmulatorStartError(`${candidate} (${origin}) is not an executable file`);
    }
    const packaged = packagedBinary();
    if (packaged)
        return packaged;
    const exts = process.platform === 'win32' ? ['.exe', ''] : [''];
    for (const dir of (process.env.PATH ?? '').split(node_path_1.delimiter)) {
        for (const ext of exts) {
            if (dir && executable((0, node_path_1.join)(dir, `mediagen-emulator${ext}`)))
                return (0, node_path_1.join)(dir, `mediagen-emulator${ext}`);
        }
    }
    throw new EmulatorStartError(`no mediagen-emulator binary: ${PLATFORM_PACKAGE} is not installed (the npm package from a ` +
        'release installs it; a checkout does not). Put mediagen-emulator on PATH (a release archive, ' +
        'or `go install .` in a checkout), set ' +
        `${exports.BIN_ENV}=/path/to/mediagen-emulator, or attach to a running one (the Docker image, say) ` +
        `with ${exports.URL_ENV}=http://127.0.0.1:8080`);
}
/** A tenant name made from a hint (a test's name) and a random suffix: [A-Za-z0-9_-], at most 64. */
function tenantName(hint = '', suffixLength = 6) {
    const base = String(hint)
        .replace(/[^A-Za-z0-9_-]+/g, '-')
        .replace(/^-+|-+$/g, '')
        .slice(0, 64 - 1 - suffixLength)
        .replace(/-+$/, '') || 't';
    return `${base}-${(0, node_crypto_1.randomBytes)(suffixLength).toString('hex').slice(0, suffixLength)}`;
}
/** A running emulator: started by this process (startEmulator) or attached to (attachEmulator). */
class Emulator {
    #tenantsSupported;
    #onExit;
    constructor(url, { adminToken, process: child, logPath, tenantClock } = {}) {
        this.url = String(url).replace(/\/+$/, '');
        this.adminToken = adminToken || undefined;
        this.process = child;
        this.logPath = logPath;
        // The clock mode tenantFor puts each test's tenant on. attachEmulator makes it "skip": an
        // emulator in CI is often configured with --clock manual, and a test that is green on the
        // skip clock startEmulator gives locally would wait there for a clock nobody moves.
        // Undefined (an emulator this process started): the clock it was started with.
        this.tenantClock = tenantClock ?? undefined;
        this.exitCode = undefined;
        this.control = new control_js_1.Control(this.url, { adminToken: this.adminToken });
        if (child) {
            // An emulator left running by a test that forgot close() dies with this process.
            this.#onExit = () => child.kill('SIGKILL');
            process.once('exit', this.#onExit);
        }
    }
    /** The tenant called `name` (it comes into being on its first request). */
    tenant(name, key = exports.DEFAULT_KEY) {
        const control = this.control.forTenant(name);
        return {
            name,
            baseUrl: this.url,
            apiKey: `${key}.${name}`,
            headers: { [control_js_1.TENANT_HEADER]: name },
            control,
            key: (other) => `${other}.${name}`,
            delete: ({ missingOk = true } = {}) => control.deleteTenant(name, { missingOk }),
            upload: (file, contentType) => upload(this.url, `${key}.${name}`, file, contentType),
        };
    }
    /** A tenant with a fresh name made from `hint` and a random suffix. */
    newTenant(hint = '', key = exports.DEFAULT_KEY) {
        return this.tenant(tenantName(hint), key);
    }
    /** Whether the emulator knows tenants (answers GET /_emulator/tenants); asked once. */
    supportsTenants() {
        this.#tenantsSupported ??= this.control.tenants().then(() => true, (err) => {
            if (err instanceof control_js_1.EmulatorError && (err.status === 404 || err.status === 405))
                return false;
            this.#tenantsSupported = undefined;
            throw err;
        });
        return this.#tenantsSupported;
    }
    /**
     * Stops a started emulator gracefully (SIGTERM; SIGKILL after timeoutMs) and resolves with its
     * exit status, 0 after a clean shutdown. Does nothing to an attached one (resolves null).
     */
    async close({ timeoutMs = 15_000 } = {}) {
        const child = this.process;
        if (!child)
            return null;
        if (this.exitCode === undefined) {
            if (child.exitCode === null && child.signalCode === null) {
                const exited = new Promise((resolve) => child.once('exit', resolve));
                child.kill('SIGTERM');
                const watchdog = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
                await exited;
                clearTimeout(watchdog);
            }
            this.exitCode = child.exitCode ?? child.signalCode;
            process.removeListener('exit', this.#onExit);
            if (this.exitCode === 0 && this.logPath)
                (0, node_fs_1.rmSync)((0, node_path_1.dirname)(this.logPath), { recursive: true, force: true });
        }
        return this.exitCode;
    }
    async [Symbol.asyncDispose]() {
        await this.close();
    }
}
exports.Emulator = Emulator;
/**
 * Starts the emulator on a free loopback port and resolves once it listens. `clock` defaults to
 * "skip": time stands still, but a request that waits on a job (a wait=true generation, a poll
 * of a job not yet terminal) moves it to the job's next transition at once. Pass "manual" for
 * tests that look at a job while it is queued or running, null for the binary's default. MEDIAGEN_* variables of this process are not passed
 * on, so a developer's shell cannot change a test's emulator; `env` adds variables.
 *
 * When `url` (default $MEDIAGEN_EMULATOR_URL, the service container of a CI job) names an
 * emulator, it attaches to that one instead, as the pytest fixture does, and tenantFor puts each
 * test's tenant on `clock`; the other options then do not apply. `url: false` always starts one.
 */
async function startEmulator({ url = process.env[exports.URL_ENV], binary, seed, clock = 'skip', scenario, catalog, adminToken, args = [], env = {}, startupTimeoutMs = 30_000, } = {}) {
    if (url)
        return attachEmulator(url, { adminToken, clock });
    const exe = findBinary(binary);
    const argv = ['--addr', '127.0.0.1:0'];
    for (const [flag, value] of [['--seed', seed], ['--clock', clock], ['--scenario', scenario], ['--catalog', catalog], ['--admin-token', adminToken]]) {
        if (value !== undefined && value !== null)
            argv.push(flag, String(value));
    }
    argv.push(...args);
    const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEDIAGEN_')));
    Object.assign(childEnv, env);
    const logDir = (0, node_fs_1.mkdtempSync)((0, node_path_1.join)((0, node_os_1.tmpdir)(), 'mediagen-emulator-'));
    const logPath = (0, node_path_1.join)(logDir, 'emulator.log');
    const logFd = (0, node_fs_1.openSync)(logPath, 'w');
    let child;
    try {
        child = (0, node_child_process_1.spawn)(exe, argv, { stdio: ['ignore', 'pipe', logFd], env: childEnv });
    }
    finally {
        (0, node_fs_1.closeSync)(logFd);
    }
    const line = await firstLine(child, startupTimeoutMs);
    if (!line.startsWith(`${LISTENING}http://`)) {
        child.kill('SIGKILL');
        const logged = (0, node_fs_1.readFileSync)(logPath, 'utf8').slice(-4000);
        (0, node_fs_1.rmSync)(logDir, { recursive: true, force: true });
        throw new EmulatorStartError(`${[exe, ...argv].join(' ')} did not start (first line ${JSON.stringify(line)}); its log:\n${logged}`);
    }
    // Nothing more comes on stdout; keep reading it anyway, without holding the event loop open.
    child.stdout.resume();
    child.stdout.unref?.();
    child.unref();
    const emu = new Emulator(line.slice(LISTENING.length), { adminToken, process: child, logPath });
    return emu;
}
function firstLine(child, timeoutMs) {
    return new Promise((resolve) => {
        const lines = (0, node_readline_1.createInterface)({ input: child.stdout });
        const done = (line) => {
            clearTimeout(timer);
            lines.removeAllListeners();
            child.removeListener('exit', onExit);
            child.removeListener('error', onError);
            lines.close();
            resolve(line);
        };
        const onExit = () => done('');
        const onError = (err) => done(`(${err.message})`);
        const timer = setTimeout(() => done(''), timeoutMs);
        lines.once('line', done);
        child.once('exit', onExit);
        child.once('error', onError);
    });
}
/**
 * An emulator already running (Docker, CI): `url`, else $MEDIAGEN_EMULATOR_URL; the admin token
 * defaults to $MEDIAGEN_ADMIN_TOKEN. `clock` is the mode tenantFor puts each test's tenant on
 * (tenantClock), whatever the emulator's own: "skip", as startEmulator's, "manual" or "real", or
 * null for the emulator's.
 */
function attachEmulator(url, { adminToken, clock = 'skip' } = {}) {
    url ||= process.env[exports.URL_ENV];
    if (!url)
        throw new EmulatorStartError(`no emulator URL: pass one or set ${exports.URL_ENV}`);
    return new Emulator(url, { adminToken: adminToken ?? (process.env[exports.ADMIN_TOKEN_ENV] || undefined), tenantClock: clock });
}
/** Attaches when $MEDIAGEN_EMULATOR_URL is set, else starts one with `options`: startEmulator does both now. */
async function emulatorFromEnv(options = {}) {
    return startEmulator(options);
}
/**
 * A fresh tenant for one test, deleted when the test ends: `t` is node:test's context (`name`,
 * `after`) or Vitest's (`task.name`, `onTestFinished`). With failOnUnexpected, the test also
 * fails when its tenant answered an error that no expectError declared. With snapshotOnFailure
 * (a folder, or true for $MEDIAGEN_SNAPSHOT_DIR or the temporary folder's mediagen-snapshots),
 * or when $MEDIAGEN_SNAPSHOT_DIR is set, a failed test's tenant is saved to a snapshot file
 * before it is deleted, and the file's path is printed. Rejects when the emulator has no tenants.
 */
async function tenantFor(t, emulator, { key = exports.DEFAULT_KEY, failOnUnexpected = false, snapshotOnFailure, clock } = {}) {
    if (!(await emulator.supportsTenants())) {
        throw new control_js_1.EmulatorError('GET', '/_emulator/tenants', 404, {
            code: 'not_found',
            detail: `the emulator at ${emulator.url} does not support tenants; use a newer mediagen-emulator`,
        });
    }
    // Vitest's context is a function, whose own name is "context": the task names the test.
    const testName = t?.task?.name ?? t?.name ?? '';
    const given = givenTenant();
    if (given && (!process.env[exports.URL_ENV] || process.env[exports.URL_ENV].replace(/\/+$/, '') === emulator.url)) {
        // Explore or conformance made this tenant for the run and put its plan in force: use it as
        // it is, and leave it to them.
        const tenant = emulator.tenant(given.name, key);
        if (given.key)
            tenant.apiKey = given.key;
        if (clock)
            await tenant.control.setClockMode(clock);
        return tenant;
    }
    const tenant = emulator.newTenant(testName, key);
    const dir = snapshotOnFailure === true || (snapshotOnFailure === undefined && process.env[control_js_1.SNAPSHOT_DIR_ENV]) ? (0, control_js_1.snapshotDir)() : snapshotOnFailure || '';
    const end = async (result) => {
        let failed = testFailed(t, result);
        if (failed)
            await explainClock(t, tenant);
        try {
            try {
                if (failOnUnexpected)
                    await tenant.control.assertNoUnexpected();
            }
            catch (err) {
                failed = true;
                throw err;
            }
            finally {
                if (failed && dir)
                    await saveFailed(t, tenant, testName, dir);
            }
        }
        finally {
            await tenant.delete();
        }
    };
    // Vitest's own onTestFinished, from the test's context: under test.concurrent the one imported
    // from 'vitest' can belong to another test.
    if (typeof t?.onTestFinished === 'function')
        t.onTestFinished(end);
    else
        t?.after?.(end);
    const mode = clock ?? emulator.tenantClock;
    if (mode) {
        await tenant.control.setClockMode(mode);
        tenant.control.clockMode = mode; // and reset() keeps it
    }
    return tenant;
}
// givenTenant is the tenant (and key) the environment names: $MEDIAGEN_TENANT, else the TENANT
// of a $MEDIAGEN_API_KEY of the form KEY.TENANT; undefined when it names none.
function givenTenant() {
    const key = process.env[exports.KEY_ENV] || '';
    const name = process.env[exports.TENANT_ENV] || (key.includes('.') ? key.slice(key.indexOf('.') + 1) : '');
    return name ? { name, key } : undefined;
}
// testFailed says whether the test has failed: node:test's context.passed, or Vitest's task
// result, which onTestFinished also hands its callback (a result in Vitest 1 and 2, the test's
// context since 3).
function testFailed(t, result) {
    if (typeof t?.passed === 'boolean' && t.passed === false)
        return true;
    return [result?.state, result?.task?.result?.state, t?.task?.result?.state].includes('fail');
}
// explainClock prints, for a failed test, why its wait=true generations did not end when its
// tenant's clock is manual (Control.clockDiagnosis), where the failure itself shows only a 202
// or the client's own timeout.
async function explainClock(t, tenant) {
    let line;
    try {
        line = await tenant.control.clockDiagnosis();
    }
    catch (err) {
        line = `cannot read the tenant's clock: ${err?.message ?? err}`;
    }
    if (!line)
        return;
    line = `mediagen-emulator: ${line}`;
    if (typeof t?.diagnostic === 'function')
        t.diagnostic(line);
    else
        console.error(line);
}
// saveFailed writes the failed test's tenant to a snapshot file and prints where: a
// diagnostic of node:test's test, or a line on standard error, which Vitest shows with the test.
async function saveFailed(t, tenant, testName, dir) {
    let line;
    try {
        const path = await tenant.control.saveSnapshot(dir, { name: testName || tenant.name });
        line = `mediagen-emulator: the tenant ${tenant.name} is saved in ${path} (restore it with control.restore(path), or open it in the dashboard)`;
    }
    catch (err) {
        line = `mediagen-emulator: cannot save the tenant's snapshot: ${err?.message ?? err}`;
    }
    if (typeof t?.diagnostic === 'function')
        t.diagnostic(line);
    else
        console.error(line);
}
/**
 * Sends a file to POST /v1/uploads with the key and returns the upload: its url goes in
 * image_url (or any media input) until its expires_at. file is the bytes (a Uint8Array or
 * Buffer) or a path; without contentType the emulator reads the type from the bytes. The
 * emulator must fetch inputs (--inputs fetch, or a scenario's inputs: fetch).
 */
async function upload(baseUrl, apiKey, file, contentType) {
    const data = typeof file === 'string' ? (0, node_fs_1.readFileSync)(file) : file;
    const resp = await fetch(`${baseUrl}/v1/uploads`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': contentType || 'application/octet-stream' },
        body: data,
    });
    const text = await resp.text();
    let body;
    try {
        body = JSON.parse(text);
    }
    catch {
        body = undefined;
    }
    if (resp.status !== 201) {
        throw new control_js_1.EmulatorError('POST', '/v1/uploads', resp.status, body && typeof body === 'object' ? body : undefined, text);
    }
    return body;
}
