"use strict";
// A client for the emulator's control API (/_emulator/...), bound to one tenant.
// Plain JavaScript with types in index.d.ts: nothing to build at install.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Control = exports.EmulatorTimeoutError = exports.EmulatorError = exports.ADMIN_TOKEN_HEADER = exports.TENANT_HEADER = void 0;
exports.durationText = durationText;
exports.timeText = timeText;
exports.TENANT_HEADER = 'X-Emulator-Tenant';
exports.ADMIN_TOKEN_HEADER = 'X-Emulator-Admin-Token';
/** An answer from the emulator that is not a success, with its problem body. */
class EmulatorError extends Error {
    constructor(method, path, status, problem, text) {
        const detail = problem?.detail ?? text?.slice(0, 300) ?? '';
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
    constructor(baseUrl, { tenant, adminToken, timeoutMs = 60_000 } = {}) {
        this.baseUrl = String(baseUrl).replace(/\/+$/, '');
        this.tenant = tenant ?? undefined;
        this.adminToken = adminToken || undefined;
        this.timeoutMs = timeoutMs;
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
    async call(method, path, { body, query, timeoutMs } = {}) {
        let url = this.baseUrl + path;
        if (query) {
            const params = new URLSearchParams();
            for (const [k, v] of Object.entries(query))
                if (v !== undefined && v !== null)
                    params.set(k, String(v));
            const qs = params.toString();
            if (qs)
                url += `?${qs}`;
        }
        const headers = this.headers;
        if (body !== undefined)
            headers['Content-Type'] = 'application/json';
        const resp = await fetch(url, {
            method,
            headers,
            body: body === undefined ? undefined : JSON.stringify(body),
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
        return text ? JSON.parse(text) : undefined;
    }
    health() {
        return this.call('GET', '/_emulator/health');
    }
    reset() {
        return this.call('POST', '/_emulator/reset');
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
    async waitForWaiting(count = 1, { timeoutMs = 10_000 } = {}) {
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
}
exports.Control = Control;
