"use strict";
// A client for the emulator's control API (/_emulator/...), bound to one tenant.
// Plain JavaScript with types in index.d.ts: nothing to build at install.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Control = exports.EmulatorTimeoutError = exports.EmulatorError = exports.SNAPSHOT_DIR_ENV = exports.ADMIN_TOKEN_HEADER = exports.TENANT_HEADER = void 0;
exports.durationText = durationText;
exports.timeText = timeText;
exports.snapshotDir = snapshotDir;
exports.formatEntry = formatEntry;
exports.formatVerification = formatVerification;
exports.formatUnexpected = formatUnexpected;
const node_assert_1 = require("node:assert");
const node_crypto_1 = require("node:crypto");
const promises_1 = require("node:fs/promises");
const node_os_1 = require("node:os");
const node_path_1 = require("node:path");
exports.TENANT_HEADER = 'X-Emulator-Tenant';
exports.ADMIN_TOKEN_HEADER = 'X-Emulator-Admin-Token';
/** The environment variable that names where failed tests' snapshots go, and turns saving them on. */
exports.SNAPSHOT_DIR_ENV = 'MEDIAGEN_SNAPSHOT_DIR';
/** An answer from the emulator that is not a success, with its problem body. */
class EmulatorError extends Error {
    constructor(method, path, status, problem, text) {
        let detail = problem?.detail ?? text?.slice(0, 300) ?? '';
        // The detail names only the first problem; a refused snapshot may have many.
        if (Array.isArray(problem?.errors) && problem.errors.length > 1) {
            detail += problem.errors.map((e) => `\n  ${e?.pointer ?? e?.parameter ?? ''}: ${e?.message}`).join('');
        }
        super(`${method} ${path}: ${status} ${problem?.code ?? 'error'}: ${detail}`);
        this.name = 'EmulatorError';
        this.method = method;
        this.path = path;
        this.status = status;
        this.problem = problem ?? {};
        this.code = problem?.code;
        this.detail = problem?.detail;
    }
}
exports.EmulatorError = EmulatorError;
/** What the test waited for did not happen in time. */
class EmulatorTimeoutError extends Error {
    constructor(message) {
        super(message);
        this.name = 'EmulatorTimeoutError';
    }
}
exports.EmulatorTimeoutError = EmulatorTimeoutError;
/** The emulator's spelling of a duration: a Go duration string as is, a number as milliseconds. */
function durationText(d) {
    if (typeof d === 'string')
        return d;
    if (typeof d !== 'number' || !Number.isFinite(d)) {
        throw new TypeError('a duration is a string such as "90s" or a number of milliseconds');
    }
    return `${Number.isInteger(d) ? d : Number(d.toFixed(6))}ms`;
}
/** An RFC 3339 time from a Date or a string. */
function timeText(t) {
    return t instanceof Date ? t.toISOString() : String(t);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * The control API of one emulator, acting on one tenant (the default one when `tenant` is
 * undefined). Every method sends one request (waitForWaiting may poll an older emulator) and
 * rejects with an EmulatorError for an answer that is not a success.
 */
class Control {
    constructor(baseUrl, { tenant, adminToken, timeoutMs = 60_000, clockMode } = {}) {
        this.baseUrl = String(baseUrl).replace(/\/+$/, '');
        this.tenant = tenant ?? undefined;
        this.adminToken = adminToken || undefined;
        this.timeoutMs = timeoutMs;
        // The clock mode reset() puts the tenant back on: the one tenantFor gave it. Undefined: the
        // emulator's configured mode, as the endpoint does. A reset must not take a test from the
        // skip clock it had locally to the manual clock a CI emulator is configured with.
        this.clockMode = clockMode || undefined;
    }
    /** The same emulator's control API acting on another tenant. */
    forTenant(tenant) {
        return new Control(this.baseUrl, { tenant, adminToken: this.adminToken, timeoutMs: this.timeoutMs });
    }
    /** The headers every control request carries: tenant and admin token, when set. */
    get headers() {
        const h = {};
        if (this.tenant !== undefined)
            h[exports.TENANT_HEADER] = this.tenant;
        if (this.adminToken)
            h[exports.ADMIN_TOKEN_HEADER] = this.adminToken;
        return h;
    }
    /** Sends one request and resolves with the decoded JSON answer (undefined when empty). */
    async call(method, path, options = {}) {
        const text = await this.#send(method, path, options);
        return text ? JSON.parse(text) : undefined;
    }
    /** Sends one request and resolves with the answer's text. */
    async #send(method, path, { body, data, query, timeoutMs, accept } = {}) {
        let url = this.baseUrl + path;
        if (query) {
            const params = new URLSearchParams();
            for (const [k, v] of Object.entries(query)) {
                for (const one of Array.isArray(v) ? v : [v])
                    if (one !== undefined && one !== null)
                        params.append(k, String(one));
            }
            const qs = params.toString();
            if (qs)
                url += `?${qs}`;
        }
        const headers = this.headers;
        // data is a JSON body sent as it is; body is encoded.
        data ??= body === undefined ? undefined : JSON.stringify(body);
        if (data !== undefined)
            headers['Content-Type'] = 'application/json';
        if (accept)
            headers.Accept = accept;
        const resp = await fetch(url, {
            method,
            headers,
            body: data,
            signal: AbortSignal.timeout(timeoutMs ?? this.timeoutMs),
        });
        const text = await resp.text();
        if (!resp.ok) {
            let problem;
            try {
                problem = JSON.parse(text);
            }
            catch {
                problem = undefined;
            }
            throw new EmulatorError(method, path, resp.status, problem && typeof problem === 'object' ? problem : undefined, text);
        }
        return text;
    }
    health() {
        return this.call('GET', '/_emulator/health');
    }
    async reset() {
        const done = await this.call('POST', '/_emulator/reset');
        if (this.clockMode)
            await this.setClockMode(this.clockMode);
        return done;
    }
    clock() {
        return this.call('GET', '/_emulator/clock');
    }
    async now() {
        return new Date((await this.clock()).now);
    }
    advance(by) {
        return this.call('POST', '/_emulator/clock', { body: { advance: durationText(by) } });
    }
    setTime(when) {
        return this.call('POST', '/_emulator/clock', { body: { set: timeText(when) } });
    }
    /** Changes how the tenant's clock moves from now on: "skip", "manual" or "real". */
    setClockMode(mode) {
        return this.call('POST', '/_emulator/clock', { body: { mode } });
    }
    /**
     * Why the tenant's wait=true generations did not end, when its clock is manual and one of them
     * answered 202 (it ran out of time) or still waits: a sentence that names the clock and how to
     * move it. Undefined otherwise (a skipping clock never leaves a wait=true waiting; a real one
     * moves by itself).
     */
    async clockDiagnosis() {
        if ((await this.clock()).mode !== 'manual')
            return undefined;
        const waiting = (await this.health()).waiting ?? 0;
        const cut = (await this.requests({ method: 'POST', path: '/v1/generate', status: 202 })).filter((e) => (e.query ?? '').split('&').includes('wait=true'));
        if (!waiting && !cut.length)
            return undefined;
        const seen = [];
        if (cut.length) {
            seen.push(`${cut.length} wait=true generation${cut.length === 1 ? '' : 's'} answered 202, the job not finished (${cut.slice(0, 5).map((e) => `#${e.seq}`).join(', ')})`);
        }
        if (waiting)
            seen.push(`${waiting} still wait${waiting === 1 ? 's' : ''}`);
        return (`the tenant ${this.tenant ?? 'default'} is on a manual clock: time stands still until the test moves it, so a wait=true ` +
            'generation waits for its job until --max-wait (180 s by default) passes in real time, then answers 202 with the job ' +
            `still queued; here ${seen.join(' and ')}. Move the clock (control.advance('5m'), after control.waitForWaiting() for a ` +
            "wait already sent), or put the tenant on the skip clock, where a wait=true answers the finished job at once: " +
            "control.setClockMode('skip'), tenantFor(t, emu, { clock: 'skip' })");
    }
    async waitForWaiting(count = 1, { timeoutMs = 10_000 } = {}) {
        if ((await this.clock()).mode === 'skip') {
            throw new Error('the tenant\'s clock skips, so a wait=true answers at once and never waits; start the emulator with clock: "manual" or call setClockMode("manual") first');
        }
        let got;
        try {
            got = await this.call('GET', '/_emulator/waiting', {
                query: { count, timeout: `${timeoutMs}ms` },
                timeoutMs: timeoutMs + 30_000,
            });
        }
        catch (err) {
            if (!(err instanceof EmulatorError) || (err.status !== 404 && err.status !== 405))
                throw err;
            return this.#pollWaiting(count, timeoutMs); // an emulator without /_emulator/waiting
        }
        if (!got.reached) {
            throw new EmulatorTimeoutError(`${got.waiting} wait=true generation(s) waiting after ${timeoutMs}ms; wanted ${count}`);
        }
        return got.waiting;
    }
    async #pollWaiting(count, timeoutMs) {
        const deadline = Date.now() + timeoutMs;
        for (let pause = 2;; pause = Math.min(pause * 2, 50)) {
            const n = (await this.health()).waiting ?? 0;
            if (n >= count)
                return n;
            if (Date.now() >= deadline) {
                throw new EmulatorTimeoutError(`${n} wait=true generation(s) waiting after ${timeoutMs}ms; wanted ${count}`);
            }
            await sleep(pause); // real time: another request is on its way
        }
    }
    job(id) {
        return this.call('GET', `/_emulator/jobs/${encodeURIComponent(id)}`);
    }
    async uploads({ limit = 100, offset = 0 } = {}) {
        return (await this.call('GET', `/_emulator/uploads?limit=${limit}&offset=${offset}`)).data;
    }
    completeJob(id) {
        return this.call('POST', `/_emulator/jobs/${encodeURIComponent(id)}/complete`);
    }
    failJob(id, { code, message } = {}) {
        const body = {};
        if (code !== undefined)
            body.code = code;
        if (message !== undefined)
            body.message = message;
        return this.call('POST', `/_emulator/jobs/${encodeURIComponent(id)}/fail`, {
            body: Object.keys(body).length ? body : undefined,
        });
    }
    async faults() {
        return (await this.call('GET', '/_emulator/faults')).data;
    }
    addFault(spec) {
        const body = { ...spec };
        if (typeof body.delay === 'number')
            body.delay = durationText(body.delay);
        return this.call('POST', '/_emulator/faults', { body });
    }
    async deleteFault(id) {
        await this.call('DELETE', `/_emulator/faults/${encodeURIComponent(id)}`);
    }
    async clearFaults({ includeScenario = false } = {}) {
        await this.call('DELETE', '/_emulator/faults', { query: { source: includeScenario ? 'all' : undefined } });
    }
    /** Puts an adversity plan ({perturbations}, or a bundle, whose plan is taken) in force for the tenant, in place of the API's perturbations; resolves with every perturbation in force. */
    setPlan(plan) {
        const body = plan && !Array.isArray(plan.perturbations) && plan.plan ? plan.plan : plan;
        return this.call('PUT', '/_emulator/plan', { body });
    }
    /** Every perturbation in force for the tenant, the scenario's and the API's. */
    plan() {
        return this.call('GET', '/_emulator/plan');
    }
    /** Removes the perturbations added through the API (a plan, faults). */
    async clearPlan() {
        await this.call('DELETE', '/_emulator/plan');
    }
    /** Whether a run of the client in the tenant failed and why (an error finding, a broken ledger invariant, a non-zero `exit` when given), with the cases it reached and its requests per route. */
    verdict({ exit } = {}) {
        return this.call('GET', '/_emulator/verdict', { query: { exit } });
    }
    /** What replays the tenant's run and shows what happened: plan, seed, run, verdict, report and snapshot. */
    bundle({ seed, run, exit } = {}) {
        return this.call('GET', '/_emulator/bundle', { query: { seed, run, exit } });
    }
    /** The plan the emulator draws for run `run` of `seed` ({plan, log}), favouring the cases not yet `reached`; the same arguments draw the same plan. */
    draw({ seed, run, terminal = false, reached = [], routes } = {}) {
        const body = { seed, run };
        if (terminal)
            body.terminal = true;
        if (reached.length)
            body.reached = [...new Set(reached)].sort();
        if (routes && Object.keys(routes).length)
            body.routes = routes;
        return this.call('POST', '/_emulator/explore/draw', { body });
    }
    /** The plans one step smaller than a failing plan, the most promising first; empty when it cannot shrink. */
    async shrink(plan) {
        return (await this.call('POST', '/_emulator/explore/shrink', { body: { plan } })).candidates ?? [];
    }
    scenario() {
        return this.call('GET', '/_emulator/scenario');
    }
    setScenario(scenario) {
        if (typeof scenario === 'string')
            return this.call('PUT', '/_emulator/scenario', { body: { name: scenario } });
        if (scenario && typeof scenario === 'object')
            return this.call('PUT', '/_emulator/scenario', { body: { scenario } });
        throw new TypeError('give an embedded scenario name or a scenario document');
    }
    async accounts() {
        return (await this.call('GET', '/_emulator/accounts')).data;
    }
    async balance(account) {
        const found = (await this.accounts()).find((b) => b.account === account);
        if (!found)
            throw new Error(`no account ${JSON.stringify(account)}`);
        return found;
    }
    setCredits(account, credits) {
        return this.call('PUT', `/_emulator/accounts/${encodeURIComponent(account)}`, { body: { credits } });
    }
    async requests(filter = {}) {
        return (await this.call('GET', '/_emulator/requests', { query: filter })).data;
    }
    async clearRequests() {
        await this.call('DELETE', '/_emulator/requests');
    }
    async tenants() {
        return (await this.call('GET', '/_emulator/tenants')).data;
    }
    async deleteTenant(name, { missingOk = false } = {}) {
        try {
            await this.call('DELETE', `/_emulator/tenants/${encodeURIComponent(name)}`);
        }
        catch (err) {
            if (!(missingOk && err instanceof EmulatorError && err.status === 404))
                throw err;
        }
    }
    /** The tenant's whole world as one document (GET /_emulator/snapshot), with the journal when asked. */
    snapshot({ journal = false } = {}) {
        return this.call('GET', '/_emulator/snapshot', { query: { journal: journal ? 'true' : undefined } });
    }
    /**
     * Replaces the tenant's world with a snapshot, at once: an object (as snapshot resolves), the
     * document as a string or bytes, or the path of a file holding it (a string that does not
     * start with "{"). A document the emulator refuses changes nothing; the EmulatorError names
     * each problem with its JSON Pointer.
     */
    async restore(doc) {
        let data;
        if (typeof doc === 'string')
            data = doc.trimStart().startsWith('{') ? doc : await (0, promises_1.readFile)(doc);
        else if (doc instanceof URL)
            data = await (0, promises_1.readFile)(doc);
        else if (doc instanceof Uint8Array || doc instanceof ArrayBuffer)
            data = doc;
        else if (doc && typeof doc === 'object')
            data = JSON.stringify(doc);
        else
            throw new TypeError('restore takes a snapshot as an object, a string, bytes, or a file\'s path');
        const text = await this.#send('PUT', '/_emulator/snapshot', { data });
        return JSON.parse(text);
    }
    /**
     * Writes the tenant's snapshot (with the journal unless `journal` is false) to a new file
     * NAME-XXXXXXXX.json in `dir`, made if missing, and resolves with its path. The random part
     * keeps one run from overwriting another's.
     */
    async saveSnapshot(dir, { name = 'snapshot', journal = true } = {}) {
        const text = await this.#send('GET', '/_emulator/snapshot', { query: { journal: journal ? 'true' : undefined } });
        await (0, promises_1.mkdir)(dir, { recursive: true });
        const safe = String(name).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100) || 'snapshot';
        for (;;) {
            const path = (0, node_path_1.join)(dir, `${safe}-${(0, node_crypto_1.randomBytes)(4).toString('hex')}.json`);
            try {
                await (0, promises_1.writeFile)(path, text, { flag: 'wx' });
                return path;
            }
            catch (err) {
                if (err?.code !== 'EEXIST')
                    throw err;
            }
        }
    }
    /** How many journal entries of this tenant match `pattern`, which, and the near misses when none does. */
    verify(pattern = {}) {
        return this.call('POST', '/_emulator/verify', { body: pattern });
    }
    /**
     * Resolves with the verification when requests like `pattern` happened (exactly `times` of
     * them when given); otherwise rejects with an AssertionError that lists the near misses.
     */
    async assertRequested(pattern = {}, { times } = {}) {
        const v = await this.verify(pattern);
        if (times === undefined ? v.count > 0 : v.count === times)
            return v;
        throw new node_assert_1.AssertionError({
            message: formatVerification(pattern, v, times),
            actual: v.count,
            expected: times ?? '1 or more',
            operator: 'assertRequested',
        });
    }
    /** Declares a problem this tenant's test expects; it is then not an unexpected error. Resolves with every expected pattern. */
    async expectError(pattern = {}) {
        return (await this.call('POST', '/_emulator/expected-errors', { body: pattern })).data;
    }
    /** The patterns of the problems this tenant expects. */
    async expectedErrors() {
        return (await this.call('GET', '/_emulator/expected-errors')).data;
    }
    /** Forgets the expected problems (a reset does too). */
    async clearExpectedErrors() {
        await this.call('DELETE', '/_emulator/expected-errors');
    }
    /** Every answer of status 400 or more in this tenant's journal that no expected pattern matches, oldest first. */
    async unexpectedErrors() {
        return (await this.call('GET', '/_emulator/unexpected')).data;
    }
    /** Rejects with an AssertionError that shows each unexpected error's request, answer and detail. */
    async assertNoUnexpected() {
        const got = await this.call('GET', '/_emulator/unexpected');
        if (!got.total)
            return;
        throw new node_assert_1.AssertionError({
            message: formatUnexpected(got.data, got.total, this.tenant),
            actual: got.total,
            expected: 0,
            operator: 'assertNoUnexpected',
        });
    }
    /**
     * Which of the contract's hard cases were exercised: this tenant's (scope 'tenant') or every
     * tenant's since the emulator started (scope 'run'). `require` globs fill `required_missing`.
     */
    coverage({ scope = 'tenant', require = [] } = {}) {
        return this.call('GET', '/_emulator/coverage', { query: { scope, require: [].concat(require) } });
    }
    /** The coverage as a markdown table (scope 'run' by default), for a CI job summary. */
    coverageMarkdown({ scope = 'run', require = [] } = {}) {
        return this.#send('GET', '/_emulator/coverage', { query: { scope, require: [].concat(require), format: 'markdown' }, accept: 'text/markdown' });
    }
    /** The findings on the client's behaviour: this tenant's (scope 'tenant') or the whole run's. */
    report({ scope = 'tenant' } = {}) {
        return this.call('GET', '/_emulator/report', { query: { scope } });
    }
    /** The report as markdown (scope 'run' by default). */
    reportMarkdown({ scope = 'run' } = {}) {
        return this.#send('GET', '/_emulator/report', { query: { scope, format: 'markdown' }, accept: 'text/markdown' });
    }
    /** Puts the tenant's webhook in force: its job events are POSTed to url, signed with secret (whsec_ and base64). */
    setWebhook({ url, secret, events, audit = false, chaos } = {}) {
        return this.call('PUT', '/_emulator/webhooks', { body: { url, secret, events, audit, chaos } });
    }
    /** The tenant's webhook (its secret never shown) and its deliveries' summary. */
    webhooks() {
        return this.call('GET', '/_emulator/webhooks');
    }
    /** Turns the tenant's webhook off; deliveries still due are dropped. */
    async deleteWebhook() {
        await this.call('DELETE', '/_emulator/webhooks');
    }
    /** Every attempt of the tenant's deliveries, oldest first. */
    async webhookDeliveries() {
        return (await this.call('GET', '/_emulator/webhooks/deliveries')).data;
    }
}
exports.Control = Control;
/** Where failed tests' snapshots go when no folder is named: $MEDIAGEN_SNAPSHOT_DIR, else mediagen-snapshots in the temporary folder. */
function snapshotDir() {
    return process.env[exports.SNAPSHOT_DIR_ENV] || (0, node_path_1.join)((0, node_os_1.tmpdir)(), 'mediagen-snapshots');
}
const json = (v) => (v === undefined ? 'undefined' : JSON.stringify(v));
// block cuts a long body and indents every line of it.
function block(v, pad, max = 2000) {
    let text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    if (text.length > max)
        text = `${text.slice(0, max)}… (${text.length - max} more characters)`;
    return text.replace(/^/gm, pad);
}
/** One journal entry on one line: #seq METHOD path -> status code. */
function formatEntry(e) {
    const query = e.query ? `?${e.query}` : '';
    return `#${e.seq} ${e.method} ${e.path}${query} -> ${e.status}${e.code ? ` ${e.code}` : ''}${e.time ? ` at ${e.time}` : ''}`;
}
/** The message of a failed assertRequested: what was wanted, what was found, and the near misses with each missed field. */
function formatVerification(pattern, v, times) {
    const want = times === undefined ? 'at least one request' : `${times} request${times === 1 ? '' : 's'}`;
    const lines = [`wanted ${want} matching ${json(pattern)}; found ${v.count}`];
    if (v.count > 0)
        lines.push(`  matching journal entries: ${v.matches.map((s) => `#${s}`).join(', ')}${v.count > v.matches.length ? ', …' : ''}`);
    const near = v.near_misses ?? [];
    if (near.length) {
        lines.push('near misses, closest first:');
        for (const m of near) {
            lines.push(`  ${formatEntry(m.entry)}`);
            for (const f of m.missed)
                lines.push(`      ${f.field}: wanted ${json(f.want)}, got ${f.got === null || f.got === undefined ? 'nothing' : json(f.got)}`);
        }
    }
    else if (v.count === 0) {
        lines.push('no near misses: the journal holds no request close to it');
    }
    return lines.join('\n');
}
/** The message of a failed assertNoUnexpected: each request with its bodies and the problem's detail. */
function formatUnexpected(items, total, tenant) {
    const lines = [`${total} unexpected error${total === 1 ? '' : 's'}${tenant ? ` in tenant ${tenant}` : ''} (declare the expected ones with expectError):`];
    for (const { entry: e, detail } of items) {
        lines.push(`  ${formatEntry(e)}${detail ? `: ${detail}` : ''}`);
        if (e.idempotency_key)
            lines.push(`      Idempotency-Key: ${e.idempotency_key}`);
        if (e.request_body !== undefined)
            lines.push('      request body:', block(e.request_body, '        '));
        if (e.response_body !== undefined)
            lines.push('      response body:', block(e.response_body, '        '));
    }
    if (total > items.length)
        lines.push(`  … and ${total - items.length} more`);
    return lines.join('\n');
}
