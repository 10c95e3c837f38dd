/**
 * Every op that records a gradient can be reached on the tape from the package's user API
 * (`F`, Variable's methods, `cat`/`stack`/`where`, the Module classes), not only from the
 * engine's `ops` and `apply`: a model written as a function of its weights (torch.func
 * style) or a layer the library lacks needs nothing internal. The ops come from the `ops`
 * namespace itself, so an op added without a public way in fails here by name.
 */
import { cat, Conv2d, F, fromArray, GRU, LayerNorm, Linear, LSTM, ones, randn, stack, Variable, where, zeros } from "../../../src/index.ts";
import { ops } from "../../../src/engine.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

/** What the tape needs of an op (src/tensor/op.ts): a name, a forward and maybe a backward. */
type AnyOp = { name: string; forward: unknown; backward?: unknown };
const isOp = (x: unknown): x is AnyOp =>
  typeof x === "object" && x !== null && typeof (x as AnyOp).name === "string" && typeof (x as AnyOp).forward === "function";

/** Each distinct op of `ops` under the first name it is exported as (`linearActOps.gelu` for the table's). */
function opsByName(): Map<string, AnyOp> {
  const seen = new Map<AnyOp, string>();
  const entries = Object.entries(ops as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, value] of entries) {
    if (isOp(value)) {
      if (!seen.has(value)) seen.set(value, name);
    } else if (name === "linearActOps") {
      for (const [act, op] of Object.entries(value as Record<string, AnyOp>)) if (!seen.has(op)) seen.set(op, `linearActOps.${act}`);
    }
  }
  return new Map([...seen].map(([op, name]) => [name, op]));
}

/** Whether `op` made `y` or anything on the tape below it. */
function onTape(y: Variable, op: AnyOp): boolean {
  const stack = [y], visited = new Set<Variable>();
  while (stack.length) {
    const v = stack.pop()!;
    if (visited.has(v) || !v.node) continue;
    visited.add(v);
    if (v.node.op === op) return true;
    stack.push(...v.node.inputs);
  }
  return false;
}

const x = (shape: number[], seed = 1) => new Variable(randn(shape, { seed }), true);
const probs = () => new Variable(fromArray([0.2, 0.7, 0.4, 0.9]), true);

/** One public call per op that records a gradient. */
const CALLS: Record<string, () => Variable> = {
  absOp: () => x([4]).abs(),
  adaptiveAvgPool2dOp: () => F.adaptiveAvgPool2d(x([1, 1, 4, 4]), 1),
  addOp: () => x([4]).add(x([4], 2)),
  affineOp: () => x([4]).mul(3),
  attentionOp: () => {
    const q = x([1, 2, 4, 8]);
    return F.scaledDotProductAttention(q, q, q, { causal: true });
  },
  avgPool1dOp: () => F.avgPool1d(x([1, 1, 8]), { kernelSize: 2 }),
  avgPool2dOp: () => F.avgPool2d(x([1, 1, 4, 4]), { kernelSize: 2 }),
  batchNormOp: () => F.batchNorm(x([4, 3]), zeros([3]), ones([3]), x([3], 2), x([3], 3), { training: true }),
  bceLossOp: () => F.bceLoss(probs(), fromArray([0, 1, 0, 1])),
  bceWithLogitsLossOp: () => F.bceWithLogitsLoss(x([4]), fromArray([0, 1, 0, 1])),
  catOp: () => cat([x([2]), x([3], 2)]),
  clampOp: () => x([4]).clamp(-0.5, 0.5),
  conv1dOp: () => F.conv1d(x([1, 2, 8]), x([3, 2, 3], 2)),
  conv2dOp: () => F.conv2d(x([1, 2, 5, 5]), x([3, 2, 3, 3], 2), x([3], 3), { padding: 1 }),
  convTranspose2dOp: () => F.convTranspose2d(x([1, 2, 4, 4]), x([2, 3, 3, 3], 2)),
  crossEntropyOp: () => F.crossEntropy(x([4, 5]), [0, 1, 2, 3]),
  divOp: () => x([4]).div(probs()),
  dropoutOp: () => F.dropout(x([64]), 0.5),
  eluOp: () => F.elu(x([4])),
  embeddingBagOp: () => F.embeddingBag(x([5, 3]), [0, 1, 2, 3], [0, 2]),
  embeddingOp: () => F.embedding([0, 2, 1], x([4, 3])),
  expOp: () => x([4]).exp(),
  expandOp: () => x([1, 3]).expand([2, 3]),
  flattenOp: () => x([2, 3]).flatten(),
  gatherOp: () => x([2, 3]).gather(1, fromArray([0, 2, 1, 0], [2, 2], { dtype: "i32" })),
  geluOp: () => x([4]).gelu(),
  geluTanhOp: () => x([4]).gelu("tanh"),
  gruRecurrenceOp: () => new GRU(3, 4).forward(x([5, 2, 3])),
  hardsigmoidOp: () => F.hardsigmoid(x([4])),
  hardswishOp: () => F.hardswish(x([4])),
  indexSelectOp: () => x([3, 2]).indexSelect(0, fromArray([2, 0], [2], { dtype: "i32" })),
  klDivOp: () => F.klDiv(F.logSoftmax(x([2, 4])), F.softmax(x([2, 4], 2)).data),
  l1LossOp: () => F.l1Loss(x([4]), x([4], 2)),
  layerNormOp: () => F.layerNorm(x([2, 4]), 4, x([4], 2), x([4], 3)),
  leakyReluOp: () => x([4]).leakyRelu(0.1),
  linearOp: () => F.linear(x([2, 4]), x([3, 4], 2), x([3], 3)),
  "linearActOps.gelu": () => F.linear(x([2, 4]), x([3, 4], 2), x([3], 3), { activation: "gelu" }),
  "linearActOps.geluTanh": () => F.linear(x([2, 4]), x([3, 4], 2), null, { activation: "geluTanh" }),
  "linearActOps.relu": () => F.linear(x([2, 4]), x([3, 4], 2), x([3], 3), { activation: "relu" }),
  "linearActOps.sigmoid": () => F.linear(x([2, 4]), x([3, 4], 2), null, { activation: "sigmoid" }),
  "linearActOps.silu": () => F.linear(x([2, 4]), x([3, 4], 2), null, { activation: "silu" }),
  "linearActOps.tanh": () => F.linear(x([2, 4]), x([3, 4], 2), null, { activation: "tanh" }),
  linearResidualOp: () => F.linearResidual(x([2, 4]), x([3, 4], 2), x([3], 3), x([2, 3], 4), { dropout: 0.25 }),
  logOp: () => probs().log(),
  logSigmoidOp: () => F.logSigmoid(x([4])),
  logSoftmaxOp: () => F.logSoftmax(x([2, 4])),
  lstmRecurrenceOp: () => new LSTM(3, 4).forward(x([5, 2, 3])),
  matmulOp: () => F.matmul(x([3, 4]), x([5, 4], 2), { transB: true }),
  maxOp: () => x([2, 3]).max(1),
  maxPool1dOp: () => F.maxPool1d(x([1, 1, 8]), { kernelSize: 2 }),
  maxPool2dOp: () => F.maxPool2d(x([1, 1, 4, 4]), { kernelSize: 2 }),
  maximumOp: () => x([4]).maximum(x([4], 2)),
  meanOp: () => x([4]).mean(),
  minOp: () => x([2, 3]).min(1),
  minimumOp: () => x([4]).minimum(x([4], 2)),
  mishOp: () => F.mish(x([4])),
  mseLossOp: () => F.mseLoss(x([4]), x([4], 2)),
  mulOp: () => x([4]).mul(x([4], 2)),
  narrowOp: () => x([5]).narrow(0, 1, 3),
  negOp: () => x([4]).neg(),
  nllLossOp: () => F.nllLoss(F.logSoftmax(x([4, 5])), [0, 1, 2, 3]),
  permuteOp: () => x([2, 3]).permute([1, 0]),
  powOp: () => probs().pow(x([4], 2)),
  powScalarOp: () => x([4]).pow(2),
  preluOp: () => F.prelu(x([2, 3]), x([1], 2)),
  reluOp: () => x([4]).relu(),
  reshapeOp: () => x([2, 3]).reshape([3, 2]),
  rmsNormOp: () => F.rmsNorm(x([2, 4]), 4, x([4], 2)),
  ropeOp: () => F.rotaryEmbedding(x([1, 1, 4, 8])),
  rsqrtOp: () => probs().rsqrt(),
  seluOp: () => F.selu(x([4])),
  sigmoidFocalLossOp: () => F.sigmoidFocalLoss(x([4]), fromArray([0, 1, 0, 1])),
  sigmoidOp: () => x([4]).sigmoid(),
  siluOp: () => x([4]).silu(),
  smoothL1LossOp: () => F.smoothL1Loss(x([4]), x([4], 2)),
  softmaxOp: () => F.softmax(x([2, 4])),
  softplusOp: () => x([4]).softplus(),
  sqrtOp: () => probs().sqrt(),
  squeezeOp: () => x([2, 1]).squeeze(1),
  stackOp: () => stack([x([2]), x([2], 2)]),
  subOp: () => x([4]).sub(x([4], 2)),
  sumOp: () => x([4]).sum(),
  tanhOp: () => x([4]).tanh(),
  transposeOp: () => x([2, 3]).transpose(0, 1),
  unsqueezeOp: () => x([2]).unsqueeze(0),
  varOp: () => x([4]).var(),
  whereOp: () => where(fromArray([1, 0, 1, 0], [4], { dtype: "i32" }), x([4]), x([4], 2)),
};

gpuTest("every op with a gradient is on the tape of a public call (F, Variable, Modules), none left out", () => {
  const all = opsByName();
  const taped = [...all].filter(([, op]) => op.backward !== undefined).map(([name]) => name).sort();
  // The table and the ops that record gradients name the same ops.
  assertEquals(Object.keys(CALLS).sort(), taped);
  const missed = taped.filter((name) => !onTape(CALLS[name](), all.get(name)!));
  assertEquals(missed, []);
});

gpuTest("F's layer functions give the Module classes' outputs bit for bit, and name a bad knob", async () => {
  const same = async (a: Variable, b: Variable, what: string) =>
    assertEquals(Array.from(await a.toArray()), Array.from(await b.toArray()), what);
  const lin = new Linear(4, 3, { seed: 5 });
  const xl = x([2, 4]);
  await same(F.linear(xl, lin.weight, lin.bias), lin.forward(xl), "linear");
  await same(F.linear(xl, lin.weight, lin.bias, { activation: "gelu" }), lin.forwardAct(xl, "gelu"), "linear + gelu");
  const conv = new Conv2d(2, 3, 3, { padding: 1, seed: 6 });
  const xc = x([1, 2, 5, 5]);
  await same(F.conv2d(xc, conv.weight, conv.bias, { padding: 1 }), conv.forward(xc), "conv2d");
  const ln = new LayerNorm(4);
  await same(F.layerNorm(xl, 4, ln.weight, ln.bias), ln.forward(xl), "layerNorm");
  assert(F.dropout(xl, 0.5, false) === xl, "dropout out of training is the input itself");
  assertThrows(() => F.linear(xl, lin.weight, lin.bias, { activation: "swish" as "silu" }), RangeError, "linear: activation", "swish");
  assertThrows(() => F.dropout(xl, 1), RangeError, "dropout: p must be in [0, 1)");
});
