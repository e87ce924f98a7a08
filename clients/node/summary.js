// The end of a test run: the whole run's coverage of the contract's hard cases and the report on
// the client's behaviour, printed, written as markdown for a CI job summary, and judged against
// the cases the run must exercise and the rules it must not break. Scope "run" counts every
// tenant since the emulator started, so it holds after parallel workers on one shared emulator.

import { appendFileSync } from 'node:fs';

import { Control, EmulatorError } from './control.js';

const URL_ENV = 'MEDIAGEN_EMULATOR_URL';
const ADMIN_TOKEN_ENV = 'MEDIAGEN_ADMIN_TOKEN';
const SHOWN_FINDINGS = 20;

/** Whether `text` matches the glob `pattern` as the emulator does: `*` within a `/`-separated segment, `**` across. */
export function globMatch(pattern, text) {
  const re = new RegExp(`^${String(pattern).split(/(\*+)/).map((p) => (p === '*' ? '[^/]*' : p.startsWith('*') ? '.*' : p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))).join('')}$`, 's');
  return re.test(text);
}

function controlOf({ control, emulator, url, adminToken }) {
  if (control) return control;
  if (emulator) return emulator.control;
  url ||= process.env[URL_ENV];
  if (!url) return undefined;
  return new Control(url, { adminToken: adminToken ?? (process.env[ADMIN_TOKEN_ENV] || undefined) });
}

/**
 * The coverage in the short form every helper prints (Go's emulatortest.ShortCoverage, Python's
 * format_coverage): the cases exercised in all and per group, then the required cases never
 * exercised. The markdown lists every case.
 */
export function formatCoverage(cov) {
  const groups = new Map();
  for (const c of cov.cases ?? []) {
    if (!groups.has(c.group)) groups.set(c.group, { seen: 0, total: 0 });
    const g = groups.get(c.group);
    g.total++;
    if (c.count > 0) g.seen++;
  }
  const where = cov.scope === 'run' ? 'the whole run' : `tenant ${cov.tenant ?? ''}`;
  const lines = [`emulator coverage (${where}): ${cov.exercised} of ${cov.total} cases exercised`];
  for (const [name, g] of groups) lines.push(`  ${name.padEnd(8)} ${String(g.seen).padStart(3)} of ${g.total}`);
  const missing = cov.required_missing ?? [];
  if (missing.length) lines.push(`required but never exercised (${missing.length}):`, ...missing.map((id) => `  ${id}`));
  return lines.join('\n');
}

/** How many findings each rule has: the exact counts when the answer has them, else counted. */
export function ruleCounts(report) {
  if (report.counts) return { ...report.counts };
  const counts = {};
  for (const f of report.findings ?? []) counts[f.rule] = (counts[f.rule] ?? 0) + 1;
  return counts;
}

/** The report as a short list for a terminal: a line per rule that found something, then the findings. */
export function formatReport(report) {
  const counts = ruleCounts(report);
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const lines = [
    `mediagen-emulator report (${report.scope}${report.tenant ? ` ${report.tenant}` : ''}): ${report.examined} requests examined, ${total} finding${total === 1 ? '' : 's'}`,
  ];
  const rules = new Map((report.rules ?? []).map((r) => [r.id, r]));
  for (const [id, n] of Object.entries(counts)) {
    if (!n) continue;
    const r = rules.get(id);
    lines.push(`  ${(r?.severity ?? '').padEnd(7)}  ${id.padEnd(24)} ${String(n).padStart(4)}  ${r?.title ?? ''}`.trimEnd());
  }
  const findings = report.findings ?? [];
  for (const f of findings.slice(0, SHOWN_FINDINGS)) {
    const where = [f.tenant && `tenant ${f.tenant}`, f.entries?.length && `entries ${f.entries.map((s) => `#${s}`).join(' ')}`].filter(Boolean).join(', ');
    lines.push(`    ${f.rule}: ${f.reason}${where ? ` (${where})` : ''}`);
  }
  if (findings.length > SHOWN_FINDINGS) lines.push(`    … ${findings.length - SHOWN_FINDINGS} more`);
  return lines.join('\n');
}

/** Whether a failOn entry (a rule id, a severity, or a glob of rule ids) selects a rule. */
function selects(entry, id, severity) {
  return entry === severity || globMatch(entry, id);
}

/**
 * Fetches the run's coverage and report, prints them, appends their markdown to `markdown` (a
 * file path; $GITHUB_STEP_SUMMARY by default, false for none) and resolves with them and the
 * reasons the run fails: a case matching a `require` glob never exercised, or a finding of a rule
 * that `failOn` names (by id, glob of ids, or severity). Never rejects for those; rejects only
 * when the emulator cannot be reached or answers an error while a gate is set.
 */
export async function endOfRun(options = {}) {
  const { require = [], failOn = [], scope = 'run', print = (text) => process.stdout.write(`${text}\n`) } = options;
  const markdown = options.markdown === undefined ? process.env.GITHUB_STEP_SUMMARY || undefined : options.markdown || undefined;
  const control = controlOf(options);
  const gated = require.length > 0 || failOn.length > 0;
  if (!control) {
    const why = `mediagen-emulator: no emulator to ask for the run's coverage and report (pass url or set ${URL_ENV})`;
    if (gated) return { failures: [why] };
    print(why);
    return { failures: [] };
  }
  let coverage, report;
  try {
    [coverage, report] = await Promise.all([control.coverage({ scope, require }), control.report({ scope })]);
  } catch (err) {
    if (!gated && err instanceof EmulatorError && (err.status === 404 || err.status === 405)) {
      print(`mediagen-emulator at ${control.baseUrl} has no coverage or report; use a newer one`);
      return { failures: [] };
    }
    throw err;
  }
  print(`\n${formatCoverage(coverage)}\n${formatReport(report)}`);
  if (markdown) {
    const [covMd, repMd] = await Promise.all([control.coverageMarkdown({ scope, require }), control.reportMarkdown({ scope })]);
    appendFileSync(markdown, `${covMd.trimEnd()}\n\n${repMd.trimEnd()}\n\n`);
  }
  const failures = [];
  if (coverage.required_missing?.length) {
    failures.push(`required cases never exercised: ${coverage.required_missing.join('; ')}`);
  }
  // A glob that names no case (a typo, a renamed case) would otherwise pass for ever.
  for (const glob of [].concat(require)) {
    if (!(coverage.cases ?? []).some((c) => globMatch(glob, c.id))) failures.push(`required ${JSON.stringify(glob)} matches no case`);
  }
  const severity = new Map((report.rules ?? []).map((r) => [r.id, r.severity]));
  for (const [id, n] of Object.entries(ruleCounts(report))) {
    if (n > 0 && failOn.some((e) => selects(e, id, severity.get(id)))) {
      const first = (report.findings ?? []).find((f) => f.rule === id);
      failures.push(`${id}: ${n} finding${n === 1 ? '' : 's'}${first ? `, first: ${first.reason}` : ''}`);
    }
  }
  if (failures.length) print(`mediagen-emulator: the run fails:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  return { coverage, report, failures };
}

/**
 * A Jest reporter that prints the run's coverage and report after the tests and fails the run on
 * its gates. In jest.config: reporters: ['default', ['@mediagen/emulator-testing/jest-reporter',
 * { require: ['job *'], failOn: ['error'] }]]. It finds the emulator through `url` or
 * $MEDIAGEN_EMULATOR_URL (which a globalSetup that starts one sets).
 */
export class JestReporter {
  #options;
  #error;

  constructor(_globalConfig, options = {}) {
    this.#options = options;
  }

  async onRunComplete() {
    try {
      const { failures } = await endOfRun({ print: (text) => process.stderr.write(`${text}\n`), ...this.#options });
      if (failures.length) this.#error = new Error(`mediagen-emulator: ${failures.join('; ')}`);
    } catch (err) {
      this.#error = err;
      process.stderr.write(`mediagen-emulator: ${err.message}\n`);
    }
  }

  getLastError() {
    return this.#error;
  }
}

/**
 * A Vitest reporter that prints the run's coverage and report after the tests and fails the run
 * (exit status 1) on its gates. In vitest.config: reporters: ['default', new VitestReporter({
 * require: ['job *'], failOn: ['error'] })]. It finds the emulator through `url`,
 * $MEDIAGEN_EMULATOR_URL, or the value a global setup provided as `mediagenUrl`.
 */
export class VitestReporter {
  #options;
  #vitest;

  constructor(options = {}) {
    this.#options = options;
  }

  onInit(vitest) {
    this.#vitest = vitest;
  }

  async onTestRunEnd() {
    const opts = { ...this.#options };
    if (!opts.url && !opts.control && !opts.emulator && !process.env[URL_ENV]) {
      const key = opts.provided ?? 'mediagenUrl';
      const projects = this.#vitest?.projects ?? [];
      opts.url = projects.map((p) => p.getProvidedContext?.()?.[key]).find(Boolean) ?? this.#vitest?.getProvidedContext?.()?.[key];
    }
    try {
      const { failures } = await endOfRun(opts);
      if (failures.length) process.exitCode = 1;
    } catch (err) {
      process.stderr.write(`mediagen-emulator: ${err.message}\n`);
      process.exitCode = 1;
    }
  }
}
