/**
 * One cold start where it is called (a fresh Deno process: bench/cold_start_one.ts; a fresh
 * browser context: bench/cold_start_page.ts): time from launch to the first training step of
 * a ddp-bench model, split into the program's imports and data, the device, the pipeline
 * compiles (count and ms each, solo) and the step itself; then `steps` more steps per rank,
 * whose median is the steady step a cheaper compile must not slow. Resolves as soon as every
 * rank reported its last step; the run goes on, and the caller ends the process or page.
 */
import { Device, observe, setProgramArgs } from "../src/index.ts";
import type { ModelName } from "../src/zoo/mod.ts";
import { median } from "./workloads.ts";

/** What one cold start measured; every time is ms since the process or page started. */
export interface ColdStart {
  model: ModelName;
  ranks: number;
  /** The program's module and its data loaded. */
  programMs: number;
  /** Solo: the device requested (the run builds its model on it). */
  deviceMs?: number;
  /** Each rank's first step reported (its batch event). */
  firstStepMs: number[];
  /** Each rank's first step as it measured it (recording + GPU, compiles included). */
  firstStepComputeMs: number[];
  /** Each rank's median step after the first (recording + GPU), ms. */
  steadyStepMs: number[];
  /** Solo: the pipelines the run compiled before its first step ended, ms each. */
  compiles?: { key: string; ms: number }[];
}

/** `baseUrl`: where a browser fetches MNIST (bench/ddp-bench/program.ts). */
export async function coldStart(model: ModelName, ranks: number, steps: number, baseUrl?: string): Promise<ColdStart> {
  const batch = 64;
  // The first step, `steps` more and a spare batch per rank; the eval set is the smallest.
  setProgramArgs({ model, subset: (steps + 2) * batch * ranks, testSubset: 32, epochs: 1, batch, baseUrl });
  const { builder } = await import("./ddp-bench/program.ts");
  const programMs = performance.now();
  let device: Device | undefined, deviceMs: number | undefined;
  if (ranks === 1) {
    device = await Device.request({ label: "cold-start" });
    Device.setDefault(device);
    deviceMs = performance.now();
  }
  const firstStepMs: number[] = Array(ranks).fill(NaN), firstStepComputeMs: number[] = Array(ranks).fill(NaN);
  const later: number[][] = Array.from({ length: ranks }, () => []);
  let compiles: { key: string; ms: number }[] | undefined;
  let left = ranks;
  const done = Promise.withResolvers<void>();
  builder.batchSize(batch).numEpochs(1).cluster({ ranks: Array.from({ length: ranks }, () => ({})) });
  observe(builder, {
    batch: (e) => {
      if (Number.isNaN(firstStepMs[e.rank])) {
        firstStepMs[e.rank] = performance.now();
        firstStepComputeMs[e.rank] = e.computeMs;
        compiles ??= device?.compiles.slice();
      } else if (later[e.rank].length < steps) {
        later[e.rank].push(e.computeMs);
        if (later[e.rank].length === steps && --left === 0) done.resolve();
      }
    },
  });
  const handle = await builder.run();
  handle.join().catch((e) => done.reject(e));
  await done.promise;
  return { model, ranks, programMs, deviceMs, firstStepMs, firstStepComputeMs, steadyStepMs: later.map(median), compiles };
}
