/**
 * One sitting of W1 and W2 for every contender, in one process (Deno) or one page
 * (Chromium), interleaved per workload point (ours, TF.js, jax-js for n = 256, then for
 * n = 512, ...) so that a change in machine load hits all three alike. The result is a
 * plain JSON object; report.ts turns it into tables and ratios.
 */
import { setupJax, jaxMatmul, jaxMlp } from "./peers/jax.ts";
import { setupTf, tfMatmul, tfMlp } from "./peers/tf.ts";
import { oursMatmul, oursMlp, setupOurs } from "./ours.ts";
import { profileOurs, type StepProfile } from "./profile.ts";
import { CONTENDERS, type Contender, LABELS } from "./contenders.ts";
import { W1, type W1Result, W2, W2_MODES, type W2Mode, type W2Result } from "./workloads.ts";
import type { Device } from "../src/gpu/mod.ts";


export interface ContenderResult {
  name: string;
  version: string;
  adapter: string;
  /** Our matmul tiling (ours only). */
  tiling?: string;
  w1: W1Result[];
  w2: W2Result[];
  /** A failure (the other contenders still run), with its stack. */
  error?: string;
}

export interface SuiteOptions {
  /** W1 sizes; default W1.sizes. */
  sizes?: number[];
  /** Contenders to run; default all. */
  only?: Contender[];
  /** Profile our W2 step (default true). */
  profile?: boolean;
  log?: (line: string) => void;
}

export interface SuiteResult {
  workloads: { w1: typeof W1; w2: typeof W2 };
  contenders: Partial<Record<Contender, ContenderResult>>;
  profile?: StepProfile;
  totalS: number;
}

/** A contender set up on this runtime's adapter; `device` is ours only. */
async function setup(who: Contender): Promise<{ version: string; adapter: string; tiling?: string; device?: Device }> {
  if (who === "ours") {
    const s = await setupOurs();
    return { version: "0.1.0 (this tree)", adapter: s.adapter, tiling: s.tiling, device: s.device };
  }
  if (who === "tf") return { ...(await setupTf()) };
  return { version: "0.1.25", adapter: (await setupJax()).adapter };
}

function mlpOf(ours: Device | undefined): Record<Contender, (m: W2Mode) => Promise<W2Result>> {
  return { ours: (m) => oursMlp(ours!, m), tf: tfMlp, jax: jaxMlp };
}

/** One contender's cold start on W2 (bench/first_step.ts): ms since this process or page began. */
export interface FirstStep {
  who: Contender;
  name: string;
  version: string;
  adapter: string;
  /** The contender's library loaded and its backend or device ready. */
  setupMs: number;
  /** Its first MLP step returned its loss (compiles included). */
  firstStepMs: number;
  /** The first step alone, and the mean step of the timed run after the warm-up. */
  stepMs: { first: number; steady: number };
  ok: boolean;
}

/**
 * Set up one contender and train W2 once (its first mode) and nothing else, so that its first
 * step pays every compile the MLP needs: meant for a fresh process or page per contender.
 */
export async function firstStep(who: Contender): Promise<FirstStep> {
  const s = await setup(who);
  const setupMs = performance.now();
  const r = await mlpOf(s.device)[who](W2_MODES[0]);
  const firstStepMs = setupMs + r.firstStepMs;
  return {
    who,
    name: LABELS[who],
    version: s.version,
    adapter: s.adapter,
    setupMs: +setupMs.toFixed(1),
    firstStepMs: +firstStepMs.toFixed(1),
    stepMs: { first: r.firstStepMs, steady: +(r.ms / r.steps).toFixed(1) },
    ok: r.ok,
  };
}

const describe = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}\n${e.stack ?? ""}` : String(e));

/** Run W1 at every size and W2 in both modes for each contender; never throws for a contender's failure. */
export async function runSuite(options: SuiteOptions = {}): Promise<SuiteResult> {
  const t0 = performance.now();
  const log = options.log ?? console.log;
  const sizes = options.sizes ?? W1.sizes;
  const only = options.only ?? [...CONTENDERS];
  const results: Partial<Record<Contender, ContenderResult>> = {};
  const guard = async <T>(who: Contender, what: string, f: () => Promise<T>): Promise<T | undefined> => {
    const r = results[who];
    if (!r || r.error) return undefined;
    try {
      return await f();
    } catch (e) {
      r.error = `${what}: ${describe(e)}`;
      log(`${LABELS[who]} failed in ${what}: ${describe(e)}`);
      return undefined;
    }
  };

  let ours: Device | undefined;
  for (const who of only) {
    results[who] = { name: LABELS[who], version: "?", adapter: "?", w1: [], w2: [] };
    await guard(who, "setup", async () => {
      const r = results[who]!;
      const s = await setup(who);
      ours ??= s.device;
      Object.assign(r, { version: s.version, adapter: s.adapter, tiling: s.tiling });
      log(`${LABELS[who]} ${r.version} on ${r.adapter}${r.tiling ? ` tiling ${r.tiling}` : ""}`);
    });
  }

  const matmul: Record<Contender, (n: number) => Promise<W1Result>> = {
    ours: (n) => oursMatmul(ours!, n),
    tf: tfMatmul,
    jax: jaxMatmul,
  };
  const mlp = mlpOf(ours);
  for (const n of sizes) {
    for (const who of only) {
      const r = await guard(who, `W1 n=${n}`, () => matmul[who](n));
      if (!r) continue;
      results[who]!.w1.push(r);
      log(`W1 n=${n} ${LABELS[who].padEnd(13)} ${r.gflops.toFixed(2).padStart(6)} GFLOP/s  median ${r.medianMs} ms  check ${r.ok ? "ok" : "FAILED"} (${r.maxErr.toExponential(1)})`);
    }
  }
  for (const mode of W2_MODES) {
    for (const who of only) {
      const r = await guard(who, `W2 ${mode}`, () => mlp[who](mode));
      if (!r) continue;
      results[who]!.w2.push(r);
      log(`W2 ${mode.padEnd(15)} ${LABELS[who].padEnd(13)} ${r.samplesPerS.toFixed(0).padStart(6)} samples/s  loss ${r.firstLoss} → ${r.lastLoss} ${r.ok ? "ok" : "FAILED"}`);
    }
  }
  let profile: StepProfile | undefined;
  if ((options.profile ?? true) && ours && !results.ours?.error) {
    try {
      profile = await profileOurs(ours);
    } catch (e) {
      log(`profile failed: ${describe(e)}`);
    }
  }
  return { workloads: { w1: W1, w2: W2 }, contenders: results, profile, totalS: +((performance.now() - t0) / 1e3).toFixed(1) };
}
