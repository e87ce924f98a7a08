"use strict";
// A webhook receiver for tests: it verifies each delivery as the Standard Webhooks specification
// describes (HMAC-SHA256 over "id.timestamp.body" with the secret's bytes, a timestamp within
// five minutes), collects them, and lets a test await its job's event.
Object.defineProperty(exports, "__esModule", { value: true });
exports.WebhookReceiver = exports.WebhookVerificationError = exports.WEBHOOK_TOLERANCE_MS = void 0;
exports.newSecret = newSecret;
exports.verifyWebhook = verifyWebhook;
exports.webhookReceiver = webhookReceiver;
const node_crypto_1 = require("node:crypto");
const node_http_1 = require("node:http");
const control_js_1 = require("./control.js");
/** How far a delivery's webhook-timestamp may be from the receiver's clock, in milliseconds. */
exports.WEBHOOK_TOLERANCE_MS = 5 * 60_000;
/** A delivery that does not verify. */
class WebhookVerificationError extends Error {
    constructor(message) {
        super(message);
        this.name = 'WebhookVerificationError';
    }
}
exports.WebhookVerificationError = WebhookVerificationError;
/** A fresh whsec_ secret of 32 random bytes. */
function newSecret() {
    return `whsec_${(0, node_crypto_1.randomBytes)(32).toString('base64')}`;
}
/**
 * Checks a delivery and returns its parsed body; throws a WebhookVerificationError otherwise.
 * headers is a plain object or a Headers; body the raw bytes or text as received.
 */
function verifyWebhook(secret, headers, body, now = new Date()) {
    const get = (name) => (typeof headers.get === 'function' ? headers.get(name) : headers[name] ?? headers[name.toLowerCase()]);
    const id = get('webhook-id');
    const ts = get('webhook-timestamp');
    const sigs = get('webhook-signature');
    if (!id || !ts || !sigs)
        throw new WebhookVerificationError('webhook-id, webhook-timestamp or webhook-signature is missing');
    if (!/^\d+$/.test(ts))
        throw new WebhookVerificationError('webhook-timestamp is not an integer');
    if (Math.abs(now.getTime() - Number(ts) * 1000) > exports.WEBHOOK_TOLERANCE_MS) {
        throw new WebhookVerificationError('webhook-timestamp is more than 5 minutes from now');
    }
    const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
    const raw = Buffer.isBuffer(body) ? body : Buffer.from(String(body));
    const want = (0, node_crypto_1.createHmac)('sha256', key).update(`${id}.${ts}.`).update(raw).digest();
    for (const sig of String(sigs).split(' ')) {
        const [version, b64] = sig.split(',', 2);
        if (version !== 'v1' || !b64)
            continue;
        const got = Buffer.from(b64, 'base64');
        if (got.length === want.length && (0, node_crypto_1.timingSafeEqual)(got, want))
            return JSON.parse(raw.toString('utf8'));
    }
    throw new WebhookVerificationError('no signature matches');
}
/**
 * Listens on 127.0.0.1 and verifies every delivery with its secret against now() (the emulator's
 * clock when made by webhookReceiver). A valid delivery is answered with answer(delivery) (204 by
 * default), any other with 401. Start it with WebhookReceiver.start; close it when done.
 */
class WebhookReceiver {
    #server;
    #waiters = new Set();
    constructor(server, { secret, now, answer }) {
        this.#server = server;
        this.secret = secret;
        this.now = now;
        this.answer = answer;
        /** Every request received, valid or not, in order: {id, timestamp, headers, body, event, error, status}. */
        this.deliveries = [];
    }
    /** Starts a receiver; options: secret (a fresh one by default), now (a function giving a Date), answer. */
    static async start({ secret = newSecret(), now = async () => new Date(), answer } = {}) {
        let receiver;
        const server = (0, node_http_1.createServer)((req, res) => {
            const chunks = [];
            req.on('data', (c) => chunks.push(c));
            req.on('end', () => receiver.#receive(req, Buffer.concat(chunks), res));
        });
        await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
        receiver = new WebhookReceiver(server, { secret, now, answer });
        return receiver;
    }
    /** Where deliveries go. */
    get url() {
        const { port } = this.#server.address();
        return `http://127.0.0.1:${port}/webhooks`;
    }
    async #receive(req, body, res) {
        const d = { id: req.headers['webhook-id'] ?? '', timestamp: Number(req.headers['webhook-timestamp'] ?? 0), headers: req.headers, body, event: undefined, error: undefined, status: 204 };
        try {
            d.event = verifyWebhook(this.secret, req.headers, body, await this.now());
            if (this.answer)
                d.status = this.answer(d);
        }
        catch (err) {
            d.error = err instanceof Error ? err.message : String(err);
            d.status = 401;
        }
        this.deliveries.push(d);
        for (const w of this.#waiters)
            w();
        res.writeHead(d.status).end();
    }
    /**
     * The first valid delivery of a job's event, waiting up to timeoutMs of real time. On a manual
     * clock deliveries go out when the clock is advanced: advance it first.
     */
    waitFor(jobId, event = 'job.succeeded', { timeoutMs = 30_000 } = {}) {
        const found = () => this.deliveries.find((d) => d.event && d.event.type === event && d.event.data?.id === jobId);
        return new Promise((resolve, reject) => {
            const check = () => {
                const d = found();
                if (!d)
                    return;
                cleanup();
                resolve(d);
            };
            const timer = setTimeout(() => {
                cleanup();
                reject(new control_js_1.EmulatorTimeoutError(`no valid ${event} delivery for job ${jobId} within ${timeoutMs} ms; received ${this.deliveries.length} requests`));
            }, timeoutMs);
            const cleanup = () => {
                clearTimeout(timer);
                this.#waiters.delete(check);
            };
            this.#waiters.add(check);
            check();
        });
    }
    /** Stops listening. */
    close() {
        return new Promise((resolve) => {
            this.#server.closeAllConnections?.();
            this.#server.close(() => resolve());
        });
    }
}
exports.WebhookReceiver = WebhookReceiver;
/**
 * Starts a WebhookReceiver that checks timestamps against the control's tenant clock and points
 * that tenant's webhook at it; options: events, audit, chaos.
 */
async function webhookReceiver(control, { events, audit = false, chaos } = {}) {
    const receiver = await WebhookReceiver.start({ now: () => control.now() });
    try {
        await control.setWebhook({ url: receiver.url, secret: receiver.secret, events, audit, chaos });
    }
    catch (err) {
        await receiver.close();
        throw err;
    }
    return receiver;
}
