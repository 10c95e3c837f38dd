import { embeddingBagRef } from "../../reference/embedding_bag.ts";
import { golden, values } from "../../gpu/nn/torch/golden.ts";
import { assertRelClose } from "../../util/assert.ts";
import { numGradInPlace } from "../../util/numerical_gradient.ts";
import { mulberry32, randint, randn } from "../../util/random.ts";

Deno.test("embeddingBagRef weight gradients match central differences for sum, mean and max", () => {
  const rng = mulberry32(2807);
  const V = 6, D = 3, index = randint(12, V, rng), offsets = [0, 4, 4, 9];
  for (const mode of ["sum", "mean", "max"] as const) {
    for (const pad of [-1, 2]) {
      const w = Float64Array.from(randn(V * D, rng)), dy = randn(offsets.length * D, rng);
      const loss = () =>
        embeddingBagRef(w, [V, D], index, offsets, mode, pad, dy).y.reduce((s, v, i) => s + v * dy[i], 0);
      const num = numGradInPlace(w, loss, 1e-5);
      assertRelClose(embeddingBagRef(w, [V, D], index, offsets, mode, pad, dy).dw, num, 1e-6, `${mode} pad ${pad} dw`);
    }
  }
});

Deno.test("embeddingBagRef agrees with PyTorch's float64 golden values (empty bags give zeros)", () => {
  for (const g of golden.embeddingBag) {
    const [B, L] = g.index.shape;
    const offsets = g.offsets ?? Array.from({ length: B }, (_, i) => i * L);
    const pad = (g.options as { paddingIdx?: number }).paddingIdx ?? -1;
    const mode = (g.options as { mode: "sum" | "mean" | "max" }).mode;
    const r = embeddingBagRef(
      Float32Array.from(values(g.w)),
      g.w.shape as [number, number],
      g.index.data,
      offsets,
      mode,
      pad,
      Float32Array.from(values(g.dy)),
    );
    assertRelClose(r.y, values(g.y), 1e-8, `${g.name} y`);
    assertRelClose(r.dw, values(g.dw), 1e-8, `${g.name} dw`);
  }
});
