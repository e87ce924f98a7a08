// A tiny /v1 client for the tests, standing in for a user's own client library.

import { DEFAULT_KEY } from '../index.js';

export class Client {
  /** Sends /v1 requests as one tenant, by its key form or by its header, and counts them. */
  constructor(tenant, { byHeader = false } = {}) {
    this.tenant = tenant;
    this.byHeader = byHeader;
    this.sent = 0;
  }

  async request(method, path, { body, headers = {} } = {}) {
    const hdrs = { ...headers };
    if (this.byHeader) {
      Object.assign(hdrs, this.tenant.headers);
      hdrs.Authorization = `Bearer ${DEFAULT_KEY}`;
    } else {
      hdrs.Authorization = `Bearer ${this.tenant.apiKey}`;
    }
    if (body !== undefined) hdrs['Content-Type'] = 'application/json';
    this.sent++;
    const resp = await fetch(this.tenant.baseUrl + path, { method, headers: hdrs, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await resp.text();
    return { status: resp.status, headers: resp.headers, json: text && resp.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined, text };
  }

  async quote(model, input) {
    const resp = await this.request('POST', '/v1/quotes', { body: { model, input } });
    if (resp.status !== 200) throw new Error(`quote: ${resp.status} ${resp.text}`);
    return resp.json;
  }

  async generate(model, input, idempotencyKey, { quoteId, wait = false, headers = {} } = {}) {
    quoteId ??= (await this.quote(model, input)).quote_id;
    return this.request('POST', `/v1/generate${wait ? '?wait=true' : ''}`, {
      body: { model, input, quote_id: quoteId },
      headers: { 'Idempotency-Key': idempotencyKey, ...headers },
    });
  }
}

/** The default tenant as a Tenant: the plain key and no header. */
export function defaultTenant(emu) {
  return { name: 'default', baseUrl: emu.url, apiKey: DEFAULT_KEY, headers: {}, control: emu.control };
}

const models = new Map();

/** The first text-to-image model of the emulator's catalog. */
export async function imageModel(baseUrl) {
  if (!models.has(baseUrl)) {
    const resp = await fetch(`${baseUrl}/v1/models?category=text-to-image&limit=1`, { headers: { Authorization: `Bearer ${DEFAULT_KEY}` } });
    models.set(baseUrl, (await resp.json()).data[0].id);
  }
  return models.get(baseUrl);
}

/**
 * A world of the test's own: a tenant when the emulator has tenants; otherwise the default
 * tenant, reset (only safe when this file is the emulator's only user).
 */
export async function own(t, emu) {
  if (await emu.supportsTenants()) {
    const tenant = emu.newTenant(t.name);
    t.after(() => tenant.delete());
    return tenant;
  }
  await emu.control.reset();
  return defaultTenant(emu);
}
