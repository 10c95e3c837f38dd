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

  let ours: Awaited<ReturnType<typeof setupOurs>> | undefined;
  for (const who of only) {
    results[who] = { name: LABELS[who], version: "?", adapter: "?", w1: [], w2: [] };
    await guard(who, "setup", async () => {
      const r = results[who]!;
      if (who === "ours") {
        ours = await setupOurs();
        Object.assign(r, { version: "0.1.0 (this tree)", adapter: ours.adapter, tiling: ours.tiling });
      } else if (who === "tf") {
        const s = await setupTf();
        Object.assign(r, { version: s.version, adapter: s.adapter });
      } else {
        const s = await setupJax();
        Object.assign(r, { version: "0.1.25", adapter: s.adapter });
      }
      log(`${LABELS[who]} ${r.version} on ${r.adapter}${r.tiling ? ` tiling ${r.tiling}` : ""}`);
    });
  }

  const matmul: Record<Contender, (n: number) => Promise<W1Result>> = {
    ours: (n) => oursMatmul(ours!.device, n),
    tf: tfMatmul,
    jax: jaxMatmul,
  };
  const mlp: Record<Contender, (m: W2Mode) => Promise<W2Result>> = {
    ours: (m) => oursMlp(ours!.device, m),
    tf: tfMlp,
    jax: jaxMlp,
  };
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
      profile = await profileOurs(ours.device);
    } catch (e) {
      log(`profile failed: ${describe(e)}`);
    }
  }
  return { workloads: { w1: W1, w2: W2 }, contenders: results, profile, totalS: +((performance.now() - t0) / 1e3).toFixed(1) };
}
