/**
 * LSTM, GRU (one direction and bidirectional) and their cells against PyTorch
 * (test/fixtures/make_rnn_golden.py): PyTorch's state dict is loaded by its own keys with
 * `loadStateDict` (strict), then outputs, final states and the gradients of the input, the
 * initial states and every parameter must match.
 */
import { fromArray, GRU, GRUCell, LSTM, LSTMCell, type Tensor, Variable } from "../../../src/index.ts";
import type { Module } from "../../../src/nn/mod.ts";
import golden from "../../fixtures/rnn_golden.json" with { type: "json" };
import { assertEquals, assertRelClose } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

type State = Record<string, { shape: number[]; values: number[] }>;

function load(m: Module, state: State): void {
  const sd = new Map<string, Tensor>(Object.entries(state).map(([k, v]) => [k, fromArray(v.values, v.shape)]));
  const result = m.loadStateDict(sd, { source: "rnn_golden.json" });
  assertEquals(result, { missing: [], unexpected: [] }, "state dict keys");
}

const dot = (v: Variable, a: number[]) => v.mul(new Variable(fromArray(a, [...v.shape]))).sum();

async function checkGrads(m: Module, grads: Record<string, number[]>, tag: string): Promise<void> {
  const params = m.namedParameters();
  assertEquals(params.map(([n]) => n), Object.keys(grads), `${tag} parameter order`);
  for (const [name, p] of params) assertRelClose(await p.grad!.toArray(), grads[name], 1e-3, `${tag} ${name} grad`);
}

for (const g of [...golden.seq, ...golden.bidirectional]) {
  gpuTest(
    `${g.kind.toUpperCase()} loads PyTorch's state dict and matches its outputs and gradients: ${g.name}`,
    async () => {
      const opts = { numLayers: g.layers, batchFirst: g.batchFirst, bias: g.bias, bidirectional: g.bidirectional };
      const m = g.kind === "lstm" ? new LSTM(g.input, g.hidden, opts) : new GRU(g.input, g.hidden, opts);
      load(m, g.state as State);
      const [T, B, L, H] = [g.steps, g.batch, g.layers * (g.bidirectional ? 2 : 1), g.hidden];
      const x = new Variable(fromArray(g.x, g.batchFirst ? [B, T, g.input] : [T, B, g.input]), true);
      const h0 = new Variable(fromArray(g.h0, [L, B, H]), true);
      const c0 = g.c0 ? new Variable(fromArray(g.c0, [L, B, H]), true) : undefined;
      let out: Variable, hn: Variable, cn: Variable | undefined;
      if (m instanceof LSTM) ({ output: out, h: hn, c: cn } = m.forwardSeq(x, { h: h0, c: c0! }));
      else ({ output: out, h: hn } = (m as GRU).forwardSeq(x, h0));
      let loss = dot(out, g.dy).add(dot(hn, g.dhn));
      if (cn) loss = loss.add(dot(cn, g.dcn!));
      loss.backward();
      assertRelClose(await out.toArray(), g.y, 1e-4, `${g.name} output`);
      assertRelClose(await hn.toArray(), g.hn, 1e-4, `${g.name} h_n`);
      if (cn) assertRelClose(await cn.toArray(), g.cn!, 1e-4, `${g.name} c_n`);
      assertRelClose(await x.grad!.toArray(), g.dx, 1e-3, `${g.name} dx`);
      assertRelClose(await h0.grad!.toArray(), g.dh0, 1e-3, `${g.name} dh0`);
      if (c0) assertRelClose(await c0.grad!.toArray(), g.dc0!, 1e-3, `${g.name} dc0`);
      await checkGrads(m, g.grads as Record<string, number[]>, g.name);
    },
  );
}

for (const g of golden.cell) {
  gpuTest(
    `${g.kind === "lstm" ? "LSTMCell" : "GRUCell"} loads PyTorch's state dict and matches it over steps: ${g.name}`,
    async () => {
      const m = g.kind === "lstm" ? new LSTMCell(g.input, g.hidden) : new GRUCell(g.input, g.hidden);
      load(m, g.state as State);
      const [T, B, H, S] = [g.steps, g.batch, g.hidden, g.batch * g.hidden];
      const x = new Variable(fromArray(g.x, [T, B, g.input]), true);
      const h0 = new Variable(fromArray(g.h0, [B, H]), true);
      const c0 = g.c0 ? new Variable(fromArray(g.c0, [B, H]), true) : undefined;
      let h = h0, c = c0, loss: Variable | undefined;
      const hs: Variable[] = [];
      for (let t = 0; t < T; t++) {
        const xt = x.narrow(0, t, 1).reshape([B, g.input]);
        if (m instanceof LSTMCell) ({ h, c } = m.forwardStep(xt, { h, c: c! }));
        else h = (m as GRUCell).forwardStep(xt, h);
        hs.push(h);
        const term = dot(h, g.dy.slice(t * S, (t + 1) * S));
        loss = loss ? loss.add(term) : term;
      }
      loss!.backward();
      const ys = (await Promise.all(hs.map((v) => v.toArray()))).flatMap((a) => [...a]);
      assertRelClose(ys, g.y, 1e-4, `${g.name} h_t`);
      assertRelClose(await x.grad!.toArray(), g.dx, 1e-3, `${g.name} dx`);
      assertRelClose(await h0.grad!.toArray(), g.dh0, 1e-3, `${g.name} dh0`);
      if (c0) assertRelClose(await c0.grad!.toArray(), g.dc0!, 1e-3, `${g.name} dc0`);
      await checkGrads(m, g.grads as Record<string, number[]>, g.name);
    },
  );
}
