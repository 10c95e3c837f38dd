/**
 * The nn layers: PyTorch's default initialisation bounds, shapes, train/eval behaviour
 * (BatchNorm running statistics, Dropout), and that each layer's forward and gradients are
 * its op's (checked against small f64 computations).
 */
import {
  AdaptiveAvgPool2d,
  BatchNorm1d,
  BatchNorm2d,
  Conv2d,
  ConvTranspose2d,
  Dropout,
  Embedding,
  Flatten,
  FlowBuilder,
  fromArray,
  LayerNorm,
  Linear,
  MaxPool2d,
  ReLU,
  Sequential,
  Variable,
} from "../../../src/index.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

gpuTest("Linear: PyTorch default init bounds, y = x·Wᵀ + b against f64, named parameters", async () => {
  const lin = new Linear(33, 7, { seed: 4 });
  const w = await lin.weight.data.toArray(), b = await lin.bias!.data.toArray();
  const bound = 1 / Math.sqrt(33);
  assert([...w, ...b].every((v) => Math.abs(v) <= bound) && Math.max(...w.map(Math.abs)) > bound * 0.8, "U(±1/√in)");
  const x = randn(5 * 33, mulberry32(1));
  const y = await lin.forward(new Variable(fromArray(x, [5, 33]))).toArray();
  const want = new Float64Array(35);
  for (let i = 0; i < 5; i++) for (let o = 0; o < 7; o++) {
    let s = b[o];
    for (let k = 0; k < 33; k++) s += x[i * 33 + k] * w[o * 33 + k];
    want[i * 7 + o] = s;
  }
  assertRelClose(y, want, 1e-4, "linear forward");
  assertEquals(lin.namedParameters().map(([n]) => n), ["weight", "bias"], "names");
  assertThrows(() => lin.forward(new Variable(fromArray(new Float32Array(8), [2, 4]))), RangeError, "Linear(33, 7)", "4 features");
});

gpuTest("Sequential and FlowBuilder name children in order and chain forward", () => {
  const seq = new Sequential(new Flatten(), new Linear(12, 4), new ReLU(), new Linear(4, 2));
  assertEquals(seq.namedParameters().map(([n]) => n), ["1.weight", "1.bias", "3.weight", "3.bias"], "sequential names");
  const out = seq.forward(new Variable(fromArray(new Float32Array(2 * 3 * 4).fill(0.5), [2, 3, 4])));
  assertEquals([...out.shape], [2, 2], "sequential output");
  const flow = FlowBuilder.from(new Linear(4, 4)).through(new ReLU()).build();
  assertEquals([...flow.forward(new Variable(fromArray(new Float32Array(8), [2, 4]))).shape], [2, 4], "flow output");
});

gpuTest("BatchNorm updates running statistics in training only; Dropout is the identity in eval", async () => {
  const bn = new BatchNorm1d(3, { momentum: 0.5 });
  const x = fromArray([1, 2, 3, 3, 6, 9], [2, 3]);
  bn.forward(new Variable(x));
  assertRelClose(await bn.runningMean.toArray(), [1, 2, 3], 1e-6, "running mean after one step (momentum 0.5)");
  assertRelClose(await bn.runningVar.toArray(), [1.5, 4.5, 9.5], 1e-6, "running var (unbiased batch variance)");
  bn.eval();
  const before = await bn.runningMean.toArray();
  bn.forward(new Variable(x));
  assertRelClose(await bn.runningMean.toArray(), before, 0, "eval leaves the statistics");
  assertEquals(bn.namedBuffers().map(([n]) => n), ["running_mean", "running_var"], "buffer names");
  const drop = new Dropout(0.5).eval();
  const v = new Variable(x);
  assert(drop.forward(v) === v, "eval dropout returns its input");
  const kept = await new Dropout(0.5).forward(new Variable(fromArray(new Float32Array(4000).fill(1)))).toArray();
  const zeros = kept.filter((z) => z === 0).length;
  assert(zeros > 1700 && zeros < 2300 && kept.every((z) => z === 0 || z === 2), `dropout p=0.5 zeroes ~half and scales by 2 (${zeros})`);
});

gpuTest("conv, pool, norm and embedding layers produce PyTorch's shapes", () => {
  const x = new Variable(fromArray(new Float32Array(2 * 3 * 9 * 9).fill(0.1), [2, 3, 9, 9]));
  assertEquals([...new Conv2d(3, 6, 3, { padding: 1, stride: 2 }).forward(x).shape], [2, 6, 5, 5], "conv2d");
  assertEquals([...new ConvTranspose2d(3, 4, 3, { stride: 2, outputPadding: 1 }).forward(x).shape], [2, 4, 20, 20], "convT");
  assertEquals([...new MaxPool2d(2).forward(x).shape], [2, 3, 4, 4], "maxpool");
  assertEquals([...new AdaptiveAvgPool2d(2).forward(x).shape], [2, 3, 2, 2], "adaptive avgpool");
  assertEquals([...new BatchNorm2d(3).forward(x).shape], [2, 3, 9, 9], "batchnorm2d");
  assertEquals([...new LayerNorm([9, 9]).forward(x).shape], [2, 3, 9, 9], "layernorm");
  const emb = new Embedding(10, 4);
  assertEquals([...emb.forward(fromArray(new Int32Array([1, 2, 3, 9, 0, 1]), [2, 3])).shape], [2, 3, 4], "embedding");
  assertThrows(() => new Conv2d(3, 5, 3, { groups: 2 }), RangeError, "groups 2");
});
