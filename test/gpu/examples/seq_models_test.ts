/**
 * The ddp-bench models added for issues 11 and 28 (src/zoo/models.ts: conv-ae, char-rnn,
 * gpt-nano, resnet20):
 * each builds, runs one forward and backward on a tiny batch through its recipe's loss
 * (src/zoo/recipes.ts), with the expected output shape, a loss equal to the f64 loss of its
 * own outputs and a finite, nonzero gradient for every parameter; gpt-nano is causal; and
 * sampleText (examples/sample.ts) draws from the model's distribution.
 */
import { CharVocab, fromArray, type Module, noGrad, Variable } from "../../../src/index.ts";
import { buildModel, ResNet20 } from "../../../src/zoo/mod.ts";
import { RECIPES } from "../../../src/zoo/mod.ts";
import { draw, sampleText } from "../../../examples/sample.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randint, uniform } from "../../util/random.ts";

const V = 11; // an odd vocabulary: no workgroup multiple

/** Every parameter's gradient is finite and not all zero (it reached the loss). */
async function checkGrads(model: Module): Promise<void> {
  for (const [name, p] of model.namedParameters()) {
    assert(p.grad, `${name} has no gradient`);
    const g = await p.grad.toArray();
    assert(g.every(Number.isFinite), `${name} gradient is not finite`);
    assert(g.some((x) => x !== 0), `${name} gradient is all zero`);
  }
}

/** f64 mean cross-entropy of logits rows [n, c] against labels. */
function ceRef(logits: ArrayLike<number>, labels: ArrayLike<number>, c: number): number {
  let sum = 0;
  for (let r = 0; r < labels.length; r++) {
    let m = -Infinity;
    for (let j = 0; j < c; j++) m = Math.max(m, logits[r * c + j]);
    let z = 0;
    for (let j = 0; j < c; j++) z += Math.exp(logits[r * c + j] - m);
    sum += m + Math.log(z) - logits[r * c + labels[r]];
  }
  return sum / labels.length;
}

gpuTest("conv-ae: [3,1,28,28] in and out, MSE against the input matches f64, every parameter gets a gradient", async (device) => {
  const model = buildModel("conv-ae", device);
  const x = fromArray(uniform(3 * 28 * 28, mulberry32(3)), [3, 1, 28, 28], { device });
  const out = model.forward(new Variable(x));
  assertEquals(out.shape, [3, 1, 28, 28], "conv-ae output shape");
  const [y, xs] = await Promise.all([out.data.toArray(), x.toArray()]);
  assert(y.every((v) => v > 0 && v < 1), "conv-ae output is a sigmoid, in (0, 1)");
  let want = 0;
  for (let i = 0; i < xs.length; i++) want += (y[i] - xs[i]) ** 2;
  const loss = RECIPES["conv-ae"].loss(model, [x]);
  assertRelClose(await loss.data.toArray(), [want / xs.length], 1e-4, "conv-ae MSE");
  loss.backward();
  await checkGrads(model);
});

gpuTest("resnet20: [2,1,28,28] to logits [2,10], CE matches f64, a stem padding of 3 equals zero-padding to 32×32", async (device) => {
  const model = buildModel("resnet20", device);
  const x = uniform(2 * 28 * 28, mulberry32(5)).map((v) => 4 * v - 2);
  const xt = fromArray(x, [2, 1, 28, 28], { device }), labels = fromArray(new Int32Array([3, 8]), [2], { device });
  model.eval(); // batch statistics of 2 images would differ between the two grids' borders
  const out = noGrad(() => model.forward(new Variable(xt)));
  assertEquals(out.shape, [2, 10], "resnet20 logits shape");
  // The same weights with the CIFAR stem (padding 1) on the images padded by 2 zeros a side.
  const cifar = new ResNet20({ inChannels: 1, device });
  cifar.loadStateDict(model.stateDict());
  cifar.eval();
  const padded = new Float32Array(2 * 32 * 32);
  for (let n = 0; n < 2; n++) for (let r = 0; r < 28; r++) for (let c = 0; c < 28; c++) padded[n * 1024 + (r + 2) * 32 + c + 2] = x[n * 784 + r * 28 + c];
  const outPadded = noGrad(() => cifar.forward(new Variable(fromArray(padded, [2, 1, 32, 32], { device }))));
  const [y, yPadded] = await Promise.all([out.data.toArray(), outPadded.data.toArray()]);
  assertRelClose(y, yPadded, 1e-4, "stem padding 3 vs zero-padded 32×32 input");
  model.train();
  const loss = RECIPES.resnet20.loss(model, [xt, labels]);
  const logits = await noGrad(() => model.forward(new Variable(xt))).data.toArray();
  assertRelClose(await loss.data.toArray(), [ceRef(logits, [3, 8], 10)], 1e-4, "resnet20 CE");
  loss.backward();
  await checkGrads(model);
});

for (const name of ["char-rnn", "gpt-nano"] as const) {
  gpuTest(`${name}: ids [2, 9] to logits [2, 9, ${V}], next-char CE matches f64, every parameter gets a gradient`, async (device) => {
    const model = buildModel(name, device, V);
    const rng = mulberry32(name.length);
    const ids = fromArray(randint(18, V, rng), [2, 9], { device }), target = fromArray(randint(18, V, rng), [2, 9], { device });
    const out = model.forward(new Variable(ids));
    assertEquals(out.shape, [2, 9, V], `${name} output shape`);
    // Dropout draws differ between two forwards: compare the loss with its own logits, in eval mode.
    model.eval();
    const logits = noGrad(() => model.forward(new Variable(ids)));
    const want = ceRef(await logits.data.toArray(), await target.toArray(), V);
    const evalLoss = noGrad(() => RECIPES[name].loss(model, [ids, target]));
    assertRelClose(await evalLoss.data.toArray(), [want], 1e-4, `${name} CE`);
    model.train();
    const loss = RECIPES[name].loss(model, [ids, target]);
    assert(Number.isFinite((await loss.data.toArray())[0]), `${name} training loss is finite`);
    loss.backward();
    await checkGrads(model);
  });
}

gpuTest("gpt-nano is causal: a later token changes the logits from its position on, never before", async (device) => {
  const model = buildModel("gpt-nano", device, V);
  model.eval();
  const T = 13, k = 7;
  const a = randint(T, V, mulberry32(5)), b = a.slice();
  b[k] = (a[k] + 1) % V;
  const run = async (ids: Int32Array<ArrayBuffer>) =>
    await noGrad(() => model.forward(new Variable(fromArray(ids, [1, T], { device })))).data.toArray();
  const [la, lb] = [await run(a), await run(b)];
  const before = (l: ArrayLike<number>) => Array.from(l).slice(0, k * V);
  assertRelClose(before(lb), before(la), 1e-5, `logits before position ${k}`);
  let changed = 0;
  for (let i = k * V; i < (k + 1) * V; i++) changed = Math.max(changed, Math.abs(la[i] - lb[i]));
  assert(changed > 1e-3, `logits at position ${k} must change with its token, max change ${changed}`);
});

gpuTest("sampleText: n characters of the vocabulary, repeatable with a seeded draw; draw follows softmax(z/t)", async (device) => {
  const vocab = new CharVocab("abcdefghijk".split(""));
  const model = buildModel("gpt-nano", device, vocab.itos.length);
  const one = await sampleText(model, vocab, "abc", 5, 0.8, { random: mulberry32(9) });
  const progress: string[] = [];
  const two = await sampleText(model, vocab, "abc", 5, 0.8, {
    random: mulberry32(9),
    onProgress: (done, n) => progress.push(`${done}/${n}`),
  });
  assertEquals(progress.join(" "), "1/5 2/5 3/5 4/5 5/5", "onProgress after each character");
  assertEquals(one.length, 5, "sample length");
  assert([...one].every((ch) => vocab.stoi.has(ch)), `sample ${JSON.stringify(one)} has characters outside the vocabulary`);
  assertEquals(one, two, "same seed, same text");
  // softmax([0, ln 3]) = [0.25, 0.75]: u below 0.25 picks 0, above picks 1; t = 0.5 squares the odds (0.1, 0.9).
  assertEquals([draw([0, Math.log(3)], 1, 0.24), draw([0, Math.log(3)], 1, 0.26)], [0, 1], "draw at t = 1");
  assertEquals([draw([0, Math.log(3)], 0.5, 0.09), draw([0, Math.log(3)], 0.5, 0.11)], [0, 1], "draw at t = 0.5");
});
