/**
 * Attention alone, both implementations (src/tensor/ops/attention.ts `AttentionKernel`): one
 * causal forward + backward at gpt-nano's attention shape (B·H heads of T × D), each launch
 * (the scores path's products included) replayed `--repeat` times in one submit by
 * bench/profile.ts's profileKernels, with GFLOP/s as bench/profile.ts counts them. For
 * iterating on the kernels without a whole training step (bench/seq_profile.ts is that).
 *
 * Then the same with a float additive mask (`attnBias`, ALiBi's [1, H, T, T]), a constant
 * and a learned one (its gradient too): in each kernel, and on the composed path
 * (nn `attentionWeights`: scores, softmax and products as separate ops), which is where a
 * float mask ran before the kernels took it. `--bias-only` skips the unbiased rows;
 * `--totals` prints each row's total only, not its launches.
 *
 *   deno run -A --no-check bench/attention_bench.ts [--batch 8] [--heads 4] [--seq 64] [--dim 32] [--repeat 10]
 *     [--bias-only] [--totals]
 */
import { attentionWeights, Device, fromArray, Variable } from "../src/index.ts";
import { apply } from "../src/autograd/mod.ts";
import { forwardBackward } from "../src/tensor/op.ts";
import { attentionCall, type AttentionKernel, attentionOp } from "../src/tensor/ops/attention.ts";
import { profileKernels, timeMedian } from "./profile.ts";
import { flag } from "./flags.ts";

const b = flag("batch", 8), h = flag("heads", 4), t = flag("seq", 64), d = flag("dim", 32);
const REPEAT = flag("repeat", 10);
const biasOnly = Deno.args.includes("--bias-only"), totalsOnly = Deno.args.includes("--totals");
const device = await Device.request({ label: "attention-bench" });
let seed = 1;
const rand = (n: number) =>
  Float32Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1);
const shape = [b, h, t, d];
const n = b * h * t * d;
const [q, k, v, dout] = [0, 1, 2, 3].map(() => fromArray(rand(n), shape, { device }).keep());
// ALiBi: head hh adds -m_hh · (i - j) to the score of query i, key j (m_hh = 2^(-8(hh+1)/H)).
const alibi = Float32Array.from({ length: h * t * t }, (_, x) => {
  const hh = Math.floor(x / (t * t)), i = Math.floor(x / t) % t, j = x % t;
  return -(2 ** (-8 * (hh + 1) / h)) * Math.abs(i - j);
});
const bias = fromArray(alibi, [1, h, t, t], { device }).keep();
const load = Deno.loadavg();
const f = (x: number, n = 1) => x.toFixed(n);
console.log(`attention B=${b} H=${h} T=${t} D=${d} causal; load ${load.map((x) => f(x, 2)).join(" ")}`);

/** One forward + backward on the tape: q, k, v need gradients, the bias one when `learned`. */
function taped(path: AttentionKernel | "composed", learned: boolean): () => void {
  return () => {
    const [vq, vk, vv] = [q, k, v].map((x) => new Variable(x, true));
    const vb = new Variable(bias, learned);
    let y: Variable;
    if (path === "composed") {
      y = attentionWeights(vq, vk, vv, { causal: true, attnBias: vb }).output;
    } else {
      const { inputs, attrs } = attentionCall(vq, vk, vv, { causal: true, attnBias: vb, kernel: path });
      y = apply(attentionOp, inputs, attrs);
    }
    y.backward(dout);
  };
}

const rows: [string, () => unknown][] = [];
if (!biasOnly) {
  for (const kernel of ["fused", "scores"] as AttentionKernel[]) {
    rows.push([kernel, () => {
      const { inputs, attrs } = attentionCall(q, k, v, { causal: true, kernel });
      return forwardBackward(attentionOp, inputs, attrs, dout);
    }]);
  }
}
for (const learned of [false, true]) {
  for (const path of ["fused", "scores", "composed"] as const) {
    rows.push([`${path} + ${learned ? "learned" : "constant"} bias`, taped(path, learned)]);
  }
}
for (const [name, record] of rows) {
  record();
  await device.sync();
  device.endStep();
  const syncMs = await timeMedian(5, () => device.sync());
  const p = await profileKernels(device, record, syncMs, REPEAT);
  if (!totalsOnly) {
    for (const kt of p.kernels) {
      const gf = kt.flop ? `${f(kt.flop / 1e6 / kt.ms, 2)} GFLOP/s` : "";
      console.log(`${name.padEnd(24)} ${kt.kernel.padEnd(34)} ${kt.detail ?? ""} ${f(kt.ms, 2).padStart(8)} ms  ${gf}`);
    }
  }
  console.log(`${name.padEnd(24)} total ${f(p.kernelMs, 2).padStart(8)} ms over ${p.kernels.length} launches`);
}
