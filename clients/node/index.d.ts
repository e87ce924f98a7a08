// Types of @mediagen/emulator-testing. The package is plain JavaScript (index.js, control.js,
// emulator.js); these declarations are written by hand and checked against it by the tests.
// The wire types (what the emulator sends and takes) are generated from its OpenAPI document
// into types.d.ts and re-exported from here.

import type { ChildProcess } from 'node:child_process';
import type {
  Balance,
  ControlJob,
  ControlUpload,
  Bundle,
  Clock,
  Coverage,
  Drawn,
  Fault,
  Perturbation,
  Health,
  Job,
  JournalEntry,
  Plan,
  PlanInForce,
  Problem,
  Report,
  RequestMatch,
  RequestPattern,
  ResetResult,
  Scenario,
  Snapshot,
  SnapshotResult,
  Tenant as WireTenant,
  Upload,
  UnexpectedError,
  Verdict,
  Verification,
  WebhookAttempt,
  WebhookChaos,
  WebhookEvent,
  Webhooks,
} from './types.js';

export * from './types.js';

/** Header that chooses the tenant of a request. */
export declare const TENANT_HEADER: 'X-Emulator-Tenant';
/** Header that carries the control API's token when the emulator runs with --admin-token. */
export declare const ADMIN_TOKEN_HEADER: 'X-Emulator-Admin-Token';
/** Environment variable naming the emulator binary. */
export declare const BIN_ENV: 'MEDIAGEN_EMULATOR_BIN';
/** Environment variable with the URL of a running emulator to attach to. */
export declare const URL_ENV: 'MEDIAGEN_EMULATOR_URL';
/** Environment variable with the admin token of an emulator attached to. */
export declare const ADMIN_TOKEN_ENV: 'MEDIAGEN_ADMIN_TOKEN';
/** The embedded catalog's key with models:read and generate. */
export declare const DEFAULT_KEY: 'mg_test_all';
/** Environment variable holding the key a client under test is run with (explore, conformance); with $MEDIAGEN_TENANT, tenantFor gives every test that tenant. */
export declare const KEY_ENV: 'MEDIAGEN_API_KEY';
/** Environment variable naming the tenant a client under test is run in (explore, conformance); tenantFor then gives every test that tenant and never deletes it. */
export declare const TENANT_ENV: 'MEDIAGEN_TENANT';
/** Environment variable naming a bundle (or plan) file: explore then runs its test once, under that plan. */
export declare const PLAN_ENV: 'MEDIAGEN_PLAN';
/** Environment variable naming where failed tests' snapshots go; when set, tenantFor saves them. */
export declare const SNAPSHOT_DIR_ENV: 'MEDIAGEN_SNAPSHOT_DIR';
/** Where failed tests' snapshots go when no folder is named: $MEDIAGEN_SNAPSHOT_DIR, else mediagen-snapshots in the temporary folder. */
export declare function snapshotDir(): string;

/** A Go duration string ("90s", "1h30m") or a number of milliseconds. */
export type Duration = string | number;

/** An answer from the emulator that is not a success. */
export declare class EmulatorError extends Error {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly code: string | undefined;
  readonly detail: string | undefined;
  /** The problem body; empty when the answer was not one. */
  readonly problem: Partial<Problem>;
}

/** What the test waited for did not happen in time. */
export declare class EmulatorTimeoutError extends Error {}

/** The emulator binary could not be found or did not start listening. */
export declare class EmulatorStartError extends Error {}

/** Which requests a fault applies to (an older name of RequestMatch). */
export type FaultMatch = RequestMatch;

/** A fault rule to add, as in a scenario file; a number as `delay` is milliseconds. */
export interface FaultSpec extends Omit<Perturbation, 'delay'> {
  delay?: Duration;
}

/** A whole scenario document (the YAML format, as JSON). */
export type ScenarioDocument = Record<string, unknown>;

/**
 * Which journal entries to list: the simple members of a request pattern (path and model are
 * globs: * within a segment, ** across), and a page.
 */
export type JournalFilter = Pick<RequestPattern, 'method' | 'path' | 'status' | 'code' | 'account' | 'model'> & {
  limit?: number;
  offset?: number;
};

/** One tenant in tenants() (an older name of the wire type Tenant). */
export type TenantInfo = WireTenant;

export interface ControlOptions {
  tenant?: string;
  adminToken?: string;
  timeoutMs?: number;
  /** The clock mode reset() puts the tenant back on; default the emulator's configured mode. */
  clockMode?: ClockMode;
}

/** The control API of one emulator, acting on one tenant (the default one when tenant is undefined). */
export declare class Control {
  constructor(baseUrl: string, options?: ControlOptions);
  readonly baseUrl: string;
  readonly tenant: string | undefined;
  readonly adminToken: string | undefined;
  /** The clock mode reset() puts the tenant back on (tenantFor sets it to the mode it gave the tenant); undefined: the emulator's configured mode. */
  clockMode: ClockMode | undefined;
  /** The tenant and admin-token headers every control request carries. */
  readonly headers: Record<string, string>;
  forTenant(tenant: string | undefined): Control;
  call<T = unknown>(method: string, path: string, options?: { body?: unknown; query?: Record<string, unknown>; timeoutMs?: number }): Promise<T>;

  health(): Promise<Health>;
  /** Quotes, jobs, keys, balances, journal, faults, scenario and clock back to the start; the clock's mode back to clockMode when set, else the emulator's configured mode. */
  reset(): Promise<ResetResult>;

  clock(): Promise<Clock>;
  now(): Promise<Date>;
  /** Resolves once everything that fell due has happened. A number is milliseconds. */
  advance(by: Duration): Promise<Clock>;
  setTime(when: Date | string): Promise<Clock>;
  /** Changes how the tenant's clock moves from now on (time goes on from where it stands); a reset puts the emulator's mode back. */
  setClockMode(mode: ClockMode): Promise<Clock>;
  /** Resolves with how many wait=true generations wait once at least `count` do; rejects with EmulatorTimeoutError after timeoutMs (default 10 s), and at once on a skipping clock, where a wait=true never waits. */
  waitForWaiting(count?: number, options?: { timeoutMs?: number }): Promise<number>;
  /** On a manual clock, when a wait=true generation answered 202 (it ran out of time) or still waits: a sentence naming the clock and how to move it (tenantFor prints it for a failed test); else undefined. */
  clockDiagnosis(): Promise<string | undefined>;

  /** Any account's job with its account, its plan and, with inputs fetched, its media_inputs: how each media input was read and what it decoded to. */
  job(id: string): Promise<ControlJob>;
  /** The tenant's live uploads, newest first, each with the jobs that read it. */
  uploads(options?: { limit?: number; offset?: number }): Promise<ControlUpload[]>;
  completeJob(id: string): Promise<Job>;
  failJob(id: string, options?: { code?: string; message?: string }): Promise<Job>;

  faults(): Promise<Fault[]>;
  addFault(spec: FaultSpec): Promise<Fault>;
  deleteFault(id: string): Promise<void>;
  clearFaults(options?: { includeScenario?: boolean }): Promise<void>;

  /** Puts an adversity plan (or a bundle's plan) in force for the tenant, in place of the API's perturbations; resolves with every perturbation in force. */
  setPlan(plan: Plan | Bundle): Promise<PlanInForce>;
  /** Every perturbation in force for the tenant, the scenario's and the API's. */
  plan(): Promise<PlanInForce>;
  /** Removes the perturbations added through the API (a plan, faults). */
  clearPlan(): Promise<void>;
  /** Whether a run of the client in the tenant failed, and why; `exit` (a command's exit status) is judged when given. */
  verdict(options?: { exit?: number }): Promise<Verdict>;
  /** What replays the tenant's run and shows what happened in it. */
  bundle(options: { seed: number; run?: number; exit?: number }): Promise<Bundle>;
  /** The plan the emulator draws for run `run` of `seed`, favouring the cases not yet `reached`. */
  draw(request: { seed: number; run: number; terminal?: boolean; reached?: string[]; routes?: Record<string, number> }): Promise<Drawn>;
  /** The plans one step smaller than a failing plan, the most promising first. */
  shrink(plan: Plan): Promise<Plan[]>;

  scenario(): Promise<Scenario>;
  /** An embedded scenario by name, or a whole scenario document. */
  setScenario(scenario: string | ScenarioDocument): Promise<Scenario>;

  accounts(): Promise<Balance[]>;
  balance(account: string): Promise<Balance>;
  setCredits(account: string, credits: number): Promise<Balance>;

  requests(filter?: JournalFilter): Promise<JournalEntry[]>;
  clearRequests(): Promise<void>;

  tenants(): Promise<TenantInfo[]>;
  deleteTenant(name: string, options?: { missingOk?: boolean }): Promise<void>;

  /** The tenant's whole world as one document (GET /_emulator/snapshot), with the journal when asked. */
  snapshot(options?: { journal?: boolean }): Promise<Snapshot>;
  /**
   * Replaces the tenant's world with a snapshot, at once: an object, the document as a string
   * or bytes, or the path of a file holding it (a string not starting with "{", or a file URL).
   * A refused document (422 invalid_snapshot) changes nothing; the EmulatorError names each
   * problem with its JSON Pointer.
   */
  restore(doc: Snapshot | string | URL | Uint8Array | ArrayBuffer): Promise<SnapshotResult>;
  /** Writes the tenant's snapshot (journal included unless `journal` is false) to a new file NAME-XXXXXXXX.json in `dir`; resolves with its path. */
  saveSnapshot(dir: string, options?: { name?: string; journal?: boolean }): Promise<string>;

  /** How many of this tenant's journal entries match `pattern` (their seqs), and the near misses when none does. */
  verify(pattern?: RequestPattern): Promise<Verification>;
  /**
   * Resolves when requests like `pattern` happened (exactly `times` when given); otherwise
   * rejects with an AssertionError listing the near misses and the fields each one missed.
   */
  assertRequested(pattern?: RequestPattern, options?: { times?: number }): Promise<Verification>;
  /** Declares an error this tenant's test expects, so it is not unexpected; resolves with every expected pattern. */
  expectError(pattern: RequestPattern): Promise<RequestPattern[]>;
  expectedErrors(): Promise<RequestPattern[]>;
  clearExpectedErrors(): Promise<void>;
  /** Every answer of status >= 400 in this tenant's journal that no expected pattern matches, oldest first (at most 100). */
  unexpectedErrors(): Promise<UnexpectedError[]>;
  /** Rejects with an AssertionError showing each unexpected error's request, bodies and problem detail. */
  assertNoUnexpected(): Promise<void>;
  /** Which of the contract's hard cases happened: in this tenant ('tenant', the default) or in the whole run ('run'). */
  coverage(options?: CoverageOptions): Promise<Coverage>;
  /** The coverage as markdown (scope 'run' by default). */
  coverageMarkdown(options?: CoverageOptions): Promise<string>;
  /** The findings on the client's behaviour: this tenant's ('tenant', the default) or the whole run's ('run'). */
  report(options?: { scope?: Scope }): Promise<Report>;
  /** The report as markdown (scope 'run' by default). */
  reportMarkdown(options?: { scope?: Scope }): Promise<string>;
  /** Puts the tenant's webhook in force: its job events are POSTed to url, signed with secret (whsec_ and base64). */
  setWebhook(config: { url: string; secret: string; events?: string[]; audit?: boolean; chaos?: WebhookChaos }): Promise<Webhooks>;
  /** The tenant's webhook (its secret never shown) and its deliveries' summary. */
  webhooks(): Promise<Webhooks>;
  /** Turns the tenant's webhook off; deliveries still due are dropped. */
  deleteWebhook(): Promise<void>;
  /** Every attempt of the tenant's deliveries, oldest first. */
  webhookDeliveries(): Promise<WebhookAttempt[]>;
}

/** Whose coverage or report: the control's tenant, or every tenant since the emulator started. */
export type Scope = 'tenant' | 'run';

export interface CoverageOptions {
  scope?: Scope;
  /** Case-id globs (`*` within a `/`-separated segment, `**` across); the ones never exercised are listed in required_missing. */
  require?: string | string[];
}

/** One tenant: the URL and credentials a client under test uses, and the control API acting on it. */
export interface Tenant {
  readonly name: string;
  readonly baseUrl: string;
  /** The key form KEY.TENANT, e.g. mg_test_all.checkout-1a2b3c */
  readonly apiKey: string;
  /** { 'X-Emulator-Tenant': name }: send with the plain key instead of apiKey */
  readonly headers: Record<string, string>;
  readonly control: Control;
  /** Another configured key in this tenant's key form. */
  key(key: string): string;
  /** Drops the tenant (missingOk defaults to true). */
  delete(options?: { missingOk?: boolean }): Promise<void>;
  /** Sends a file (its bytes, or a path) to POST /v1/uploads with this tenant's key; the emulator must fetch inputs (--inputs fetch). Without contentType the emulator reads the type from the bytes. */
  upload(file: Uint8Array | string, contentType?: string): Promise<Upload>;
}

/** How a clock moves: skip (still, but a request waiting on a job moves it to the job's next transition), manual (still until advanced) or real. */
export type ClockMode = 'skip' | 'manual' | 'real';

export interface StartOptions {
  /** attach to this emulator instead of starting one (its tenants on `clock`, through tenantFor; the other options do not apply); default $MEDIAGEN_EMULATOR_URL; false to start one whatever the environment says */
  url?: string | false;
  /** default: $MEDIAGEN_EMULATOR_BIN, then mediagen-emulator on PATH */
  binary?: string;
  seed?: number | string;
  /** default "skip" (a request waiting on a job moves the clock to its next transition); "manual" to move it only by hand; null for the binary's own default */
  clock?: ClockMode | null;
  /** an embedded scenario name or a YAML path */
  scenario?: string;
  catalog?: string;
  adminToken?: string;
  /** more flags */
  args?: string[];
  env?: Record<string, string>;
  startupTimeoutMs?: number;
}

/** A running emulator, started or attached. */
export declare class Emulator {
  constructor(url: string, options?: { adminToken?: string; process?: ChildProcess; logPath?: string; tenantClock?: ClockMode | null });
  readonly url: string;
  readonly adminToken: string | undefined;
  /** The child process when this process started the emulator. */
  readonly process: ChildProcess | undefined;
  /** The emulator's standard error (removed after a clean close). */
  readonly logPath: string | undefined;
  /** The clock mode tenantFor puts each test's tenant on: "skip" for an attached emulator unless attachEmulator's clock says otherwise; undefined for one this process started (its tenants have the clock it was started with). */
  readonly tenantClock: ClockMode | null | undefined;
  /** Set by close(). */
  readonly exitCode: number | string | null | undefined;
  /** The control API of the default tenant. */
  readonly control: Control;
  tenant(name: string, key?: string): Tenant;
  newTenant(hint?: string, key?: string): Tenant;
  supportsTenants(): Promise<boolean>;
  /** SIGTERM, then the exit status (0 after a clean shutdown); null for an attached emulator. */
  close(options?: { timeoutMs?: number }): Promise<number | string | null>;
  [Symbol.asyncDispose](): Promise<void>;
}

export declare function startEmulator(options?: StartOptions): Promise<Emulator>;
/** An emulator already running: `url`, else $MEDIAGEN_EMULATOR_URL; adminToken defaults to $MEDIAGEN_ADMIN_TOKEN; clock (default "skip", null for the emulator's) is the mode tenantFor puts each test's tenant on. */
export declare function attachEmulator(url?: string, options?: { adminToken?: string; clock?: ClockMode | null }): Emulator;
export declare function emulatorFromEnv(options?: StartOptions): Promise<Emulator>;
export declare function findBinary(path?: string): string;
export declare function tenantName(hint?: string, suffixLength?: number): string;
export declare function durationText(d: Duration): string;
/**
 * A fresh tenant for one test, deleted when it ends: `t` is node:test's context (`name`, `after`)
 * or Vitest's (`task.name`, `onTestFinished`). With failOnUnexpected the test also fails when the
 * tenant answered an error no expectError declared. With snapshotOnFailure (a folder, or true
 * for snapshotDir()), or when $MEDIAGEN_SNAPSHOT_DIR is set, a failed test's tenant is saved to a
 * snapshot file before it is deleted, and the path is printed (a node:test diagnostic, or a line
 * on standard error under Vitest). With clock, the tenant's clock moves that way ("manual" for a
 * test that looks at a job while it is queued or running); else as the emulator's tenantClock
 * says ("skip" for an attached emulator), or the emulator's own. A failed test whose tenant is
 * on a manual clock with a wait=true that ran out of time prints why (Control.clockDiagnosis).
 */
export declare function tenantFor(
  t:
    | { name?: string; after?: (fn: () => void | Promise<void>) => void; passed?: boolean; diagnostic?: (message: string) => void }
    | { task: { name: string; result?: { state?: string } }; onTestFinished: (fn: () => void | Promise<void>) => void }
    | undefined,
  emulator: Emulator,
  options?: { key?: string; failOnUnexpected?: boolean; snapshotOnFailure?: string | boolean; clock?: ClockMode },
): Promise<Tenant>;

/** What the end of a run checks and where it finds the emulator. */
export interface EndOfRunOptions {
  /** Case-id globs the run must exercise ("job *", "POST /v1/generate 4*"). */
  require?: string[];
  /** Rule ids, globs of rule ids, or severities ("error") whose findings fail the run. */
  failOn?: string[];
  /** A file to append the markdown to; default $GITHUB_STEP_SUMMARY; false for none. */
  markdown?: string | false;
  /** Default 'run': every tenant since the emulator started, whichever worker used it. */
  scope?: Scope;
  /** Where to find the emulator: one of these, else $MEDIAGEN_EMULATOR_URL. */
  url?: string;
  adminToken?: string;
  emulator?: Emulator;
  control?: Control;
  /** Where the tables go; default standard output (standard error for Jest). */
  print?: (text: string) => void;
}

export interface EndOfRun {
  coverage?: Coverage;
  report?: Report;
  /** Why the run fails; empty when it passes its gates. */
  failures: string[];
}

/** Prints the run's coverage and report, writes their markdown, and says why the run fails (it never throws for that). */
export declare function endOfRun(options?: EndOfRunOptions): Promise<EndOfRun>;
/** The coverage as a short table for a terminal. */
export declare function formatCoverage(coverage: Coverage): string;
/** The report as a short list for a terminal. */
export declare function formatReport(report: Report): string;

/** A Jest reporter: `['@mediagen/emulator-testing/jest-reporter', options]` in `reporters`. */
export declare class JestReporter {
  constructor(globalConfig: unknown, options?: EndOfRunOptions);
  onRunComplete(): Promise<void>;
  getLastError(): Error | undefined;
}

/** A Vitest reporter: `new VitestReporter(options)` in `reporters`; also finds the URL a global setup provided as `mediagenUrl` (or `provided`). */
export declare class VitestReporter {
  constructor(options?: EndOfRunOptions & { provided?: string });
  onInit(vitest: unknown): void;
  onTestRunEnd(): Promise<void>;
}

/** How far a delivery's webhook-timestamp may be from the receiver's clock, in milliseconds. */
export declare const WEBHOOK_TOLERANCE_MS: number;

/** A delivery that does not verify. */
export declare class WebhookVerificationError extends Error {}

/** A fresh whsec_ secret of 32 random bytes. */
export declare function newSecret(): string;

/** Checks a delivery by the Standard Webhooks rules and returns its parsed body; throws a WebhookVerificationError otherwise. */
export declare function verifyWebhook(secret: string, headers: Record<string, string | string[] | undefined> | Headers, body: Buffer | string, now?: Date): WebhookEvent;

/** One request a WebhookReceiver got. */
export interface WebhookDelivery {
  id: string;
  timestamp: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The parsed body when it verified. */
  event?: WebhookEvent;
  /** Why it was refused, when it did not verify. */
  error?: string;
  status: number;
}

/** A webhook receiver for tests on 127.0.0.1: verifies, collects, and awaits deliveries. */
export declare class WebhookReceiver {
  static start(options?: { secret?: string; now?: () => Date | Promise<Date>; answer?: (d: WebhookDelivery) => number }): Promise<WebhookReceiver>;
  readonly url: string;
  secret: string;
  now: () => Date | Promise<Date>;
  /** Decides the status of a valid delivery (204 by default). */
  answer?: (d: WebhookDelivery) => number;
  /** Every request received, valid or not, in order. */
  deliveries: WebhookDelivery[];
  /** The first valid delivery of a job's event; on a manual clock, advance it first. */
  waitFor(jobId: string, event?: string, options?: { timeoutMs?: number }): Promise<WebhookDelivery>;
  close(): Promise<void>;
}

/** Starts a WebhookReceiver on the tenant's clock and points the tenant's webhook at it. */
export declare function webhookReceiver(control: Control, options?: { events?: string[]; audit?: boolean; chaos?: WebhookChaos }): Promise<WebhookReceiver>;

/** One run of an explored test: its number, plan, tenant and verdict; the bundle when it failed, and the test's own error. */
export interface ExploreRun {
  number: number;
  plan: Plan;
  tenant: string;
  verdict: Verdict;
  bundle?: Bundle;
  error?: unknown;
}

/** What explore found: the run that failed first, the smallest plan that still fails, and how many runs the shrink took. */
export interface ExploreFound {
  first: ExploreRun;
  smallest: ExploreRun;
  shrinkRuns: number;
}

export interface ExploreOptions {
  /** How many runs (default 10): run 1 under no plan, each later one under a plan drawn for it. */
  runs?: number;
  /** The seed plans are drawn from (default 1): the same seed draws the same plans. */
  seed?: number;
  /** The emulator to explore on; default one started (or attached to at $MEDIAGEN_EMULATOR_URL) once per process. */
  emulator?: Emulator;
  /** Where a failure's bundle is written (default mediagen-explore). */
  out?: string;
  /** A bundle (or plan) file to run the test once under instead of exploring; default $MEDIAGEN_PLAN. */
  plan?: string;
  /** The test's name, for tenants and the bundle file; default the test context's. */
  name?: string;
}

/** The failure explore found; its message names the smallest plan, why it failed and the bundle file. */
export declare class ExploreFailure extends Error {
  readonly found: ExploreFound;
  /** The bundle file; `MEDIAGEN_PLAN=path` replays it. */
  readonly path: string;
}

/**
 * Wraps testFn into a test function (node:test, Vitest, Jest) that runs it `runs` times, each in
 * a fresh tenant under an adversity plan the emulator draws, judged by the emulator's verdict
 * (testFn throwing counts as a non-zero exit); a failure is shrunk to the smallest plan that still
 * fails, its bundle written, and the test fails with an ExploreFailure naming the file.
 */
export declare function explore(
  testFn: (tenant: Tenant, run: { run: number; plan: Plan }) => unknown | Promise<unknown>,
  options?: ExploreOptions,
): (...context: unknown[]) => Promise<void>;

/** The explore loop over one emulator, for a runner explore does not fit. */
export declare class Explorer {
  constructor(emulator: Emulator, options: { seed?: number; testFn: (tenant: Tenant, run: { run: number; plan: Plan }) => unknown; testName?: string });
  attempt(number: number, plan: Plan): Promise<ExploreRun>;
  explore(runs: number): Promise<ExploreFound | undefined>;
  shrink(failed: ExploreRun): Promise<[ExploreRun, number]>;
  replay(path: string): Promise<void>;
}

/** The plan of a bundle file, or of a file holding a plan alone. */
export declare function readPlan(path: string): Plan;
