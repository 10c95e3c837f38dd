/**
 * LSTM, GRU and their cells: PyTorch's parameter names and init bounds, and output, final
 * states and every gradient (input, h0, c0, each weight) against the float64 reference on
 * odd shapes; batchFirst; dropout between layers in training only; dispatches per time step.
 */
import { Device, fromArray, GRU, GRUCell, LSTM, LSTMCell, Variable } from "../../../src/index.ts";
import type { Module } from "../../../src/nn/mod.ts";
import { type RnnKind, type RnnLayerWeights, rnnRef } from "../../reference/rnn.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** Swap the first two dims of a [d0, d1, inner] array. */
function swap01(a: ArrayLike<number>, d0: number, d1: number, inner: number): Float32Array {
  const out = new Float32Array(d0 * d1 * inner);
  for (let i = 0; i < d0; i++) {
    for (let j = 0; j < d1; j++) {
      for (let k = 0; k < inner; k++) out[(j * d0 + i) * inner + k] = a[(i * d1 + j) * inner + k];
    }
  }
  return out;
}

/** The module's weights as the reference takes them, read by PyTorch's names. */
async function weightsOf(m: Module, layers: number, suffix: (k: number) => string): Promise<RnnLayerWeights[]> {
  const sd = m.stateDict();
  const get = async (name: string) => sd.has(name) ? await sd.get(name)!.toArray() : undefined;
  const out: RnnLayerWeights[] = [];
  for (let k = 0; k < layers; k++) {
    const s = suffix(k);
    out.push({
      wih: (await get(`weight_ih${s}`))!,
      whh: (await get(`weight_hh${s}`))!,
      bih: await get(`bias_ih${s}`),
      bhh: await get(`bias_hh${s}`),
    });
  }
  return out;
}

const CASES = [
  { batchFirst: false, bias: true, layers: 2 },
  { batchFirst: true, bias: true, layers: 2 },
  { batchFirst: false, bias: false, layers: 1 },
];

for (const kind of ["lstm", "gru"] as RnnKind[]) {
  for (const { batchFirst, bias, layers: L } of CASES) {
    gpuTest(
      `${kind.toUpperCase()} (layers ${L}, batchFirst ${batchFirst}, bias ${bias}) output, final state and every gradient match f64 reference`,
      async () => {
        const rng = mulberry32(500 + L + (batchFirst ? 10 : 0) + (bias ? 20 : 0) + (kind === "lstm" ? 0 : 40));
        const T = 5, B = 3, I = 7, H = 9, S = B * H;
        const opts = { numLayers: L, batchFirst, bias, seed: 17 };
        const m = kind === "lstm" ? new LSTM(I, H, opts) : new GRU(I, H, opts);
        const names = m.namedParameters().map(([n]) => n);
        const want = [...Array(L).keys()].flatMap((
          k,
        ) => [`weight_ih_l${k}`, `weight_hh_l${k}`, ...(bias ? [`bias_ih_l${k}`, `bias_hh_l${k}`] : [])]);
        assertEquals(names, want, "PyTorch's parameter names and order");
        const weights = await weightsOf(m, L, (k) => `_l${k}`);
        const bound = 1 / Math.sqrt(H);
        for (const w of weights) {
          for (const v of [w.wih, w.whh, w.bih ?? [], w.bhh ?? []]) {
            assert(Array.from(v).every((e) => Math.abs(e) <= bound), `init within U(±1/√${H})`);
          }
        }
        const x = randn(T * B * I, rng), h0 = randn(L * S, rng), c0 = randn(L * S, rng);
        const dy = randn(T * S, rng), dhn = randn(L * S, rng), dcn = randn(L * S, rng);
        // The reference runs [T, B, ...]; the module takes and returns [B, T, ...] when batchFirst.
        const xIn = batchFirst ? swap01(x, T, B, I) : x, dyIn = batchFirst ? swap01(dy, T, B, H) : dy;
        const ref = rnnRef(
          kind,
          { steps: T, batch: B, input: I, hidden: H },
          weights,
          x,
          h0,
          c0,
          dy,
          dhn,
          kind === "lstm" ? dcn : [],
        );
        const xv = new Variable(fromArray(xIn, batchFirst ? [B, T, I] : [T, B, I]), true);
        const hv = new Variable(fromArray(h0, [L, B, H]), true), cv = new Variable(fromArray(c0, [L, B, H]), true);
        const dot = (v: Variable, a: Float32Array) => v.mul(new Variable(fromArray(a, [...v.shape]))).sum();
        let loss: Variable, out: Variable, hn: Variable, cn: Variable | undefined;
        if (m instanceof LSTM) {
          const r = m.forwardSeq(xv, { h: hv, c: cv });
          [out, hn, cn] = [r.output, r.h, r.c];
          loss = dot(out, dyIn).add(dot(hn, dhn)).add(dot(cn, dcn));
        } else {
          const r = (m as GRU).forwardSeq(xv, hv);
          [out, hn] = [r.output, r.h];
          loss = dot(out, dyIn).add(dot(hn, dhn));
        }
        assertEquals([...out.shape], batchFirst ? [B, T, H] : [T, B, H], "output shape");
        assertEquals([...hn.shape], [L, B, H], "h_n shape");
        loss.backward();
        const tag = `${kind} L=${L}`;
        const outGot = await out.toArray();
        assertRelClose(batchFirst ? swap01(outGot, B, T, H) : outGot, ref.y, 1e-3, `${tag} output`);
        assertRelClose(await hn.toArray(), ref.hn, 1e-3, `${tag} h_n`);
        if (cn) assertRelClose(await cn.toArray(), ref.cn, 1e-3, `${tag} c_n`);
        const dx = await xv.grad!.toArray();
        assertRelClose(batchFirst ? swap01(dx, B, T, I) : dx, ref.dx, 1e-3, `${tag} dx`);
        assertRelClose(await hv.grad!.toArray(), ref.dh0, 1e-3, `${tag} dh0`);
        if (kind === "lstm") assertRelClose(await cv.grad!.toArray(), ref.dc0, 1e-3, `${tag} dc0`);
        const params = new Map(m.namedParameters());
        for (let k = 0; k < L; k++) {
          for (
            const [key, name] of [["wih", "weight_ih"], ["whh", "weight_hh"], ["bih", "bias_ih"], [
              "bhh",
              "bias_hh",
            ]] as const
          ) {
            const p = params.get(`${name}_l${k}`);
            if (!p) continue;
            assertRelClose(await p.grad!.toArray(), ref.layers[k][key], 1e-3, `${tag} ${name}_l${k} grad`);
          }
        }
      },
    );
  }
}

for (const kind of ["lstm", "gru"] as RnnKind[]) {
  gpuTest(
    `${kind === "lstm" ? "LSTMCell" : "GRUCell"} stepped 4 times through the tape matches the f64 one-layer reference`,
    async () => {
      const rng = mulberry32(kind === "lstm" ? 601 : 602);
      const T = 4, B = 3, I = 7, H = 9, S = B * H;
      const cell = kind === "lstm" ? new LSTMCell(I, H, { seed: 3 }) : new GRUCell(I, H, { seed: 3 });
      const suffix = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"];
      assertEquals(cell.namedParameters().map(([n]) => n), suffix, "PyTorch's cell parameter names");
      const weights = await weightsOf(cell, 1, () => "");
      const x = randn(T * B * I, rng), h0 = randn(S, rng), c0 = randn(S, rng);
      const dy = randn(T * S, rng), dcn = randn(S, rng);
      const ref = rnnRef(
        kind,
        { steps: T, batch: B, input: I, hidden: H },
        weights,
        x,
        h0,
        c0,
        dy,
        new Float32Array(S),
        dcn,
      );
      const xv = new Variable(fromArray(x, [T, B, I]), true);
      const hv = new Variable(fromArray(h0, [B, H]), true), cv = new Variable(fromArray(c0, [B, H]), true);
      const dot = (v: Variable, a: ArrayLike<number>) => v.mul(new Variable(fromArray(a, [...v.shape]))).sum();
      let h = hv, c = cv, loss: Variable | undefined;
      const hs: Variable[] = [];
      for (let t = 0; t < T; t++) {
        const xt = xv.narrow(0, t, 1).reshape([B, I]);
        if (cell instanceof LSTMCell) ({ h, c } = cell.forwardStep(xt, { h, c }));
        else h = (cell as GRUCell).forwardStep(xt, h);
        hs.push(h);
        const term = dot(h, dy.subarray(t * S, (t + 1) * S));
        loss = loss ? loss.add(term) : term;
      }
      if (kind === "lstm") loss = loss!.add(dot(c, dcn));
      loss!.backward();
      const ys = (await Promise.all(hs.map((v) => v.toArray()))).flatMap((a) => [...a]);
      assertRelClose(ys, ref.y, 1e-3, `${kind} cell h_t`);
      if (kind === "lstm") assertRelClose(await c.toArray(), ref.cn, 1e-3, "cell c_T");
      assertRelClose(await xv.grad!.toArray(), ref.dx, 1e-3, `${kind} cell dx`);
      assertRelClose(await hv.grad!.toArray(), ref.dh0, 1e-3, `${kind} cell dh0`);
      if (kind === "lstm") assertRelClose(await cv.grad!.toArray(), ref.dc0, 1e-3, "cell dc0");
      const keys = ["wih", "whh", "bih", "bhh"] as const;
      for (const [i, [name, p]] of cell.namedParameters().entries()) {
        assertRelClose(await p.grad!.toArray(), ref.layers[0][keys[i]], 1e-3, `${kind} cell ${name} grad`);
      }
    },
  );
}

gpuTest("LSTM dropout between layers acts in training only; eval output matches the reference", async () => {
  const rng = mulberry32(700);
  const T = 5, B = 3, I = 7, H = 9;
  const lstm = new LSTM(I, H, { numLayers: 2, dropout: 0.5, seed: 5 });
  const x = randn(T * B * I, rng);
  const weights = await weightsOf(lstm, 2, (k) => `_l${k}`);
  const zeros = new Float32Array(2 * B * H);
  const ref = rnnRef(
    "lstm",
    { steps: T, batch: B, input: I, hidden: H },
    weights,
    x,
    zeros,
    zeros,
    new Float32Array(T * B * H),
    zeros,
    zeros,
  );
  const run = async () => await lstm.forward(new Variable(fromArray(x, [T, B, I]))).toArray();
  const train = await run();
  lstm.eval();
  assertRelClose(await run(), ref.y, 1e-3, "eval output (no dropout)");
  lstm.train();
  let differs = 0;
  train.forEach((v, i) => (differs += +(Math.abs(v - ref.y[i]) > 1e-3)));
  assert(
    differs > train.length / 10,
    `training output should differ from eval with dropout 0.5, ${differs} of ${train.length} do`,
  );
});

gpuTest("LSTM and GRU record 2 dispatches per time step forward and 2 backward", (device: Device) => {
  const count = (fn: () => void) => {
    let n = 0;
    const orig = device.dispatch;
    device.dispatch = (d) => {
      n++;
      orig.call(device, d);
    };
    try {
      fn();
    } finally {
      device.dispatch = orig;
    }
    return n;
  };
  for (const Ctor of [LSTM, GRU]) {
    const m = new Ctor(7, 9, { seed: 1 });
    const perStep = (steps: number) => {
      m.zeroGrad(); // accumulating into existing gradients would add dispatches
      const x = new Variable(fromArray(randn(steps * 3 * 7, mulberry32(steps)), [steps, 3, 7]));
      let out!: Variable;
      const fwd = count(() => (out = m.forward(x)));
      const grad = fromArray(new Float32Array(steps * 3 * 9).fill(1), [steps, 3, 9]);
      const bwd = count(() => out.backward(grad));
      return { fwd, bwd };
    };
    const a = perStep(5), b = perStep(6);
    assertEquals(b.fwd - a.fwd, 2, `${Ctor.name} forward dispatches per step`);
    assertEquals(b.bwd - a.bwd, 2, `${Ctor.name} backward dispatches per step`);
  }
});

gpuTest("RNN modules refuse bad sizes and shapes naming the knob and the value", () => {
  assertThrows(() => new LSTM(7, 0), RangeError, "LSTM", "hiddenSize", "got 0");
  assertThrows(() => new GRU(7, 9, { numLayers: 1.5 }), RangeError, "numLayers", "1.5");
  assertThrows(() => new GRU(7, 9, { dropout: 1 }), RangeError, "dropout must be in [0, 1)", "got 1");
  const lstm = new LSTM(7, 9, { numLayers: 2 });
  assertThrows(
    () => lstm.forward(new Variable(fromArray(new Float32Array(30), [5, 6]))),
    RangeError,
    "LSTM(7, 9): input must be [seq, batch, 7] or unbatched [seq, 7]",
    "got [5,6]",
  );
  const x = new Variable(fromArray(new Float32Array(5 * 3 * 7), [5, 3, 7]));
  const h = new Variable(fromArray(new Float32Array(27), [1, 3, 9]));
  assertThrows(
    () => lstm.forwardSeq(x, { h, c: h }),
    RangeError,
    "h0 must be [numLayers, batch, hiddenSize] = [2, 3, 9]",
    "[1,3,9]",
  );
  assertThrows(() => new GRUCell(7, 9).forward(x), RangeError, "GRUCell(7, 9)", "[batch, 7]", "[5,3,7]");
  const bi = new GRU(7, 9, { bidirectional: true });
  assertThrows(() => bi.forwardSeq(x, h), RangeError, "h0 must be [2·numLayers (bidirectional), batch, hiddenSize] = [2, 3, 9]", "[1,3,9]");
});

gpuTest("bidirectional LSTM has PyTorch's parameters, in its order, and its output and state shapes", () => {
  const lstm = new LSTM(7, 9, { numLayers: 2, bidirectional: true });
  const names = lstm.namedParameters().map(([n, p]) => `${n} [${p.shape}]`);
  const layer = (k: number, inSize: number) =>
    ["", "_reverse"].flatMap((d) => [`weight_ih_l${k}${d} [36,${inSize}]`, `weight_hh_l${k}${d} [36,9]`, `bias_ih_l${k}${d} [36]`, `bias_hh_l${k}${d} [36]`]);
  assertEquals(names, [...layer(0, 7), ...layer(1, 18)]);
  const { output, h, c } = lstm.forwardSeq(new Variable(fromArray(new Float32Array(5 * 3 * 7), [5, 3, 7])));
  assertEquals([output.shape, h.shape, c.shape], [[5, 3, 18], [4, 3, 9], [4, 3, 9]]);
  assert(lstm.extraRepr().includes("bidirectional=true"), lstm.extraRepr());
});

gpuTest("LSTM, GRU and the cells take unbatched input as PyTorch does (the batch dim dropped)", async () => {
  const rng = mulberry32(800);
  const T = 5, I = 7, H = 9;
  const x = randn(T * I, rng), h0 = randn(2 * H, rng), c0 = randn(2 * H, rng);
  for (const kind of ["lstm", "gru"] as RnnKind[]) {
    for (const batchFirst of [false, true]) {
      const opts = { numLayers: 2, batchFirst, seed: 9 };
      const m = kind === "lstm" ? new LSTM(I, H, opts) : new GRU(I, H, opts);
      const ref = rnnRef(
        kind,
        { steps: T, batch: 1, input: I, hidden: H },
        await weightsOf(m, 2, (k) => `_l${k}`),
        x,
        h0,
        c0,
        new Float32Array(T * H),
        new Float32Array(2 * H),
        new Float32Array(2 * H),
      );
      const xv = new Variable(fromArray(x, [T, I])), hv = new Variable(fromArray(h0, [2, H]));
      const r = m instanceof LSTM
        ? m.forwardSeq(xv, { h: hv, c: new Variable(fromArray(c0, [2, H])) })
        : (m as GRU).forwardSeq(xv, hv);
      const tag = `${kind} unbatched (batchFirst ${batchFirst})`;
      assertEquals([...r.output.shape, ...r.h.shape], [T, H, 2, H], `${tag} shapes`);
      assertRelClose(await r.output.toArray(), ref.y, 1e-3, `${tag} output`);
      assertRelClose(await r.h.toArray(), ref.hn, 1e-3, `${tag} h_n`);
    }
  }
  const cell = new LSTMCell(I, H, { seed: 2 });
  const weights = await weightsOf(cell, 1, () => "");
  const one = rnnRef(
    "lstm",
    { steps: 1, batch: 1, input: I, hidden: H },
    weights,
    x.subarray(0, I),
    h0.subarray(0, H),
    c0.subarray(0, H),
    new Float32Array(H),
    new Float32Array(H),
    new Float32Array(H),
  );
  const s = cell.forwardStep(new Variable(fromArray(x.subarray(0, I), [I])), {
    h: new Variable(fromArray(h0.subarray(0, H), [H])),
    c: new Variable(fromArray(c0.subarray(0, H), [H])),
  });
  assertEquals([...s.h.shape, ...s.c.shape], [H, H], "LSTMCell unbatched shapes");
  assertRelClose(await s.c.toArray(), one.cn, 1e-3, "LSTMCell unbatched c");
  const gru = new GRUCell(I, H, { seed: 2 });
  const g1 = rnnRef(
    "gru",
    { steps: 1, batch: 1, input: I, hidden: H },
    await weightsOf(gru, 1, () => ""),
    x.subarray(0, I),
    h0.subarray(0, H),
    [],
    new Float32Array(H),
    new Float32Array(H),
    [],
  );
  const gh = gru.forwardStep(
    new Variable(fromArray(x.subarray(0, I), [I])),
    new Variable(fromArray(h0.subarray(0, H), [H])),
  );
  assertEquals([...gh.shape], [H], "GRUCell unbatched shape");
  assertRelClose(await gh.toArray(), g1.y, 1e-3, "GRUCell unbatched h");
});
