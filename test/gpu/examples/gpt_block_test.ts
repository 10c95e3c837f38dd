/**
 * gpt-nano's block runs its feed-forward fused (ff_up → GELU in one launch, dropout and the
 * residual in ff_down's store, GELU's gradient in ff_down's dx product): in training mode, with
 * the same seeds, its output and every parameter's gradient equal the unfused chain's
 * (ff_up, GELU, ff_down, Dropout, add as separate ops), which the f64 references of
 * test/gpu/nn/fused_test.ts check op by op.
 */
import { fromArray, manualSeed, Variable } from "../../../src/index.ts";
import { GptBlock } from "../../../src/zoo/mod.ts";
import { assertRelClose } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

gpuTest("GptBlock's fused feed-forward (dropout 0.3, training) matches the unfused chain: output and every gradient", async (device) => {
  const [B, T, D, H, F] = [2, 5, 12, 3, 20];
  const block = new GptBlock(D, H, F, 0.3, device);
  const params = block.namedParameters();
  const x = fromArray(randn(B * T * D, mulberry32(1700)), [B, T, D], { device });
  const dy = fromArray(randn(B * T * D, mulberry32(1701)), [B, T, D], { device });
  const run = async (fused: boolean) => {
    for (const [, p] of params) p.zeroGrad();
    manualSeed(1702);
    const xv = new Variable(x, true);
    let y: Variable;
    if (fused) y = block.forward(xv);
    else {
      const n1 = block.ln1.forward(xv);
      const h = xv.add(block.drop.forward(block.attn.forward(n1, n1, n1, { causal: true })));
      const n2 = block.ln2.forward(h);
      y = h.add(block.drop.forward(block.ff_down.forward(block.act.forward(block.ff_up.forward(n2)))));
    }
    y.backward(dy);
    return {
      y: await y.data.toArray(),
      dx: await xv.grad!.toArray(),
      grads: await Promise.all(params.map(([, p]) => p.grad!.toArray())),
    };
  };
  const fused = await run(true), plain = await run(false);
  assertRelClose(fused.y, plain.y, 1e-5, "block output");
  assertRelClose(fused.dx, plain.dx, 1e-5, "dx");
  params.forEach(([name], i) => assertRelClose(fused.grads[i], plain.grads[i], 1e-5, `grad ${name}`));
});
