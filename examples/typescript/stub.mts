// The plain stub a client's own tests often run against: a few lines of node:http that answer
// the happy path, plus a switch to fail the next generations with 503. It checks nothing about
// how it is called, which is why the sloppy client passes here.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Stub {
  baseUrl: string;
  /** How many of the next POST /v1/generate answer 503 with Retry-After: 1. */
  failGenerations: number;
  /** Every request, as "METHOD /path". */
  seen: string[];
  close(): Promise<void>;
}

const PNG = Buffer.from('89504e470d0a1a0a', 'hex');

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : {};
}

export async function startStub(): Promise<Stub> {
  const polls = new Map<string, number>();
  const stub = { failGenerations: 0, seen: [] as string[] } as Stub;
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(json));
    };
    const path = new URL(req.url ?? '/', 'http://stub').pathname;
    stub.seen.push(`${req.method} ${path}`);
    const payload = req.method === 'POST' ? await body(req) : {};
    if (req.method === 'POST' && path === '/v1/quotes') {
      return send(200, { quote_id: randomUUID(), model: payload.model, credits: 2, expires_at: new Date(Date.now() + 600_000).toISOString() });
    }
    if (req.method === 'POST' && path === '/v1/generate') {
      if (stub.failGenerations > 0) {
        stub.failGenerations--;
        return send(503, { status: 503, code: 'service_unavailable', detail: 'stub outage' }, { 'Retry-After': '1' });
      }
      const id = randomUUID();
      polls.set(id, 0);
      return send(202, { id, status: 'queued', outputs: [] });
    }
    const job = /^\/v1\/jobs\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && job && polls.has(job[1]!)) {
      const n = polls.get(job[1]!)! + 1;
      polls.set(job[1]!, n);
      const done = n >= 3; // the third poll sees it finished
      return send(200, { id: job[1], status: done ? 'succeeded' : 'running', outputs: done ? [{ url: `/files/${job[1]}/0.png`, content_type: 'image/png' }] : [] });
    }
    if (req.method === 'GET' && path.startsWith('/files/')) {
      return res.writeHead(200, { 'Content-Type': 'image/png' }).end(PNG);
    }
    send(404, { status: 404, code: 'not_found', detail: path });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.close = () => new Promise((resolve) => server.close(() => resolve()));
  return stub;
}
