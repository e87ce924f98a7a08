// The client of sloppy-client.mts done right: one Idempotency-Key per generation whatever the
// retries, Retry-After waited out, polls at a sensible pace, a fresh quote per generation, and
// outputs downloaded as soon as the job succeeds. And what real services do beyond the
// contract: an input the content policy refused is remembered and never sent again, a model whose
// answers say it is deprecated is left for its successor-version at once, a partial result
// (job.filtered_outputs) is returned as what it is, a signed output link found expired (403)
// is never fetched again: a read of the job gives a fresh one, a job queued behind the account's
// concurrency limit is waited for however long its line (its queue_position passed to
// onQueued, for a progress display), and a 429 concurrency_limited, like any 429, is sent again
// with the same key once Retry-After has passed. An edit (image-to-image, inpainting) uploads its
// image (POST /v1/uploads) once per file and sends the upload's url, never a URL of this
// machine, which the hosted service cannot reach; an upload that expired while the job waited in
// the queue (input_expired) is uploaded again, once.

import { createHash, randomUUID } from 'node:crypto';

import { type ClientOptions, type Job, type Quote, type Render, type Upload, ApiError, call, download, realSleep, successorOf, terminal, upload } from './http.mjs';

export const POLL_INTERVAL_MS = 2_000;
/** How many times one output's link is replaced by a fresh one from a read of the job. */
export const LINK_REFRESHES = 3;

export class CarefulClient {
  private readonly sleep: (ms: number) => Promise<unknown>;
  private readonly refused = new Map<string, ApiError>(); // by model and input: never sent again
  private readonly successor = new Map<string, string>(); // a deprecated model -> its successor
  private readonly uploads = new Map<string, Upload>(); // by the file's sha256: reused while it lasts
  /** Told each new queue_position of a job waiting for a concurrency slot. */
  onQueued?: (job: Job, position: number) => void;

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
    let position: number | undefined;
    for (;;) {
      const job = await this.retrying(() => call<Job>(this.opts, 'GET', `/v1/jobs/${encodeURIComponent(id)}`));
      if (terminal(job)) return job; // and never asked again
      // A job waiting for a concurrency slot is not stuck: its place only moves up, and the
      // service expires it if it never starts, so no deadline is put on it here.
      if (job.queue_position && job.queue_position !== position) this.onQueued?.(job, (position = job.queue_position));
      await this.sleep(POLL_INTERVAL_MS);
    }
  }

  async render(model: string, input: Record<string, unknown>): Promise<Render> {
    let job = await this.poll((await this.generate(model, input)).id);
    const files: Buffer[] = [];
    for (let i = 0; job.status === 'succeeded' && i < job.outputs.length; i++) {
      let file: Buffer;
      ({ file, job } = await this.fetchOutput(job, i)); // a refreshed job's links serve the later outputs too
      files.push(file);
    }
    return { job, files };
  }

  /** The upload of a file, made once per file: the same bytes reuse their upload's url. */
  async upload(file: Uint8Array, contentType: string): Promise<Upload> {
    const digest = createHash('sha256').update(file).digest('hex');
    let up = this.uploads.get(digest);
    if (!up) {
      up = await this.retrying(() => upload(this.opts, file, contentType));
      this.uploads.set(digest, up);
    }
    return up;
  }

  /** Renders a model that edits an image (its bytes), uploaded and sent as member (image_url):
   * the outputs have the image's size unless the input names another. */
  async edit(model: string, image: Uint8Array, input: Record<string, unknown>, contentType = 'image/png', member = 'image_url'): Promise<Render> {
    for (let attempt = 1; ; attempt++) {
      const up = await this.upload(image, contentType);
      // The service fetches the input itself: only a URL it can reach will do.
      const done = await this.render(model, { ...input, [member]: up.url });
      if (attempt > 1 || done.job.status !== 'failed' || done.job.error?.code !== 'input_expired') return done;
      // The upload expired while the job waited in the queue: a new upload, once.
      this.uploads.delete(createHash('sha256').update(image).digest('hex'));
    }
  }

  /** Fetches one output file; without the key, which file URLs neither need nor accept. */
  protected download(url: string): Promise<Buffer> {
    return download(this.opts, url);
  }

  /** The bytes of the job's output at index, and the job as last read. */
  private async fetchOutput(job: Job, index: number): Promise<{ file: Buffer; job: Job }> {
    for (let refresh = 0; ; refresh++) {
      const output = job.outputs[index];
      if (!output) throw new ApiError(403, 'download_failed', undefined, `job ${job.id} no longer lists output ${index}`);
      try {
        return { file: await this.download(output.url), job };
      } catch (err) {
        if (!(err instanceof ApiError) || err.status !== 403 || refresh >= LINK_REFRESHES) throw err;
      }
      // A signed link may expire before its file does, and would be refused again: a read of the
      // job gives a fresh one.
      job = await this.retrying(() => call<Job>(this.opts, 'GET', `/v1/jobs/${encodeURIComponent(job.id)}`));
    }
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
