/**
 * Fused elementwise paths against the float64 references, and against the unfused ops bit for
 * bit: Linear + activation in one kernel (`linearActOps`, what Sequential runs for Linear →
 * ReLU/GELU/Tanh/Sigmoid/SiLU), the activation's gradient folded into the next Linear's dx
 * product, leaf gradients written straight into an optimizer's flat gradient buffer, and cross
 * entropy's rows + class mean in one launch.
 */
import { apply, Variable } from "../../../src/autograd/mod.ts";
import type { Device, Dispatch } from "../../../src/gpu/mod.ts";
import { crossEntropy } from "../../../src/nn/functional.ts";
import { GELU, Linear, ReLU, Sigmoid, SiLU, Tanh } from "../../../src/nn/mod.ts";
import type { Module } from "../../../src/nn/mod.ts";
import { Sequential } from "../../../src/nn/container.ts";
import { Adam } from "../../../src/optim/mod.ts";
import { fromArray } from "../../../src/tensor/creation.ts";
import { forwardBackward } from "../../../src/tensor/op.ts";
import { type Activation, ACTIVATIONS } from "../../../src/tensor/ops/matmul_plan.ts";
import { linearOp } from "../../../src/tensor/ops/matmul.ts";
import { linearActOps, linearReluOp, linearResidualOp } from "../../../src/tensor/ops/linear_fused.ts";
import { addOp } from "../../../src/tensor/ops/binary.ts";
import { dropoutOp } from "../../../src/tensor/ops/dropout.ts";
import { FlowBuilder } from "../../../src/nn/container.ts";
import { dropoutMultipliers } from "../../reference/attention.ts";
import { reluOp } from "../../../src/tensor/ops/unary.ts";
import { crossEntropyRef } from "../../reference/loss.ts";
import { linearRef } from "../../reference/matmul.ts";
import { unaryRef } from "../../reference/unary.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { count, mulberry32, randint, randn } from "../../util/random.ts";

const TOL = 1e-4;

/** relu(x·wᵀ + b) and its gradients for L = Σ y·dy, in f64. */
function linearReluRef(x: Float32Array, sx: number[], w: Float32Array, sw: number[], b: Float32Array | undefined, dy: Float32Array) {
  const z = linearRef(x, sx, w, sw, b, new Float64Array(dy.length)).y;
  const y = z.map((v) => Math.max(0, v));
  const dz = Float64Array.from(dy, (g, i) => (z[i] > 0 ? g : 0));
  const g = linearRef(x, sx, w, sw, b, dz);
  return { y, dx: g.dx, dw: g.dw, db: g.db };
}

/** act(x·wᵀ + b) and its gradients for L = Σ y·dy, in f64 (test/reference/unary.ts's rules). */
function linearActRef(act: Activation, x: Float32Array, sx: number[], w: Float32Array, sw: number[], b: Float32Array | undefined, dy: Float32Array) {
  const z = linearRef(x, sx, w, sw, b, new Float64Array(dy.length)).y;
  const { y, dx: dz } = unaryRef(act, z, dy);
  const g = linearRef(x, sx, w, sw, b, dz);
  return { y, dx: g.dx, dw: g.dw, db: g.db };
}

const bits = async (t: { toArray(): Promise<ArrayLike<number>> }) => [...new Uint32Array(Float32Array.from(await t.toArray()).buffer)];

gpuTest("linearRelu matches f64 relu(linear) and the two ops apart bit for bit (odd, vec4 and batched shapes)", async () => {
  let seed = 1300;
  for (const [sx, out, bias] of [[[5, 7], 9, true], [[6, 12], 8, true], [[2, 3, 16], 12, false]] as [number[], number, boolean][]) {
    const rng = mulberry32(seed++);
    const sw = [out, sx[sx.length - 1]], ys = [...sx.slice(0, -1), out];
    const x = randn(count(sx), rng), w = randn(count(sw), rng), b = randn(out, rng), dy = randn(count(ys), rng);
    const ref = linearReluRef(x, sx, w, sw, bias ? b : undefined, dy);
    const inputs = [fromArray(x, sx), fromArray(w, sw), ...(bias ? [fromArray(b, [out])] : [])];
    const tag = `linearRelu x=[${sx}] out=${out}${bias ? " +b" : ""}`;
    const fused = forwardBackward(linearReluOp, inputs, undefined, fromArray(dy, ys));
    assertEquals(fused.output.shape, ys, `${tag} shape`);
    assertRelClose(await fused.output.toArray(), ref.y, TOL, `${tag} y`);
    assertRelClose(await fused.grads[0]!.toArray(), ref.dx, TOL, `${tag} dx`);
    assertRelClose(await fused.grads[1]!.toArray(), ref.dw, TOL, `${tag} dw`);
    if (bias) assertRelClose(await fused.grads[2]!.toArray(), ref.db, TOL, `${tag} db`);
    // The same through linear then relu.
    const z = linearOp.forward(inputs, undefined).output;
    const y = reluOp.forward([z], {}).output;
    assertEquals(await bits(fused.output), await bits(y), `${tag} y bits vs linear → relu`);
  }
});

const OTHER_ACTS: Activation[] = ["gelu", "geluTanh", "tanh", "sigmoid", "silu"];

gpuTest("linearAct (gelu, geluTanh, tanh, sigmoid, silu) matches f64 act(linear) and the two ops apart bit for bit", async () => {
  let seed = 1350;
  for (const act of OTHER_ACTS) {
    for (const [sx, out, bias] of [[[5, 7], 9, true], [[6, 12], 8, true], [[2, 3, 16], 12, false]] as [number[], number, boolean][]) {
      const rng = mulberry32(seed++);
      const sw = [out, sx[sx.length - 1]], ys = [...sx.slice(0, -1), out];
      const x = randn(count(sx), rng), w = randn(count(sw), rng), b = randn(out, rng), dy = randn(count(ys), rng);
      const ref = linearActRef(act, x, sx, w, sw, bias ? b : undefined, dy);
      const inputs = [fromArray(x, sx), fromArray(w, sw), ...(bias ? [fromArray(b, [out])] : [])];
      const tag = `linearAct ${act} x=[${sx}] out=${out}${bias ? " +b" : ""}`;
      const fused = forwardBackward(linearActOps[act], inputs, undefined, fromArray(dy, ys));
      assertEquals(fused.output.shape, ys, `${tag} shape`);
      assertRelClose(await fused.output.toArray(), ref.y, TOL, `${tag} y`);
      assertRelClose(await fused.grads[0]!.toArray(), ref.dx, TOL, `${tag} dx`);
      assertRelClose(await fused.grads[1]!.toArray(), ref.dw, TOL, `${tag} dw`);
      if (bias) assertRelClose(await fused.grads[2]!.toArray(), ref.db, TOL, `${tag} db`);
      // The same through linear then the unary op, forward and backward.
      const z = linearOp.forward(inputs, undefined).output;
      const apart = forwardBackward(ACTIVATIONS[act].op, [z], {}, fromArray(dy, ys));
      assertEquals(await bits(fused.output), await bits(apart.output), `${tag} y bits vs linear → ${act}`);
    }
  }
});

/** Capture the launches (dispatch entries, copies) `f` records. */
function launches(device: Device, f: () => void): string[] {
  const seen: string[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const orig = { dispatch: device.dispatch.bind(device), copy: device.copy.bind(device) };
  dev.dispatch = (d: Dispatch) => (seen.push(`${d.shader}/${d.entry}`), orig.dispatch(d));
  dev.copy = (...a: Parameters<Device["copy"]>) => (seen.push("copy"), orig.copy(...a));
  try {
    f();
  } finally {
    delete dev.dispatch;
    delete dev.copy;
  }
  return seen;
}

for (const foreach of [false, true]) {
  gpuTest(`MLP Linear → ReLU → Linear + cross entropy${foreach ? " (foreach: gradients into the flat buffer)" : ""}: f64 gradients, bits of the unfused chain`, async (device) => {
    const rng = mulberry32(foreach ? 1400 : 1401);
    const [B, D, H, C] = [9, 13, 17, 5];
    const x = randn(B * D, rng), t = randint(B, C, rng);
    const model = new Sequential(new Linear(D, H), new ReLU(), new Linear(H, C));
    const [w1, b1, w2, b2] = model.parameters();
    const opt = foreach ? new Adam(model.parameters(), { foreach: true }) : undefined;
    try {
      const xs = fromArray(x, [B, D]), ts = fromArray(t, [B]);
      const seen = launches(device, () => crossEntropy(model.forward(new Variable(xs)), ts).backward());
      // Fused: no relu launch either way; with foreach no copy of a gradient into its home.
      assert(!seen.some((e) => e.startsWith("unary/relu")), `relu launched: ${seen.join(", ")}`);
      assert(seen.includes("matmul/matmul_forward_mask") || seen.includes("matmul/matmul_forward_mask_vec4"), `no masked dx: ${seen}`);
      assertEquals(seen.filter((e) => e === "copy").length, foreach ? 0 : 4, "gradient copies");
      assertEquals(seen.filter((e) => e.startsWith("loss/")).length, 2, "cross entropy launches (forward + backward)");
      // Each bias gradient is its weight gradient's row sums: no reduction launch.
      assert(!seen.some((e) => e.startsWith("reduce/")), `reduction launched: ${seen.join(", ")}`);
      assertEquals(seen.filter((e) => e.startsWith("matmul/matmul_forward_rowsum")).length, 2, "dW + db products");
      // f64 reference.
      const W1 = await w1.data.toF32(), B1 = await b1.data.toF32(), W2 = await w2.data.toF32(), B2 = await b2.data.toF32();
      const h = linearRef(x, [B, D], W1, [H, D], B1, new Float64Array(B * H)).y.map((v) => Math.max(0, v));
      const logits = linearRef(Float32Array.from(h), [B, H], W2, [C, H], B2, new Float64Array(B * C)).y;
      const ce = crossEntropyRef(logits, B, C, t, { reduction: "mean" }, [1]);
      const l2 = linearRef(h, [B, H], W2, [C, H], B2, ce.dx);
      const dz = l2.dx.map((g, i) => (h[i] > 0 ? g : 0));
      const l1 = linearRef(x, [B, D], W1, [H, D], B1, dz);
      assertRelClose(await w1.grad!.toArray(), l1.dw, TOL, "dW1");
      assertRelClose(await b1.grad!.toArray(), l1.db, TOL, "db1");
      assertRelClose(await w2.grad!.toArray(), l2.dw, TOL, "dW2");
      assertRelClose(await b2.grad!.toArray(), l2.db, TOL, "db2");
      // The unfused chain (linear, relu, linear as separate ops) gives the same bits.
      const fusedGrads = await Promise.all([w1, b1, w2, b2].map((p) => bits(p.grad!)));
      for (const p of [w1, b1, w2, b2]) p.zeroGrad();
      const hv = new Variable(xs);
      const z1 = apply(linearOp, [hv, w1, b1], undefined);
      const a1 = apply(reluOp, [z1], {});
      const loss = crossEntropy(apply(linearOp, [a1, w2, b2], undefined), ts);
      loss.backward();
      assertRelClose(await loss.data.toArray(), ce.y, TOL, "loss");
      const plain = await Promise.all([w1, b1, w2, b2].map((p) => bits(p.grad!)));
      assertEquals(fusedGrads, plain, "gradient bits, fused vs unfused");
    } finally {
      opt?.resetState();
      for (const p of model.parameters()) {
        p.zeroGrad();
        p.data.dispose();
      }
    }
  });
}

const MODULES: Record<Activation, () => Module> = {
  relu: () => new ReLU(),
  gelu: () => new GELU(),
  geluTanh: () => new GELU("tanh"),
  tanh: () => new Tanh(),
  sigmoid: () => new Sigmoid(),
  silu: () => new SiLU(),
};

gpuTest("Linear → activation → Linear + cross entropy for every fused activation: one launch forward, its backward in dx's product; f64 gradients, bits of the unfused chain", async (device) => {
  let seed = 1450;
  for (const act of OTHER_ACTS) {
    const rng = mulberry32(seed++);
    const [B, D, H, C] = [9, 13, 17, 5];
    const x = randn(B * D, rng), t = randint(B, C, rng);
    const model = new Sequential(new Linear(D, H), MODULES[act](), new Linear(H, C));
    const [w1, b1, w2, b2] = model.parameters();
    try {
      const xs = fromArray(x, [B, D]), ts = fromArray(t, [B]);
      const seen = launches(device, () => crossEntropy(model.forward(new Variable(xs)), ts).backward());
      const kernel = act === "geluTanh" ? "gelu_tanh" : act;
      assert(!seen.some((e) => e.startsWith(`unary/${kernel}_`)), `${act} launched: ${seen.join(", ")}`);
      assert(seen.some((e) => e.startsWith("matmul/matmul_forward_mask")), `${act}: no masked dx: ${seen}`);
      // f64 reference.
      const W1 = await w1.data.toF32(), B1 = await b1.data.toF32(), W2 = await w2.data.toF32(), B2 = await b2.data.toF32();
      const z1 = linearRef(x, [B, D], W1, [H, D], B1, new Float64Array(B * H)).y;
      const h = unaryRef(act, z1, new Float64Array(B * H)).y;
      const logits = linearRef(h, [B, H], W2, [C, H], B2, new Float64Array(B * C)).y;
      const ce = crossEntropyRef(logits, B, C, t, { reduction: "mean" }, [1]);
      const l2 = linearRef(h, [B, H], W2, [C, H], B2, ce.dx);
      const dz = unaryRef(act, z1, l2.dx).dx;
      const l1 = linearRef(x, [B, D], W1, [H, D], B1, dz);
      assertRelClose(await w1.grad!.toArray(), l1.dw, TOL, `${act} dW1`);
      assertRelClose(await b1.grad!.toArray(), l1.db, TOL, `${act} db1`);
      assertRelClose(await w2.grad!.toArray(), l2.dw, TOL, `${act} dW2`);
      assertRelClose(await b2.grad!.toArray(), l2.db, TOL, `${act} db2`);
      // The unfused chain (linear, the unary op, linear) gives the same bits.
      const fusedGrads = await Promise.all([w1, b1, w2, b2].map((p) => bits(p.grad!)));
      for (const p of [w1, b1, w2, b2]) p.zeroGrad();
      const a1 = apply(ACTIVATIONS[act].op, [apply(linearOp, [new Variable(xs), w1, b1], undefined)], {});
      const loss = crossEntropy(apply(linearOp, [a1, w2, b2], undefined), ts);
      loss.backward();
      assertRelClose(await loss.data.toArray(), ce.y, TOL, `${act} loss`);
      const plain = await Promise.all([w1, b1, w2, b2].map((p) => bits(p.grad!)));
      assertEquals(fusedGrads, plain, `${act} gradient bits, fused vs unfused`);
    } finally {
      for (const p of model.parameters()) {
        p.zeroGrad();
        p.data.dispose();
      }
    }
  }
});

gpuTest("linearResidual: res + dropout(linear) in one launch matches f64 and linear → dropout → add bit for bit (odd, vec4, batched; with and without dropout)", async (device) => {
  let seed = 1500;
  const cases: [number[], number, boolean, number][] = [[[5, 7], 9, true, 0.25], [[6, 12], 8, true, 0], [[2, 3, 16], 12, false, 0.5]];
  for (const [sx, out, bias, p] of cases) {
    const rng = mulberry32(seed++);
    const sw = [out, sx[sx.length - 1]], ys = [...sx.slice(0, -1), out];
    const x = randn(count(sx), rng), w = randn(count(sw), rng), b = randn(out, rng), r = randn(count(ys), rng);
    const dy = randn(count(ys), rng);
    const mult = p > 0 ? dropoutMultipliers(seed + 77, p, count(ys)) : new Float64Array(count(ys)).fill(1);
    const z = linearRef(x, sx, w, sw, bias ? b : undefined, new Float64Array(count(ys))).y;
    const g = linearRef(x, sx, w, sw, bias ? b : undefined, Float64Array.from(dy, (v, i) => v * mult[i]));
    const tag = `linearResidual x=[${sx}] out=${out}${bias ? " +b" : ""} p=${p}`;
    const inputs = [fromArray(x, sx), fromArray(w, sw), ...(bias ? [fromArray(b, [out])] : []), fromArray(r, ys)];
    const dropout = p > 0 ? { p, training: true, seed: seed + 77 } : null;
    const seen = launches(device, () => linearResidualOp.forward(inputs, { bias, dropout }));
    assertEquals(seen, [seen.find((e) => e.startsWith("matmul/linear_forward") || e.startsWith("matmul/matmul_forward"))], `${tag}: one launch`);
    const fused = forwardBackward(linearResidualOp, inputs, { bias, dropout }, fromArray(dy, ys));
    assertRelClose(await fused.output.toArray(), Float64Array.from(z, (v, i) => r[i] + v * mult[i]), TOL, `${tag} y`);
    assertRelClose(await fused.grads[0]!.toArray(), g.dx, TOL, `${tag} dx`);
    assertRelClose(await fused.grads[1]!.toArray(), g.dw, TOL, `${tag} dw`);
    if (bias) assertRelClose(await fused.grads[2]!.toArray(), g.db, TOL, `${tag} db`);
    assertRelClose(await fused.grads[fused.grads.length - 1]!.toArray(), dy, 0, `${tag} dres`);
    // The three ops apart.
    const lin = linearOp.forward(inputs.slice(0, -1), undefined).output;
    const dropped = dropout ? dropoutOp.forward([lin], dropout).output : lin;
    const y = addOp.forward([inputs[inputs.length - 1], dropped], undefined).output;
    assertEquals(await bits(fused.output), await bits(y), `${tag} y bits vs linear → dropout → add`);
  }
});

gpuTest("Flow.also(Linear) adds the residual in the product's store: no add launch, f64 gradients", async (device) => {
  const rng = mulberry32(1550);
  const [B, D, H] = [7, 11, 6];
  const x = randn(B * D, rng), t = randint(B, H, rng);
  const net = FlowBuilder.from(new Linear(D, H)).also(new Linear(H, H)).build();
  const [w1, b1, w2, b2] = net.parameters();
  try {
    const seen = launches(device, () => crossEntropy(net.forward(new Variable(fromArray(x, [B, D]))), fromArray(t, [B])).backward());
    // (x feeds the product and the residual, so backward accumulates its two gradients.)
    assert(!seen.includes("binary/add_forward"), `an add launched: ${seen.join(", ")}`);
    const W1 = await w1.data.toF32(), B1 = await b1.data.toF32(), W2 = await w2.data.toF32(), B2 = await b2.data.toF32();
    const h = linearRef(x, [B, D], W1, [H, D], B1, new Float64Array(B * H)).y;
    const y = linearRef(h, [B, H], W2, [H, H], B2, new Float64Array(B * H)).y.map((v, i) => h[i] + v);
    const ce = crossEntropyRef(y, B, H, t, { reduction: "mean" }, [1]);
    const l2 = linearRef(h, [B, H], W2, [H, H], B2, ce.dx);
    const l1 = linearRef(x, [B, D], W1, [H, D], B1, l2.dx.map((v, i) => v + ce.dx[i]));
    assertRelClose(await w2.grad!.toArray(), l2.dw, TOL, "dW2");
    assertRelClose(await b2.grad!.toArray(), l2.db, TOL, "db2");
    assertRelClose(await w1.grad!.toArray(), l1.dw, TOL, "dW1");
    assertRelClose(await b1.grad!.toArray(), l1.db, TOL, "db1");
  } finally {
    for (const p of net.parameters()) {
      p.zeroGrad();
      p.data.dispose();
    }
  }
});

gpuTest("a GELU output read by two Linears: neither folds GELU's gradient (it would be applied twice), f64 gradients; one reader folds", async (device) => {
  const rng = mulberry32(1600);
  const [B, D, H, C] = [6, 9, 11, 4];
  const x = randn(B * D, rng), t = randint(B, C, rng);
  const l1 = new Linear(D, H), l2 = new Linear(H, C), l3 = new Linear(H, C);
  const params = [l1, l2, l3].flatMap((l) => l.parameters());
  try {
    const xs = fromArray(x, [B, D]), ts = fromArray(t, [B]);
    const seen = launches(device, () => {
      const h = l1.forwardAct(new Variable(xs), "gelu");
      crossEntropy(apply(addOp, [l2.forward(h), l3.forward(h)], undefined), ts).backward();
    });
    assert(!seen.some((e) => e.startsWith("matmul/matmul_forward_mask")), `a dx product folded GELU: ${seen.join(", ")}`);
    assert(seen.includes("unary/gelu_backward"), `no gelu backward: ${seen.join(", ")}`);
    const [W1, B1, W2, B2, W3, B3] = await Promise.all(params.map((p) => p.data.toF32()));
    const z = linearRef(x, [B, D], W1, [H, D], B1, new Float64Array(B * H)).y;
    const h = unaryRef("gelu", z, new Float64Array(B * H)).y;
    const o2 = linearRef(h, [B, H], W2, [C, H], B2, new Float64Array(B * C)).y;
    const o3 = linearRef(h, [B, H], W3, [C, H], B3, new Float64Array(B * C)).y;
    const ce = crossEntropyRef(o2.map((v, i) => v + o3[i]), B, C, t, { reduction: "mean" }, [1]);
    const g2 = linearRef(h, [B, H], W2, [C, H], B2, ce.dx), g3 = linearRef(h, [B, H], W3, [C, H], B3, ce.dx);
    const g1 = linearRef(x, [B, D], W1, [H, D], B1, unaryRef("gelu", z, g2.dx.map((v, i) => v + g3.dx[i])).dx);
    assertRelClose(await params[0].grad!.toArray(), g1.dw, TOL, "dW1");
    assertRelClose(await params[1].grad!.toArray(), g1.db, TOL, "db1");
    assertRelClose(await params[2].grad!.toArray(), g2.dw, TOL, "dW2");
    // One reader: the fold is back.
    for (const p of params) p.zeroGrad();
    const one = launches(device, () => crossEntropy(l2.forward(l1.forwardAct(new Variable(xs), "gelu")), ts).backward());
    assert(one.some((e) => e.startsWith("matmul/matmul_forward_mask")) && !one.includes("unary/gelu_backward"), `not folded: ${one}`);
  } finally {
    for (const p of params) {
      p.zeroGrad();
      p.data.dispose();
    }
  }
});
