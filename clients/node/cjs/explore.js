"use strict";
// Explore: a test run again and again, each run in a fresh tenant under an adversity plan the
// emulator draws, judged by its verdict; a failing plan shrunk to the smallest that still fails
// and written to a bundle file that replays it. The emulator draws (POST
// /_emulator/explore/draw), judges (GET /_emulator/verdict), shrinks (POST
// /_emulator/explore/shrink) and bundles (GET /_emulator/bundle): this module only loops, as
// the pytest plugin and Go's emulatortest.Explore do.
Object.defineProperty(exports, "__esModule", { value: true });
exports.Explorer = exports.ExploreFailure = exports.PLAN_ENV = void 0;
exports.explore = explore;
exports.readPlan = readPlan;
const node_fs_1 = require("node:fs");
const node_path_1 = require("node:path");
const emulator_js_1 = require("./emulator.js");
/** Environment variable naming a bundle (or plan) file: explore then runs the test once, under its plan. */
exports.PLAN_ENV = 'MEDIAGEN_PLAN';
/** How many smaller plans one shrink tries at most, so that a flaky test cannot shrink for ever. */
const SHRINK_BUDGET = 100;
let shared; // the emulator explore starts (or attaches to) when none is given, one per process
/**
 * Wraps `testFn(tenant, run)` into a test function for node:test, Vitest or Jest that runs it
 * `runs` times, each in a fresh tenant under a plan drawn from `seed`, and fails with the
 * smallest failing plan, the finding and the bundle file that replays it. Run 1 is under no plan
 * (as `mediagen-emulator explore`'s baseline); a run fails when testFn throws (as a non-zero
 * exit) or the emulator's verdict does. With `plan` (or $MEDIAGEN_PLAN) naming a bundle file, the
 * test runs once, under its plan.
 */
function explore(testFn, { runs = 10, seed = 1, emulator, out = 'mediagen-explore', plan = process.env[exports.PLAN_ENV], name } = {}) {
    // No declared parameter: Jest takes a test function with one for a callback-style test.
    return async function explored(...args) {
        const t = args[0];
        const testName = name ?? t?.task?.name ?? t?.name ?? 'explore';
        const emu = emulator ?? (await (shared ??= (0, emulator_js_1.startEmulator)()));
        const x = new Explorer(emu, { seed, testFn, testName });
        if (plan)
            return x.replay(plan);
        const found = await x.explore(runs);
        if (!found) {
            if (typeof t?.diagnostic === 'function')
                t.diagnostic(`mediagen-emulator explore: ${runs} runs under plans drawn from seed ${seed}: none failed`);
            return;
        }
        const path = writeBundle(found.smallest.bundle, out, `${safeName(testName)}-seed${seed}`);
        throw new ExploreFailure(describe(found, runs, seed, path), found, path);
    };
}
/** The failure explore found: its message names the smallest plan, why it failed, and the bundle file. */
class ExploreFailure extends Error {
    constructor(message, found, path) {
        super(message);
        this.name = 'ExploreFailure';
        this.found = found;
        this.path = path;
    }
}
exports.ExploreFailure = ExploreFailure;
/** The explore loop over one emulator. */
class Explorer {
    constructor(emulator, { seed = 1, testFn, testName = 'explore' }) {
        this.emulator = emulator;
        this.seed = seed;
        this.testFn = testFn;
        this.testName = testName;
        this.reached = new Set();
        this.routes = undefined;
    }
    /** Runs testFn once in a fresh tenant under `plan`, and resolves with the verdict (and the bundle when it failed). */
    async attempt(number, plan) {
        const emu = this.emulator;
        const tenant = emu.newTenant(`${this.testName}-${number}`);
        try {
            if (emu.tenantClock)
                await tenant.control.setClockMode(emu.tenantClock);
            await tenant.control.setPlan(plan);
            let exit = 0;
            let error;
            try {
                await this.testFn(tenant, { run: number, plan });
            }
            catch (err) {
                exit = 1;
                error = err;
            }
            const verdict = await tenant.control.verdict({ exit });
            const bundle = verdict.failed ? await tenant.control.bundle({ seed: this.seed, run: number, exit }) : undefined;
            return { number, plan, tenant: tenant.name, verdict, bundle, error };
        }
        finally {
            await tenant.delete();
        }
    }
    /** Makes up to `runs` runs; at the first that fails, shrinks its plan. Resolves with {first, smallest, shrinkRuns}, or undefined when none failed. */
    async explore(runs) {
        for (let number = 1; number <= runs; number++) {
            const drawn = number === 1
                ? { plan: { perturbations: [] } }
                : await this.emulator.control.draw({ seed: this.seed, run: number, reached: [...this.reached], routes: this.routes });
            const run = await this.attempt(number, drawn.plan);
            for (const c of run.verdict.reached ?? [])
                this.reached.add(c);
            if (number === 1)
                this.routes = run.verdict.routes;
            if (run.verdict.failed) {
                const [smallest, shrinkRuns] = await this.shrink(run);
                return { first: run, smallest, shrinkRuns };
            }
        }
        return undefined;
    }
    /** Greedily the smallest plan that still fails: the first candidate that fails again becomes the plan. */
    async shrink(failed) {
        let current = failed;
        let tried = 0;
        for (;;) {
            let shrunk = false;
            for (const candidate of await this.emulator.control.shrink(current.plan)) {
                if (tried === SHRINK_BUDGET)
                    return [current, tried];
                tried++;
                const run = await this.attempt(failed.number, candidate);
                if (run.verdict.failed) {
                    current = run;
                    shrunk = true;
                    break;
                }
            }
            if (!shrunk)
                return [current, tried];
        }
    }
    /** Runs testFn once under the plan of a bundle file, and throws when the run fails. */
    async replay(path) {
        const run = await this.attempt(1, readPlan(path));
        if (!run.verdict.failed)
            return;
        const err = new ExploreFailure([`mediagen-emulator: the test fails under the plan of ${path} (tenant ${run.tenant}):`, ...failureLines(run.verdict)].join('\n'), { first: run, smallest: run, shrinkRuns: 0 }, path);
        if (run.error)
            err.cause = run.error;
        throw err;
    }
}
exports.Explorer = Explorer;
/** The plan of a bundle file, or of a file holding a plan alone. */
function readPlan(path) {
    const doc = JSON.parse((0, node_fs_1.readFileSync)(path, 'utf8'));
    const plan = doc?.plan ?? doc;
    if (!Array.isArray(plan?.perturbations))
        throw new Error(`${path} holds no plan: a bundle or {"perturbations": [...]} was expected`);
    return plan;
}
function writeBundle(bundle, dir, name) {
    try {
        (0, node_fs_1.mkdirSync)(dir, { recursive: true });
        const path = (0, node_path_1.join)(dir, `${name}.json`);
        (0, node_fs_1.writeFileSync)(path, `${JSON.stringify(bundle, null, 2)}\n`);
        return path;
    }
    catch (err) {
        return `(not written: ${err.message})`;
    }
}
function safeName(name) {
    return String(name).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100) || 'explore';
}
function failureLines(verdict) {
    return (verdict.failures ?? []).map((f) => {
        const entries = (f.entries ?? []).map((e) => `#${e}`).join(' ');
        return `  ${f.rule || f.kind}: ${f.reason}${entries ? ` ${entries}` : ''}`;
    });
}
function describe(found, runs, seed, path) {
    const small = found.smallest;
    const ps = small.plan.perturbations ?? [];
    const lines = [
        `mediagen-emulator explore: run ${found.first.number} of ${runs} (seed ${seed}) failed; the smallest plan that still fails has ${ps.length} perturbation${ps.length === 1 ? '' : 's'} (${found.shrinkRuns} shrink runs):`,
    ];
    if (!ps.length)
        lines.push('  (no perturbation: the test fails under no adversity at all)');
    for (const p of ps)
        lines.push(`  ${JSON.stringify(p)}`);
    lines.push(`why it failed (tenant ${small.tenant}):`, ...failureLines(small.verdict));
    if (small.error)
        lines.push(`the test's own error in that run: ${small.error?.message ?? small.error}`);
    lines.push(`the plan and the failing tenant are in ${path}; replay it: ${exports.PLAN_ENV}=${path} and run the test again`);
    return lines.join('\n');
}
