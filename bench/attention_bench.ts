/**
 * Attention alone, both implementations (src/tensor/ops/attention.ts `AttentionKernel`): one
 * causal forward + backward at gpt-nano's attention shape (B·H heads of T × D), each launch
 * (the scores path's products included) replayed `--repeat` times in one submit by
 * bench/profile.ts's profileKernels, with GFLOP/s as bench/profile.ts counts them. For
 * iterating on the kernels without a whole training step (bench/seq_profile.ts is that).
 *
 *   deno run -A --no-check bench/attention_bench.ts [--batch 8] [--heads 4] [--seq 64] [--dim 32] [--repeat 10]
 */
import { Device, fromArray } from "../src/index.ts";
import { forwardBackward } from "../src/tensor/op.ts";
import { attentionCall, type AttentionKernel, attentionOp } from "../src/tensor/ops/attention.ts";
import { profileKernels, timeMedian } from "./profile.ts";
import { flag } from "./flags.ts";

const b = flag("batch", 8), h = flag("heads", 4), t = flag("seq", 64), d = flag("dim", 32);
const REPEAT = flag("repeat", 10);
const device = await Device.request({ label: "attention-bench" });
let seed = 1;
const rand = (n: number) =>
  Float32Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1);
const shape = [b, h, t, d];
const n = b * h * t * d;
const [q, k, v, dout] = [0, 1, 2, 3].map(() => fromArray(rand(n), shape, { device }).keep());
const load = Deno.loadavg();
const f = (x: number, n = 1) => x.toFixed(n);
console.log(`attention B=${b} H=${h} T=${t} D=${d} causal; load ${load.map((x) => f(x, 2)).join(" ")}`);
for (const kernel of ["fused", "scores"] as AttentionKernel[]) {
  const record = () => {
    const { inputs, attrs } = attentionCall(q, k, v, { causal: true, kernel });
    return forwardBackward(attentionOp, inputs, attrs, dout);
  };
  record();
  await device.sync();
  device.endStep();
  const syncMs = await timeMedian(5, () => device.sync());
  const p = await profileKernels(device, record, syncMs, REPEAT);
  for (const kt of p.kernels) {
    const gf = kt.flop ? `${f(kt.flop / 1e6 / kt.ms, 2)} GFLOP/s` : "";
    console.log(`${kernel.padEnd(7)} ${kt.kernel.padEnd(34)} ${kt.detail ?? ""} ${f(kt.ms, 2).padStart(8)} ms  ${gf}`);
  }
  console.log(`${kernel.padEnd(7)} total ${f(p.kernelMs, 2)} ms over ${p.kernels.length} launches`);
}
