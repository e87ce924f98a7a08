// A conformance adapter (and explore command) in TypeScript: a small careful client of the media
// generation service, run as `mediagen-emulator conformance` and `explore` run a command. It
// reads the service and the key from MEDIAGEN_EMULATOR_URL and MEDIAGEN_API_KEY, the task from
// MEDIAGEN_TASK ({"model", "input", "output_dir"}; without it one image of fal-ai/flux/schnell),
// and exits 0 with the outputs saved, 1 when the job failed or was refused or the service could
// not be reached, 2 when the task cannot be read. Only node's own modules and fetch.
//
//   node --experimental-strip-types examples/explore/adapter.mts      # node 22.6 or later
//   tsc -p examples/explore && node out/adapter.mjs                   # any node from 20
//
// It follows the rules careful_client.py follows, marked "Careful:" there.

import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TERMINAL = new Set(['succeeded', 'failed', 'canceled', 'expired']);
const ATTEMPTS = 8;
const MAX_RETRY_AFTER_MS = 30_000; // a longer Retry-After is not waited for: the adapter gives up instead
const EXTENSIONS: Record<string, string> = { 'image/png': '.png', 'image/jpeg': '.jpg', 'image/webp': '.webp', 'video/mp4': '.mp4', 'audio/wav': '.wav', 'audio/mpeg': '.mp3' };

interface Task {
  model: string;
  input?: Record<string, unknown>;
  output_dir?: string;
}

interface Output {
  url: string;
  content_type?: string;
  size_bytes?: number;
}

interface Job {
  id: string;
  status: string;
  outputs?: Output[];
  error?: unknown;
}

/** The generation cannot succeed: a failed job, a refusal, or retries run out; `code` is the service's problem code. */
class Failed extends Error {
  readonly code: string | undefined;
  readonly replacement: string | undefined;
  constructor(message: string, code?: string, replacement?: string) {
    super(message);
    this.code = code;
    this.replacement = replacement;
  }
}

/** The model a deprecated model's answer names as its successor-version (Deprecation, then Link), or undefined. */
function successorOf(headers: Headers): string | undefined {
  if (!headers.get('deprecation')) return undefined;
  for (const link of (headers.get('link') ?? '').split(',')) {
    const [target, ...params] = link.split(';');
    if (target && params.some((p) => p.trim() === 'rel="successor-version"')) return target.trim().replace(/^<|>$/g, '').split('/v1/models/').pop();
  }
  return undefined;
}

/** One answer: status 0 when none came whole. */
interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
  complete: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Milliseconds an answer's Retry-After asks for (seconds, or a date measured from the answer's Date), or undefined. */
function retryAfter(a: Answer): number | undefined {
  const value = a.headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const when = Date.parse(value);
  if (Number.isNaN(when)) return undefined;
  const sent = Date.parse(a.headers.get('date') ?? '') || Date.now(); // the service's clock, not this machine's
  return Math.max(0, when - sent);
}

class Client {
  readonly baseUrl: string;
  readonly apiKey: string;
  headers: Headers = new Headers(); // the last API answer's
  constructor(baseUrl: string, apiKey: string) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
  }

  async render(task: Task, dir: string): Promise<string[]> {
    const input = task.input ?? {};
    let model = task.model;
    for (let tries = 0; tries < 4; tries++) {
      let quote: { quote_id: string };
      try {
        quote = (await this.json('POST', '/v1/quotes', { model, input })) as { quote_id: string };
      } catch (err) {
        if (err instanceof Failed && err.code === 'model_retired' && err.replacement) {
          model = err.replacement; // retired: its replacement takes the same input
          continue;
        }
        throw err;
      }
      const successor = successorOf(this.headers);
      if (successor && successor !== model) {
        model = successor; // deprecated: move before generating on it
        continue;
      }
      const body = { model, input, quote_id: quote.quote_id };
      const key = randomUUID(); // one key per generation, sent again on every retry
      let job: Job;
      try {
        job = (await this.json('POST', '/v1/generate?wait=true', body, key)) as Job;
      } catch (err) {
        if (err instanceof Failed && err.code === 'quote_expired') continue; // nothing was made: a new quote, a new key
        if (err instanceof Failed && err.code === 'model_retired' && err.replacement) {
          model = err.replacement;
          continue;
        }
        throw err;
      }
      while (!TERMINAL.has(job.status)) {
        await sleep(200); // a wait=true again is a wait, not a poll; a status not known is waited through
        job = (await this.json('POST', '/v1/generate?wait=true', body, key)) as Job;
      }
      if (job.status !== 'succeeded') throw new Failed(`job ${job.id} ended ${job.status}: ${JSON.stringify(job.error)}`);
      mkdirSync(dir, { recursive: true });
      const paths: string[] = [];
      for (let i = 0; i < (job.outputs ?? []).length; i++) {
        let data: Buffer;
        [data, job] = await this.fetchOutput(job, i);
        const path = join(dir, `${job.id}-${i}${EXTENSIONS[job.outputs?.[i]?.content_type ?? ''] ?? ''}`);
        writeFileSync(path, data);
        paths.push(path);
      }
      return paths;
    }
    throw new Failed(`no generation of ${model} after its quotes expired or its model moved`);
  }

  /** One output's bytes and the job as last read: a cut body resumed with Range, an expired link (403) replaced by a read of the job. */
  async fetchOutput(job: Job, index: number): Promise<[Buffer, Job]> {
    let got: Buffer = Buffer.alloc(0);
    for (let attempt = 0; attempt < ATTEMPTS * 2; attempt++) {
      const out = job.outputs?.[index];
      if (!out) throw new Failed(`job ${job.id} no longer lists output ${index}`);
      const a = await this.send('GET', out.url, undefined, got.length ? { Range: `bytes=${got.length}-` } : {}, false);
      if (a.status === 206 && got.length) got = Buffer.concat([got, a.body]);
      else if (a.status === 200) got = a.body;
      else if (a.status === 416 && got.length) return [got, job];
      else if (a.status === 403) {
        job = (await this.json('GET', `/v1/jobs/${job.id}`)) as Job;
        continue;
      } else if (a.status === 0 || a.status === 429 || a.status >= 500) {
        await this.pause(a, 0);
        continue;
      } else throw new Failed(`output ${index} of job ${job.id}: ${a.status}`);
      if (typeof out.size_bytes === 'number' ? got.length >= out.size_bytes : a.complete) return [got, job];
    }
    throw new Failed(`output ${index} of job ${job.id}: the download never completed`);
  }

  /** One API request, sent again exactly as it was (its key too) while its answer is ambiguous or asks to be retried. */
  async json(method: string, path: string, body?: unknown, key?: string): Promise<unknown> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const a = await this.send(method, path, body, key ? { 'Idempotency-Key': key } : {}, true);
      this.headers = a.headers;
      if (a.status >= 200 && a.status < 300 && a.complete) {
        try {
          return JSON.parse(a.body.toString('utf8'));
        } catch {
          // a broken body: nothing says what happened
        }
      } else if (a.status >= 300 && a.status !== 429 && a.status < 500) {
        let problem: { code?: string; replacement?: string } = {};
        try {
          problem = JSON.parse(a.body.toString('utf8')) as typeof problem;
        } catch {
          problem = {};
        }
        throw new Failed(`${method} ${path}: ${a.status} ${a.body.toString('utf8').slice(0, 300)}`, problem.code, problem.replacement); // never sent again as it is
      }
      await this.pause(a, attempt);
    }
    throw new Failed(`${method} ${path}: no answer after ${ATTEMPTS} attempts`);
  }

  async pause(a: Answer, attempt: number): Promise<void> {
    const ms = retryAfter(a) ?? Math.min(50 * 2 ** attempt, 2000);
    if (ms > MAX_RETRY_AFTER_MS) throw new Failed(`the service asks to wait ${ms / 1000} s before trying again`);
    await sleep(ms);
  }

  async send(method: string, url: string, body: unknown, extra: Record<string, string>, auth: boolean): Promise<Answer> {
    const headers: Record<string, string> = { ...extra };
    if (auth) headers.Authorization = `Bearer ${this.apiKey}`; // never the key on a file URL
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const target = url.startsWith('http') ? url : this.baseUrl + url;
    let resp: Response;
    try {
      resp = await fetch(target, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
    } catch {
      return { status: 0, headers: new Headers(), body: Buffer.alloc(0), complete: false };
    }
    const chunks: Buffer[] = [];
    let complete = true;
    try {
      for await (const chunk of resp.body ?? []) chunks.push(Buffer.from(chunk as Uint8Array));
    } catch {
      complete = false; // cut short: what came is kept, for a Range
    }
    return { status: resp.status, headers: resp.headers, body: Buffer.concat(chunks), complete };
  }
}

async function main(): Promise<number> {
  let task: Task;
  try {
    task = process.env.MEDIAGEN_TASK ? (JSON.parse(process.env.MEDIAGEN_TASK) as Task) : { model: 'fal-ai/flux/schnell', input: { prompt: 'a red fox in the snow' } };
    if (typeof task.model !== 'string') throw new Error('no model');
  } catch (err) {
    console.error(`MEDIAGEN_TASK is not a task {"model", "input", "output_dir"}: ${(err as Error).message}`);
    return 2;
  }
  const dir = task.output_dir || mkdtempSync(join(tmpdir(), 'mediagen-outputs-'));
  const client = new Client((process.env.MEDIAGEN_EMULATOR_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''), process.env.MEDIAGEN_API_KEY ?? 'mg_test_all');
  try {
    const paths = await client.render(task, dir);
    console.error(`saved ${paths.length} output${paths.length === 1 ? '' : 's'}: ${paths.join(' ')}`);
    return 0;
  } catch (err) {
    if (!(err instanceof Failed)) throw err;
    console.error(`failed: ${err.message}`);
    return 1;
  } finally {
    if (!task.output_dir) rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
