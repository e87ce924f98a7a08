// A client with the mistakes that pass a plain stub and cost money or goodwill against the real
// service. Each one is marked FLAW with the report rule that names it; careful-client.mts is
// the same client done right.

import { randomUUID } from 'node:crypto';

import { type ClientOptions, type Job, type Quote, type Render, ApiError, call, realSleep, terminal } from './http.mjs';

export class SloppyClient {
  private readonly sleep: (ms: number) => Promise<unknown>;
  // FLAW (quote-reused, expired-quote): quotes are cached per model and input, forever, as if a
  // quote bought any number of generations and never expired.
  private readonly quotes = new Map<string, Quote>();

  constructor(private readonly opts: ClientOptions) {
    this.sleep = opts.sleep ?? realSleep;
  }

  async quote(model: string, input: Record<string, unknown>): Promise<Quote> {
    const key = JSON.stringify([model, input]);
    let q = this.quotes.get(key);
    if (!q) {
      q = await call<Quote>(this.opts, 'POST', '/v1/quotes', { model, input });
      this.quotes.set(key, q);
    }
    return q;
  }

  async generate(model: string, input: Record<string, unknown>): Promise<Job> {
    const { quote_id } = await this.quote(model, input);
    for (let attempt = 1; ; attempt++) {
      try {
        // FLAW (new-key-on-retry): a new Idempotency-Key on every attempt, so a retry after a
        // 5xx or a reset the service did act on makes a second job: a double charge.
        return await call<Job>(this.opts, 'POST', '/v1/generate', { model, input, quote_id }, { 'Idempotency-Key': randomUUID() });
      } catch (err) {
        // FLAW (retry-after-ignored): retries at once, whatever Retry-After said.
        if (err instanceof ApiError && (err.ambiguous || err.status === 429) && attempt < 3) continue;
        throw err;
      }
    }
  }

  async poll(id: string): Promise<Job> {
    for (;;) {
      const job = await call<Job>(this.opts, 'GET', `/v1/jobs/${encodeURIComponent(id)}`);
      if (terminal(job)) return job;
      await this.sleep(100); // FLAW (poll-too-fast): ten requests a second per job
    }
  }

  /** Renders a model that edits an image, served from the developer's machine. */
  // FLAW (unreachable-input-url): the image's URL is one of this machine, where it worked in
  // development; the hosted service fetches inputs from its own network, where 127.0.0.1 is
  // itself. The generation is refused (or, on a real service, fails as the job starts).
  edit(model: string, input: Record<string, unknown>, imagePath = 'cat.png'): Promise<Render> {
    return this.render(model, { ...input, image_url: `http://127.0.0.1:5173/${imagePath}` });
  }

  /** Quote, generate, wait for the job. */
  // FLAW (deprecated-model-used): the Deprecation and Link headers are never read, so a
  // deprecated model is used until the day it is retired.
  // FLAW (retry-unchanged): a refusal (422 content_policy_violation) is not remembered; the next
  // render of the same input sends it again, to be refused again.
  async render(model: string, input: Record<string, unknown>): Promise<Render> {
    const job = await this.poll((await this.generate(model, input)).id);
    // FLAW (outputs-never-downloaded): hands back the URLs only; they expire before anyone looks.
    return { job, files: [] };
  }
}
