// What both example clients share: the service's types they use and one HTTP call. A client
// library would have its own; nothing here knows about the emulator.

export interface Quote {
  quote_id: string;
  model: string;
  credits: number;
  expires_at: string;
}

export interface Output {
  url: string;
  content_type: string;
  /** An image's (or a video's) size in pixels. */
  width?: number;
  height?: number;
}

/** A file the service keeps for a while (POST /v1/uploads): its url goes in a media input. */
export interface Upload {
  id: string;
  url: string;
  expires_at: string;
}

export interface Job {
  id: string;
  model: string;
  /** On a partial result: how many of the outputs asked for were filtered out. */
  filtered_outputs?: number;
  /** While the job waits behind the account's concurrency limit: its place in the line, from 1. */
  queue_position?: number;
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled' | 'expired';
  outputs: Output[];
  error?: { code: string; message: string } | null;
}

/** A finished render: the job and, when the client fetched them, its outputs' bytes. */
export interface Render {
  job: Job;
  files: Buffer[];
}

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** How the client waits; tests on the emulator's manual clock pass (ms) => control.advance(ms). */
  sleep?: (ms: number) => Promise<unknown>;
}

/** An answer that is not a success (or no answer at all: status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    /** Seconds from Retry-After, when the answer had one. */
    readonly retryAfter: number | undefined,
    message: string,
    /** The problem body, when the answer had one. */
    readonly problem: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** Whether the request may have been acted on and may succeed if sent again. */
  get ambiguous(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

export const realSleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends one request; resolves with the JSON answer, rejects with an ApiError. The answer's
 * headers are left in seen, when given. */
export async function call<T>(opts: ClientOptions, method: string, path: string, body?: unknown, headers: Record<string, string> = {},
  seen?: { headers?: Headers }): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch(new URL(path, opts.baseUrl), {
      method,
      headers: { Authorization: `Bearer ${opts.apiKey}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, 'no_answer', undefined, `${method} ${path}: ${(err as Error).message}`);
  }
  if (seen) seen.headers = resp.headers;
  const text = await resp.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    throw new ApiError(resp.ok ? 0 : resp.status, 'bad_answer', undefined, `${method} ${path}: ${resp.status} and a body that is not JSON`);
  }
  if (!resp.ok) {
    const problem = (json ?? {}) as { code?: string; detail?: string };
    const ra = resp.headers.get('Retry-After');
    throw new ApiError(resp.status, problem.code ?? 'error', ra === null ? undefined : Number(ra), `${method} ${path}: ${resp.status} ${problem.code}: ${problem.detail}`,
      problem as Record<string, unknown>);
  }
  return json as T;
}

/** Sends a file (its bytes, of a type) to POST /v1/uploads; resolves with the upload. */
export async function upload(opts: ClientOptions, file: Uint8Array, contentType: string): Promise<Upload> {
  let resp: Response;
  try {
    resp = await fetch(new URL('/v1/uploads', opts.baseUrl), {
      method: 'POST',
      headers: { Authorization: `Bearer ${opts.apiKey}`, 'Content-Type': contentType },
      body: new Uint8Array(file), // a copy of its own, as fetch takes it
    });
  } catch (err) {
    throw new ApiError(0, 'no_answer', undefined, `POST /v1/uploads: ${(err as Error).message}`);
  }
  const json = (await resp.json().catch(() => ({}))) as { code?: string; detail?: string };
  if (!resp.ok) {
    const ra = resp.headers.get('Retry-After');
    throw new ApiError(resp.status, json.code ?? 'error', ra === null ? undefined : Number(ra), `POST /v1/uploads: ${resp.status} ${json.code}: ${json.detail}`,
      json as Record<string, unknown>);
  }
  return json as unknown as Upload;
}

/** Fetches one output file. */
export async function download(opts: ClientOptions, url: string): Promise<Buffer> {
  const resp = await fetch(new URL(url, opts.baseUrl));
  if (!resp.ok) throw new ApiError(resp.status, 'download_failed', undefined, `GET ${url}: ${resp.status}`);
  return Buffer.from(await resp.arrayBuffer());
}

/** The model a deprecated model's answer names as its successor-version: Deprecation (RFC 9745)
 * says the model is deprecated, Link names the model to move to. */
export function successorOf(headers: Headers): string | undefined {
  if (!headers.get('Deprecation')) return undefined;
  for (const link of (headers.get('Link') ?? '').split(',')) {
    const [target, ...params] = link.split(';');
    if (target && params.some((p) => p.trim() === 'rel="successor-version"')) {
      return target.trim().replace(/^<|>$/g, '').replace(/^\/v1\/models\//, '');
    }
  }
  return undefined;
}

/** Whether a job has ended: only the four terminal statuses say so; any other, even one a later
 * version of the API adds (a scenario's `evolution` shows `preparing`), means not yet. */
export const terminal = (job: Job) => (['succeeded', 'failed', 'canceled', 'expired'] as string[]).includes(job.status);
