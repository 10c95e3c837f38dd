/**
 * The recurrence ops (the per-step half of an LSTM / GRU layer): output and the gradient of
 * every input against the float64 reference, with W_ih = identity so that gx is the
 * reference's x and dgx its dx.
 */
import { fromArray } from "../../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../../src/tensor/op.ts";
import { gruRecurrenceOp, lstmRecurrenceOp } from "../../../../src/tensor/ops/rnn.ts";
import { type RnnKind, rnnRef } from "../../../reference/rnn.ts";
import { assertEquals, assertRelClose } from "../../../util/assert.ts";
import { gpuTest } from "../../../util/gpu.ts";
import { mulberry32, randn } from "../../../util/random.ts";

const CASES = [
  { steps: 5, batch: 3, hidden: 9 },
  { steps: 1, batch: 1, hidden: 7 },
  { steps: 4, batch: 2, hidden: 70 }, // batch·hidden past one workgroup
];

for (const kind of ["lstm", "gru"] as RnnKind[]) {
  for (const bias of [true, false]) {
    gpuTest(
      `${kind} recurrence (bias ${bias}) output and gradients of gx, w_hh, b_hh, h0, c0 match f64 reference`,
      async () => {
        const rng = mulberry32(kind === "lstm" ? 401 : 402);
        for (const { steps: T, batch: B, hidden: H } of CASES) {
          const G = (kind === "lstm" ? 4 : 3) * H, S = B * H;
          const eye = new Float64Array(G * G);
          for (let i = 0; i < G; i++) eye[i * G + i] = 1;
          const gx = randn(T * B * G, rng), whh = randn(G * H, rng, 0.3), bhh = randn(G, rng, 0.5);
          const h0 = randn(S, rng), c0 = randn(S, rng);
          const rows = kind === "lstm" ? T + 1 : T;
          const dout = randn(rows * S, rng);
          const weights = { wih: eye, whh, ...(bias ? { bih: new Float64Array(G), bhh } : {}) };
          // The op's output is [y; c_T] (LSTM) or y (GRU): its gradient is dy (and dc_T), dh_T inside dy.
          const dims = { steps: T, batch: B, input: G, hidden: H };
          const want = rnnRef(
            kind,
            dims,
            [weights],
            gx,
            h0,
            c0,
            dout.subarray(0, T * S),
            new Float64Array(S),
            dout.subarray(T * S),
          );
          const inputs = [
            fromArray(gx, [T, B, G]),
            fromArray(whh, [G, H]),
            ...(bias ? [fromArray(bhh, [G])] : []),
            fromArray(h0, [B, H]),
            ...(kind === "lstm" ? [fromArray(c0, [B, H])] : []),
          ];
          const op = kind === "lstm" ? lstmRecurrenceOp : gruRecurrenceOp;
          const { output, grads } = forwardBackward(op, inputs, { bias }, fromArray(dout, [rows, B, H]));
          const tag = `${kind} T=${T} B=${B} H=${H}`;
          assertEquals([...output.shape], [rows, B, H], `${tag} output shape`);
          const wantOut = kind === "lstm" ? [...want.y, ...want.cn] : want.y;
          assertRelClose(await output.toArray(), wantOut, 1e-4, `${tag} output`);
          assertRelClose(await grads[0]!.toArray(), want.dx, 1e-3, `${tag} dgx`);
          assertRelClose(await grads[1]!.toArray(), want.layers[0].whh, 1e-3, `${tag} dw_hh`);
          const at = bias ? 3 : 2;
          if (bias) assertRelClose(await grads[2]!.toArray(), want.layers[0].bhh, 1e-3, `${tag} db_hh`);
          assertRelClose(await grads[at]!.toArray(), want.dh0, 1e-3, `${tag} dh0`);
          if (kind === "lstm") assertRelClose(await grads[at + 1]!.toArray(), want.dc0, 1e-3, `${tag} dc0`);
        }
      },
    );
  }
}
