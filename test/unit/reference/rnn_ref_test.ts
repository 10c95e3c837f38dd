import { type RnnDims, type RnnKind, type RnnLayerWeights, rnnRef } from "../../reference/rnn.ts";
import { assertRelClose } from "../../util/assert.ts";
import { numGradInPlace } from "../../util/numerical_gradient.ts";
import { mulberry32, randn } from "../../util/random.ts";

const f64 = (n: number, rng: () => number, scale = 1) => Float64Array.from(randn(n, rng, scale));

for (const kind of ["lstm", "gru"] as RnnKind[]) {
  for (const bias of [true, false]) {
    Deno.test(`${kind} reference gradients (x, h0, c0, every weight; bias ${bias}) match central differences`, () => {
      const rng = mulberry32(kind === "lstm" ? 311 : 312);
      const d: RnnDims = { steps: 3, batch: 2, input: 3, hidden: 2 };
      const L = 2, G = (kind === "lstm" ? 4 : 3) * d.hidden, S = d.batch * d.hidden;
      const layers: RnnLayerWeights[] = [0, 1].map((k) => {
        const inSize = k === 0 ? d.input : d.hidden;
        return {
          wih: f64(G * inSize, rng, 0.7),
          whh: f64(G * d.hidden, rng, 0.7),
          ...(bias ? { bih: f64(G, rng, 0.5), bhh: f64(G, rng, 0.5) } : {}),
        };
      });
      const x = f64(d.steps * d.batch * d.input, rng), h0 = f64(L * S, rng), c0 = f64(L * S, rng);
      const dy = f64(d.steps * S, rng), dhn = f64(L * S, rng), dcn = f64(L * S, rng);
      const loss = (ls: RnnLayerWeights[], xv: Float64Array, hv: Float64Array, cv: Float64Array) => {
        const r = rnnRef(kind, d, ls, xv, hv, cv, dy, dhn, dcn);
        let s = 0;
        r.y.forEach((v, i) => (s += v * dy[i]));
        r.hn.forEach((v, i) => (s += v * dhn[i]));
        if (kind === "lstm") r.cn.forEach((v, i) => (s += v * dcn[i]));
        return s;
      };
      const got = rnnRef(kind, d, layers, x, h0, c0, dy, dhn, dcn);
      const f = () => loss(layers, x, h0, c0);
      assertRelClose(got.dx, numGradInPlace(x, f), 1e-5, "dx");
      assertRelClose(got.dh0, numGradInPlace(h0, f), 1e-5, "dh0");
      if (kind === "lstm") assertRelClose(got.dc0, numGradInPlace(c0, f), 1e-5, "dc0");
      layers.forEach((l, k) => {
        for (const name of ["wih", "whh", "bih", "bhh"] as const) {
          const v = l[name];
          if (!v) continue;
          assertRelClose(got.layers[k][name], numGradInPlace(v as Float64Array, f), 1e-5, `${name} layer ${k}`);
        }
      });
    });
  }
}
