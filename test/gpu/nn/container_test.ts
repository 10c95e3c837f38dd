import { apply, Parameter, Variable } from "../../../src/autograd/mod.ts";
import { fromArray, mulOp, ones } from "../../../src/tensor/mod.ts";
import { Module } from "../../../src/nn/module.ts";
import { FlowBuilder, Sequential } from "../../../src/nn/container.ts";
import { assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** y = x · w, w of shape [n] broadcast over rows. */
class Scale extends Module {
  w: Parameter;
  constructor(readonly host: Float32Array<ArrayBuffer>) {
    super();
    this.w = new Parameter(fromArray(host));
  }
  forward(x: Variable): Variable {
    return apply(mulOp, [x, this.w], undefined);
  }
}

/** Changes the shape: keeps the first column. */
class Narrow extends Module {
  forward(x: Variable): Variable {
    return new Variable(fromArray(new Float32Array(x.shape[0]), [x.shape[0], 1]));
  }
}

const ROWS = 7, COLS = 33;

gpuTest("Sequential chains its modules, names them 0, 1, ... and back-propagates", async () => {
  const rng = mulberry32(11);
  const w0 = randn(COLS, rng), w1 = randn(COLS, rng), x = randn(ROWS * COLS, rng), dy = randn(ROWS * COLS, rng);
  const seq = new Sequential(new Scale(w0), new Scale(w1));
  assertEquals(seq.namedParameters().map(([n]) => n), ["0.w", "1.w"], "names");
  assertEquals(seq.length, 2, "length");
  const y = seq.forward(new Variable(fromArray(x, [ROWS, COLS])));
  y.backward(fromArray(dy, [ROWS, COLS]));
  const wantY = new Float64Array(ROWS * COLS), wantG0 = new Float64Array(COLS);
  for (let i = 0; i < ROWS; i++) {
    for (let j = 0; j < COLS; j++) {
      const k = i * COLS + j;
      wantY[k] = x[k] * w0[j] * w1[j];
      wantG0[j] += dy[k] * x[k] * w1[j];
    }
  }
  assertRelClose(await y.data.toArray(), wantY, 1e-4, "y");
  assertRelClose(await (seq.at(0) as Scale).w.grad!.toArray(), wantG0, 1e-4, "d w0");
  assertThrows(() => seq.at(2), RangeError, "index 2", "2 modules");
});

gpuTest("FlowBuilder from/also/through builds x -> h = a(x) -> c(h + b(h)) with children 0, 1, 2", async () => {
  const rng = mulberry32(12);
  const wa = randn(COLS, rng), wb = randn(COLS, rng), wc = randn(COLS, rng), x = randn(ROWS * COLS, rng);
  const flow = FlowBuilder.from(new Scale(wa)).also(new Scale(wb)).through(new Scale(wc)).build();
  assertEquals(flow.namedParameters().map(([n]) => n), ["0.w", "1.w", "2.w"], "names");
  const y = flow.forward(new Variable(fromArray(x, [ROWS, COLS])));
  y.backward(ones([ROWS, COLS]));
  const wantY = new Float64Array(ROWS * COLS), wantGa = new Float64Array(COLS), wantGb = new Float64Array(COLS);
  for (let i = 0; i < ROWS; i++) {
    for (let j = 0; j < COLS; j++) {
      const k = i * COLS + j, h = x[k] * wa[j];
      wantY[k] = (h + h * wb[j]) * wc[j];
      wantGb[j] += h * wc[j];
      wantGa[j] += x[k] * (1 + wb[j]) * wc[j];
    }
  }
  assertRelClose(await y.data.toArray(), wantY, 1e-4, "y");
  const [[, ga], [, gb]] = flow.namedParameters();
  assertRelClose(await ga.grad!.toArray(), wantGa, 1e-4, "d wa");
  assertRelClose(await gb.grad!.toArray(), wantGb, 1e-4, "d wb");
});

gpuTest("FlowBuilder.also refuses a branch that changes the shape; from refuses a non-module", () => {
  const flow = FlowBuilder.from(new Scale(new Float32Array(3).fill(1))).also(new Narrow()).build();
  assertThrows(
    () => flow.forward(new Variable(fromArray(new Float32Array(6), [2, 3]))),
    RangeError,
    "Flow.also",
    "Narrow",
    "[2,1]",
    "[2,3]",
  );
  assertThrows(() => FlowBuilder.from({} as Module), TypeError, "FlowBuilder.from", "Module");
});
