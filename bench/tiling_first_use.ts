/**
 * What a matmul tiling costs on first use, compile included, beside its steady speed: the
 * MLP's two Linear products (784→256→10, batch 64) forward and backward, first step (every
 * pipeline compiles) then the mean of 4 more, and a 512³ Linear forward + backward. On CPU
 * adapters a large register block compiles for minutes (SwiftShader, 32×32: 5 min for the
 * MLP's pipelines under load), which every run pays before its first step; bench/README.md
 * "Tiling on first use" has the sitting that chose SwiftShader's default.
 *
 *   deno run -A --no-check bench/tiling_first_use.ts [--tilings 32x32x8x1,8x8x8x1,…]   (lavapipe)
 *   npx playwright test -c bench/playwright.config.ts bench.spec.ts -g "first use"     (SwiftShader)
 *
 * A tiling is `tm x tn x wgx x wgy` (register kernel) or with a fifth `x bk` (shared memory).
 * Each tiling gets a device of its own, so no pipeline is shared between them.
 */
import { Device } from "../src/gpu/mod.ts";
import type { MatmulTiling } from "../src/gpu/tuning.ts";
import { fromArray } from "../src/tensor/creation.ts";
import { forwardBackward } from "../src/tensor/op.ts";
import { linearOp } from "../src/tensor/ops/matmul.ts";
import type { Tensor } from "../src/tensor/tensor.ts";

export const DEFAULT_TILINGS = ["32x32x8x1", "16x16x8x1", "8x8x8x1", "4x8x8x1", "4x4x16x16x16"];

export interface FirstUse {
  tiling: string;
  firstStepMs: number;
  stepMs: number;
  big512Ms: number;
}

/** `tm x tn x wgx x wgy [x bk]` → a tiling; a malformed one is named. */
export function parseTiling(s: string): MatmulTiling {
  const v = s.split("x").map(Number);
  if (!(v.length === 4 || v.length === 5) || !v.every((x) => Number.isInteger(x) && x >= 0)) {
    throw new RangeError(`--tilings: "${s}" is not tm x tn x wgx x wgy [x bk] (integers, e.g. 8x8x8x1)`);
  }
  return { tm: v[0], tn: v[1], wgx: v[2], wgy: v[3], bk: v[4] ?? 0 };
}

/** A seeded uniform in [-1, 1) (the numbers do not matter, only the work). */
function filled(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return a;
}

async function linearStep(device: Device, b: number, i: number, o: number, bias: boolean): Promise<void> {
  const on = { device };
  const inputs: Tensor[] = [fromArray(filled(b * i, 1), [b, i], on), fromArray(filled(o * i, 2), [o, i], on)];
  if (bias) inputs.push(fromArray(filled(o, 3), [o], on));
  const { output, grads } = forwardBackward(linearOp, inputs, undefined, fromArray(filled(b * o, 4), [b, o], on));
  await output.toArray();
  for (const g of grads) await g!.toArray();
}

/** Time each tiling on a device of its own; `log` gets a line per tiling. */
export async function firstUse(tilings: string[] = DEFAULT_TILINGS, log: (line: string) => void = console.log): Promise<FirstUse[]> {
  const out: FirstUse[] = [];
  for (const name of tilings) {
    const device = await Device.request({ label: `first-use-${name}`, matmul: parseTiling(name) });
    const mlpStep = async () => {
      await linearStep(device, 64, 784, 256, true);
      await linearStep(device, 64, 256, 10, true);
    };
    const t0 = performance.now();
    await mlpStep();
    const t1 = performance.now();
    for (let i = 0; i < 4; i++) await mlpStep();
    const t2 = performance.now();
    await linearStep(device, 512, 512, 512, false); // compiles the square product's variants
    const t3 = performance.now();
    await linearStep(device, 512, 512, 512, false);
    await linearStep(device, 512, 512, 512, false);
    const t4 = performance.now();
    const r = { tiling: name, firstStepMs: t1 - t0, stepMs: (t2 - t1) / 4, big512Ms: (t4 - t3) / 2 };
    out.push(r);
    log(`${name}: first MLP step ${r.firstStepMs.toFixed(0)} ms, then ${r.stepMs.toFixed(0)} ms/step; 512³ fwd+bwd ${r.big512Ms.toFixed(0)} ms`);
    device.gpu.destroy();
  }
  return out;
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  const { arg } = await import("./flags.ts");
  await firstUse(arg("tilings", DEFAULT_TILINGS.join(",")).split(","));
}
