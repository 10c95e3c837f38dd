/**
 * The Chromium page of the sequence-model bench (bench/seq.html): `globalThis.seqBench.run(o)`
 * runs one sitting of bench/seq_contenders.ts in this page (ours, TF.js and jax-js on the
 * page's adapter) and resolves with its results and table. bench/seq.spec.ts drives it.
 */
import { Device } from "../src/index.ts";
import { batchIds, oursModel, oursStep, runSitting, type SeqResult, type SeqShape, type SittingOptions, sittingTable } from "./seq_contenders.ts";
import { type KernelProfile, profileKernels, timeMedian } from "./profile.ts";

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
  /** Our step's kernels one by one (bench/seq_profile.ts's profile, in this page): SEQ_PROFILE in seq.spec.ts. */
  async profile(shape: SeqShape, repeat: number): Promise<KernelProfile & { stepMs: number; syncMs: number }> {
    device ??= await Device.request({ label: "seq-bench" });
    const dev = device;
    const { x, y } = batchIds(shape.batch, shape.seq);
    const m = oursModel(dev, shape);
    const record = () => oursStep(dev, shape, m, x, y);
    for (let i = 0; i < 2; i++) {
      await record().data.item();
      dev.endStep();
    }
    const syncMs = await timeMedian(5, () => dev.sync());
    const stepMs = await timeMedian(3, async () => {
      await record().data.item();
      dev.endStep();
    });
    log(`profiling ${shape.model} B=${shape.batch} T=${shape.seq}: step ${stepMs.toFixed(0)} ms`);
    return { ...(await profileKernels(dev, record, syncMs, repeat)), stepMs, syncMs };
  },
};
document.getElementById("status")!.textContent = "ready";
