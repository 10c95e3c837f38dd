/**
 * The Chromium page of the sequence-model bench (bench/seq.html): `globalThis.seqBench.run(o)`
 * runs one sitting of bench/seq_contenders.ts in this page (ours, TF.js and jax-js on the
 * page's adapter) and resolves with its results and table. bench/seq.spec.ts drives it.
 */
import { Device } from "../src/index.ts";
import { runSitting, type SeqResult, type SittingOptions, sittingTable } from "./seq_contenders.ts";

const logEl = document.getElementById("log")!;
const log = (line: string) => {
  console.log(line);
  logEl.textContent += line + "\n";
};
let device: Device | undefined;

(globalThis as unknown as { seqBench: unknown }).seqBench = {
  async run(o: Omit<SittingOptions, "log">): Promise<{ results: SeqResult[]; table: string[]; seconds: number }> {
    device ??= await Device.request({ label: "seq-bench" });
    const t0 = performance.now();
    const results = await runSitting(device, { ...o, log });
    const table = sittingTable(o.shape, results);
    for (const line of table) log(line);
    return { results, table, seconds: (performance.now() - t0) / 1000 };
  },
};
document.getElementById("status")!.textContent = "ready";
