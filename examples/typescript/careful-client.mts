// The client of sloppy-client.mts done right: one Idempotency-Key per generation whatever the
// retries, Retry-After waited out, polls at a sensible pace, a fresh quote per generation, and
// outputs downloaded as soon as the job succeeds. And what real services do beyond the
// contract: an input the content policy refused is remembered and never sent again, a model whose
// answers say it is deprecated is left for its successor-version at once, and a partial result
// (job.filtered_outputs) is returned as what it is.

import { randomUUID } from 'node:crypto';

import { type ClientOptions, type Job, type Quote, type Render, ApiError, call, download, realSleep, successorOf, terminal } from './http.mjs';

export const POLL_INTERVAL_MS = 2_000;

export class CarefulClient {
  private readonly sleep: (ms: number) => Promise<unknown>;
  private readonly refused = new Map<string, ApiError>(); // by model and input: never sent again
  private readonly successor = new Map<string, string>(); // a deprecated model -> its successor

  constructor(private readonly opts: ClientOptions) {
    this.sleep = opts.sleep ?? realSleep;
  }

  quote(model: string, input: Record<string, unknown>, seen?: { headers?: Headers }): Promise<Quote> {
    return this.retrying(() => call<Quote>(this.opts, 'POST', '/v1/quotes', { model, input }, {}, seen));
  }

  async generate(model: string, input: Record<string, unknown>): Promise<Job> {
    model = this.successor.get(model) ?? model;
    const asked = JSON.stringify([model, input]);
    const known = this.refused.get(asked);
    if (known) throw known; // the same input would be refused again
    const seen: { headers?: Headers } = {};
    let { quote_id } = await this.quote(model, input, seen); // a quote buys one generation
    const next = seen.headers && successorOf(seen.headers);
    if (next && next !== model) {
      // The answer announced the model's deprecation: move before generating.
      this.successor.set(model, next);
      model = next;
      ({ quote_id } = await this.quote(model, input));
    }
    const key = randomUUID(); // chosen once: every retry of this generation sends it
    try {
      return await this.retrying(() => call<Job>(this.opts, 'POST', '/v1/generate', { model, input, quote_id }, { 'Idempotency-Key': key }));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'content_policy_violation') this.refused.set(asked, err);
      if (err instanceof ApiError && err.code === 'model_retired' && typeof err.problem.replacement === 'string') this.successor.set(model, err.problem.replacement);
      throw err;
    }
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
