/**
 * The trainer bench in Chromium (bench/ddp.html): the sweep of bench/ddp_measure.ts with
 * every rank a Web Worker with its own WebGPU device, re-entering bench/ddp_program.ts.
 * Exposes `globalThis.benchDdp.run(options)`; bench/ddp.spec.ts drives it.
 */
import { setProgramArgs } from "../src/index.ts";
import { BATCH, type DdpRun, type DdpTargets, sweep } from "./ddp_measure.ts";
import { round } from "./workloads.ts";

export interface DdpPageOptions {
  /** Training images (default 3200). */
  subset?: number;
  /** Epochs per run, the first not measured (default 3). */
  epochs?: number;
  /** World sizes of the mode × wire sweep (default [2, 4]). */
  ranks?: number[];
}

export interface DdpPageResult {
  adapter: string;
  subset: number;
  batch: number;
  epochs: number;
  totalS: number;
  runs: DdpRun[];
  targets: DdpTargets;
}

const logEl = document.getElementById("log")!;
const log = (line: string) => {
  console.log(line);
  logEl.textContent += line + "\n";
};

async function run(o: DdpPageOptions = {}): Promise<DdpPageResult> {
  const subset = o.subset ?? 3200, epochs = o.epochs ?? 3, ranks = o.ranks ?? [2, 4];
  const t0 = performance.now();
  const adapter = await navigator.gpu?.requestAdapter();
  const name = adapter ? adapter.info.description || adapter.info.architecture || adapter.info.vendor : "none";
  log(`bench/ddp (Chromium): MNIST MLP, ${subset} samples, batch ${BATCH}, ${epochs} epochs, adapter ${name}`);
  setProgramArgs({ subset, baseUrl: "/mnist/" });
  const { builder } = await import("./ddp_program.ts");
  const { runs, targets } = await sweep(builder, ranks, epochs, log);
  return { adapter: name, subset, batch: BATCH, epochs, totalS: round((performance.now() - t0) / 1e3, 1), runs, targets };
}

(globalThis as unknown as { benchDdp: { run: typeof run } }).benchDdp = { run };
document.getElementById("status")!.textContent = "ready";
