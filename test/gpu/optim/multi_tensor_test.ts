/**
 * Multi-tensor (`foreach`) steps against the per-tensor ones, bit for bit: the same seeded
 * parameters of odd sizes (below, around and above a 256-thread workgroup, and a 0-element
 * one), the same gradients, several steps; every parameter and state tensor must have the
 * same f32 bits. The per-tensor update is itself checked against the f64 references in the
 * other optimizer tests. Each packed step must be one dispatch.
 */
import { Parameter } from "../../../src/autograd/mod.ts";
import type { Device, Dispatch } from "../../../src/gpu/mod.ts";
import { Adam, AdamW, clipGradNorm, type Optimizer, RMSprop, SGD } from "../../../src/optim/mod.ts";
import { clipGradNormRef } from "../../reference/optim.ts";
import { clone, fromArray, linear } from "../../../src/tensor/mod.ts";
import { assert, assertEquals, assertRelClose } from "../../util/assert.ts";
import { count, mulberry32, randn } from "../../util/random.ts";
import { gpuTest } from "../../util/gpu.ts";
import { packFrame } from "../../../src/distributed/rank/frames.ts";
import type { Frame } from "../../../src/distributed/protocol/messages.ts";
import { parametersOf, problem, type Problem, release, setGrads } from "./harness.ts";

// [5, 403]: 2,015 elements, several rows of a segment table (MULTI_WG elements each) and a tail.
const SHAPES = [[7], [33, 7], [3, 5, 3], [257], [0], [2, 300], [5, 403]];

type Make = (params: Parameter[], foreach: boolean) => Optimizer<any>;

const CASES: [string, Make][] = [
  ["SGD", (p, foreach) => new SGD(p, { lr: 0.1, foreach })],
  ["SGD momentum + decay", (p, foreach) => new SGD(p, { lr: 0.05, momentum: 0.9, dampening: 0.1, weightDecay: 0.01, foreach })],
  ["SGD nesterov", (p, foreach) => new SGD(p, { lr: 0.05, momentum: 0.8, nesterov: true, foreach })],
  ["Adam + L2", (p, foreach) => new Adam(p, { lr: 0.02, betas: [0.8, 0.95], eps: 1e-3, weightDecay: 0.1, foreach })],
  ["AdamW", (p, foreach) => new AdamW(p, { lr: 0.01, weightDecay: 0.5, foreach })],
  ["RMSprop", (p, foreach) => new RMSprop(p, { lr: 0.01, weightDecay: 0.1, foreach })],
  ["RMSprop momentum", (p, foreach) => new RMSprop(p, { lr: 0.01, momentum: 0.9, foreach })],
  ["RMSprop centered", (p, foreach) => new RMSprop(p, { lr: 0.01, centered: true, foreach })],
  ["RMSprop centered momentum", (p, foreach) => new RMSprop(p, { lr: 0.01, centered: true, momentum: 0.5, foreach })],
];

/** Put step t's gradients where backward would: into each parameter's gradient home. */
function homeGrads(params: Parameter[], grads: Float32Array<ArrayBuffer>[]): void {
  params.forEach((p, i) => {
    p.zeroGrad();
    const home = p.gradHome;
    if (!home) throw new Error(`parameter ${i} has no gradient home`);
    home.write(grads[i]);
    p.grad = home.reshape(home.shape).keep();
  });
}

/** Count the dispatches `f` records. */
function dispatches(device: Device, f: () => void): string[] {
  const seen: string[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const orig = device.dispatch.bind(device);
  dev.dispatch = (d: Dispatch) => (seen.push(`${d.shader}/${d.entry}`), orig(d));
  try {
    f();
  } finally {
    delete dev.dispatch;
  }
  return seen;
}

async function bits(t: { toF32(): Promise<Float32Array<ArrayBuffer>> }): Promise<number[]> {
  return [...new Uint32Array((await t.toF32()).buffer)];
}

async function assertSameState(a: Parameter[], oa: Optimizer<any>, b: Parameter[], ob: Optimizer<any>, label: string) {
  for (let j = 0; j < a.length; j++) {
    assertEquals(await bits(b[j].data), await bits(a[j].data), `${label}: param ${j} bits`);
  }
  const sa = oa.stateDict(), sb = ob.stateDict();
  assertEquals(Object.keys(sb.tensors).sort(), Object.keys(sa.tensors).sort(), `${label}: state names`);
  assertEquals(sb.scalars, sa.scalars, `${label}: scalars`);
  for (const k of Object.keys(sa.tensors)) {
    assertEquals(await bits(sb.tensors[k]), await bits(sa.tensors[k]), `${label}: ${k} bits`);
  }
}

function run(device: Device, pr: Problem, make: Make, steps: number) {
  const per = parametersOf(pr), multi = parametersOf(pr);
  const a = make(per, false), b = make(multi, true);
  const launched: number[] = [];
  for (let t = 0; t < steps; t++) {
    setGrads(per, pr.grads[t]);
    a.step();
    homeGrads(multi, pr.grads[t]);
    launched.push(dispatches(device, () => b.step()).length);
  }
  return { per, multi, a, b, launched };
}

for (const [k, [label, make]] of CASES.entries()) {
  gpuTest(`${label}: the foreach step equals the per-tensor step bit for bit, one dispatch per step`, async (device) => {
    const pr = problem(900 + k, 4, 1, SHAPES);
    const { per, multi, a, b, launched } = run(device, pr, make, 4);
    try {
      assertEquals(launched, [1, 1, 1, 1], `${label}: dispatches per foreach step`);
      await assertSameState(per, a, multi, b, label);
    } finally {
      release(per, a);
      release(multi, b);
    }
  });
}

gpuTest("foreach: a parameter without a gradient falls back to per-tensor updates, still bit-equal", async (device) => {
  const pr = problem(950, 3, 1, SHAPES);
  const per = parametersOf(pr), multi = parametersOf(pr);
  const a = new Adam(per, { lr: 0.01 }), b = new Adam(multi, { lr: 0.01, foreach: true });
  try {
    for (let t = 0; t < 3; t++) {
      setGrads(per, pr.grads[t]);
      homeGrads(multi, pr.grads[t]);
      if (t === 1) {
        per[2].zeroGrad();
        multi[2].zeroGrad();
      }
      a.step();
      const n = dispatches(device, () => b.step()).length;
      // Step 1 skips parameter 2: per-tensor, 5 launches (the [0] one records none); step 2
      // has unequal step counts: per-tensor, 6.
      assertEquals(n, [1, 5, 6][t], `dispatches at step ${t}`);
    }
    await assertSameState(per, a, multi, b, "fallback");
  } finally {
    release(per, a);
    release(multi, b);
  }
});

gpuTest("foreach: zeroGrad(false) is one clear of the flat gradients; state round-trips through stateDict", async (device) => {
  const pr = problem(960, 2, 1, SHAPES);
  const { per, multi, a, b } = run(device, pr, (p, foreach) => new SGD(p, { lr: 0.1, momentum: 0.9, foreach }), 2);
  try {
    let clears = 0;
    const dev = device as unknown as Record<string, unknown>;
    const orig = device.clear.bind(device);
    dev.clear = (...args: Parameters<Device["clear"]>) => (clears++, orig(...args));
    try {
      b.zeroGrad(false);
    } finally {
      delete dev.clear;
    }
    assertEquals(clears, 1, "clears of zeroGrad(false)");
    for (const p of multi) assertEquals(Math.max(0, ...(await p.grad!.toF32()).map(Math.abs)), 0, "zeroed gradient");
    // A fresh foreach optimizer loads the per-tensor one's state and continues in step.
    const c = new SGD(multi, { lr: 0.1, momentum: 0.9, foreach: true });
    c.loadStateDict(a.stateDict());
    await assertSameState(per, a, multi, c, "loaded");
    c.resetState();
  } finally {
    release(per, a);
    release(multi, b);
  }
});

gpuTest("foreach: a bf16 wire frame of the packed group is one dispatch, no copies, word-equal to the per-tensor frame", async (device) => {
  const pr = problem(965, 2, 1, SHAPES);
  const { per, multi, a, b } = run(device, pr, (p, foreach) => new Adam(p, { lr: 0.01, foreach }), 2);
  try {
    const meta = { rank: 0, round: 1, batches: 2, bf16: true };
    const want = await packFrame(device, per.map((p) => p.data), [], meta);
    let copies = 0;
    const dev = device as unknown as Record<string, unknown>;
    const orig = device.copy.bind(device);
    dev.copy = (...args: Parameters<Device["copy"]>) => (copies++, orig(...args));
    let launched: string[] = [];
    let got: Promise<Frame>;
    try {
      launched = dispatches(device, () => (got = packFrame(device, multi.map((p) => p.data), [], meta)));
    } finally {
      delete dev.copy;
    }
    assertEquals(launched, ["bf16/pack_gather_forward"], "dispatches of the packed frame");
    assertEquals(copies, 1, "copies (the read-back only, no flattening)");
    const frame = await got!;
    assertEquals(frame.dtype, "bf16", "dtype");
    assertEquals([...frame.params], [...want.params], "words of the packed vs the per-tensor frame");
  } finally {
    release(per, a);
    release(multi, b);
  }
});

gpuTest("foreach: parameters become views of one buffer, ops and reads see their values", async () => {
  const pr = problem(970, 1, 1, SHAPES);
  const params = parametersOf(pr);
  const opt = new RMSprop(params, { foreach: true });
  try {
    const buffers = new Set(params.map((p) => p.data.buffer));
    assertEquals(buffers.size, 1, "distinct parameter buffers");
    for (const [j, p] of params.entries()) assertEquals(await bits(p.data), [...new Uint32Array(pr.p0[j].buffer)], `param ${j}`);
    // A copy of a view (clone: device.copy from its byte offset) and a reshape of it read its own range.
    assertEquals(await bits(clone(params[3].data)), [...new Uint32Array(pr.p0[3].buffer)], "clone of a view");
    assertEquals(await bits(params[1].data.reshape([231])), [...new Uint32Array(pr.p0[1].buffer)], "reshape of a view");
  } finally {
    release(params, opt);
  }
});

gpuTest("foreach: ops read packed views in place (linear with a 10-wide bias at an offset), same bits as unpacked", async (device) => {
  const rng = mulberry32(980);
  const shapes = [[3], [10, 7], [10]];
  const values = shapes.map((s) => randn(count(s), rng));
  const x = fromArray(randn(5 * 7, rng), [5, 7]);
  const params = values.map((v, i) => new Parameter(fromArray(v, shapes[i]), `p${i}`));
  const opt = new SGD(params, { lr: 0.1, foreach: true });
  try {
    assert(params[2].data.byteOffset > 0, "the bias is a view at an offset");
    const packed = await linear(x, params[1].data, params[2].data).toF32();
    const plain = await linear(x, fromArray(values[1], [10, 7]), fromArray(values[2], [10])).toF32();
    assertEquals([...new Uint32Array(packed.buffer)], [...new Uint32Array(plain.buffer)], "linear output bits");
    void device;
  } finally {
    release(params, opt);
    x.dispose();
  }
});

for (const [maxNorm, normType] of [[1, 2], [0.3, Infinity], [2, 3], [1e4, 1]] as const) {
  gpuTest(`clipGradNorm(${maxNorm}, p ${normType}) over a packed group: 3 launches, matches the f64 reference`, async (device) => {
    const pr = problem(990, 1, 1, [[7], [33, 7], [0], [257, 129], [1]]);
    const params = parametersOf(pr);
    const opt = new SGD(params, { lr: 0.1, foreach: true });
    try {
      homeGrads(params, pr.grads[0]);
      // A parameter left out of the call and one without a gradient must not count.
      params[4].zeroGrad();
      const clipped = params.slice(1);
      let norm = undefined as unknown as { item(): Promise<number> };
      const n = dispatches(device, () => (norm = clipGradNorm(clipped, maxNorm, normType)));
      assertEquals(n.length, 3, "launches of clipGradNorm over a packed group");
      const want = clipGradNormRef([pr.grads[0][1], pr.grads[0][2], pr.grads[0][3]], maxNorm, normType);
      assertRelClose([await norm.item()], [want.norm], 1e-4, "total norm");
      for (const [j, k] of [[0, 1], [1, 2], [2, 3]]) {
        assertRelClose(await params[k].grad!.toF32(), want.grads[j], 1e-4, `clipped grad ${k}`);
      }
      assertEquals(await bits(params[0].grad!), [...new Uint32Array(pr.grads[0][0].buffer)], "gradient left out, untouched");
    } finally {
      release(params, opt);
    }
  });
}
