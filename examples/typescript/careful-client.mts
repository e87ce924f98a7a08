// The client of sloppy-client.mts done right: one Idempotency-Key per generation whatever the
// retries, Retry-After waited out, polls at a sensible pace, a fresh quote per generation, and
// outputs downloaded as soon as the job succeeds.

import { randomUUID } from 'node:crypto';

import { type ClientOptions, type Job, type Quote, type Render, ApiError, call, download, realSleep, terminal } from './http.mjs';

export const POLL_INTERVAL_MS = 2_000;

export class CarefulClient {
  private readonly sleep: (ms: number) => Promise<unknown>;

  constructor(private readonly opts: ClientOptions) {
    this.sleep = opts.sleep ?? realSleep;
  }

  quote(model: string, input: Record<string, unknown>): Promise<Quote> {
    return this.retrying(() => call<Quote>(this.opts, 'POST', '/v1/quotes', { model, input }));
  }

  async generate(model: string, input: Record<string, unknown>): Promise<Job> {
    const { quote_id } = await this.quote(model, input); // a quote buys one generation
    const key = randomUUID(); // chosen once: every retry of this generation sends it
    return this.retrying(() => call<Job>(this.opts, 'POST', '/v1/generate', { model, input, quote_id }, { 'Idempotency-Key': key }));
  }

  async poll(id: string): Promise<Job> {
    for (;;) {
      const job = await this.retrying(() => call<Job>(this.opts, 'GET', `/v1/jobs/${encodeURIComponent(id)}`));
      if (terminal(job)) return job; // and never asked again
      await this.sleep(POLL_INTERVAL_MS);
    }
  }

  async render(model: string, input: Record<string, unknown>): Promise<Render> {
    const job = await this.poll((await this.generate(model, input)).id);
    const files = job.status === 'succeeded' ? await Promise.all(job.outputs.map((o) => download(this.opts, o.url))) : [];
    return { job, files };
  }

  /** Sends again what may succeed again (no answer, 5xx, 429), after Retry-After or a backoff. */
  private async retrying<T>(send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (err) {
        if (!(err instanceof ApiError) || !(err.ambiguous || err.status === 429) || attempt >= 4) throw err;
        await this.sleep(err.retryAfter !== undefined ? err.retryAfter * 1000 : 500 * 2 ** attempt);
      }
    }
  }
}
