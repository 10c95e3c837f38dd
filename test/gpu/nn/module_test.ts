import { apply, Parameter, type Variable } from "../../../src/autograd/mod.ts";
import { addOp, fromArray, mulOp, type Tensor, zeros } from "../../../src/tensor/mod.ts";
import { Module } from "../../../src/nn/module.ts";
import { Sequential } from "../../../src/nn/container.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

/** y = x · weight (+ bias), members found by field discovery. */
class Scale extends Module {
  weight: Parameter;
  bias: Parameter | null;
  constructor(n: number, seed: number, bias = true) {
    super();
    const rng = mulberry32(seed);
    this.weight = new Parameter(fromArray(randn(n, rng)));
    this.bias = bias ? new Parameter(fromArray(randn(n, rng))) : null;
  }
  forward(x: Variable): Variable {
    const y = apply(mulOp, [x, this.weight], undefined);
    return this.bias ? apply(addOp, [y, this.bias], undefined) : y;
  }
}

/** Explicit registration only, with buffers of two dtypes. */
class Stats extends Module {
  constructor(n: number, seed: number) {
    super();
    this.registerParameter("gamma", new Parameter(fromArray(randn(n, mulberry32(seed)))));
    this.registerBuffer("running", fromArray(randn(n, mulberry32(seed + 1))));
    this.registerBuffer("steps", fromArray(new Int32Array([seed])));
  }
  forward(x: Variable): Variable {
    return x;
  }
}

/** Mixed: explicit modules first, then discovered fields (a module and an own parameter). */
class Net extends Module {
  head: Scale;
  alpha: Parameter;
  constructor(seed: number) {
    super();
    this.registerModule("enc", new Scale(3, seed));
    this.registerModule("stats", new Stats(3, seed + 10));
    this.head = new Scale(3, seed + 20, false);
    this.alpha = new Parameter(fromArray(new Float32Array([seed])));
  }
  forward(x: Variable): Variable {
    return this.head.forward(x);
  }
}

class Empty extends Module {
  forward(x: Variable): Variable {
    return x;
  }
}

async function values(state: Map<string, Tensor>): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const [k, t] of state) out[k] = [...await t.toArray()];
  return out;
}

gpuTest("Module names parameters in PyTorch order: own first, then children; explicit then discovered", () => {
  const net = new Net(1);
  assertEquals(
    net.namedParameters().map(([n]) => n),
    ["alpha", "enc.weight", "enc.bias", "stats.gamma", "head.weight"],
    "names",
  );
  assertEquals(net.namedBuffers().map(([n]) => n), ["stats.running", "stats.steps"], "buffers");
  assertEquals(net.namedChildren().map(([n]) => n), ["enc", "stats", "head"], "children");
  assertEquals(net.namedModules().map(([n]) => n), ["", "enc", "stats", "head"], "modules");
  assertEquals([...net.stateDict().keys()], [
    "alpha",
    "enc.weight",
    "enc.bias",
    "stats.gamma",
    "head.weight",
    "stats.running",
    "stats.steps",
  ], "state dict: parameters then buffers");
  assert(net.parameters()[1] === net.children()[0].parameters()[0], "parameters are the module's own");
  assertEquals(net.numParameters(), 1 + 3 + 3 + 3 + 3, "numParameters");
  const seq = new Sequential(new Scale(2, 1), new Empty(), new Scale(2, 2, false));
  assertEquals(seq.namedParameters().map(([n]) => n), ["0.weight", "0.bias", "2.weight"], "sequential names");
});

gpuTest("Module lists a tied parameter and a shared module once, under the first name", () => {
  const net = new Net(2);
  const enc = net.children()[0] as Scale;
  net.head.weight = enc.weight;
  assertEquals(
    net.namedParameters().map(([n]) => n),
    ["alpha", "enc.weight", "enc.bias", "stats.gamma"],
    "tied weight",
  );
  const shared = new Scale(2, 3);
  const seq = new Sequential(shared, shared);
  assertEquals(seq.namedParameters().map(([n]) => n), ["0.weight", "0.bias"], "shared module");
  assertEquals(seq.namedModules().map(([n]) => n), ["", "0"], "shared module once");
});

gpuTest("Module reassigning a discovered field replaces the member; registering refuses bad names and kinds", () => {
  const net = new Net(3);
  const fresh = new Scale(3, 9);
  net.head = fresh;
  assert(net.namedChildren()[2][1] === fresh, "field reassignment replaces the child");
  assertThrows(() => net.registerParameter("a.b", net.alpha), TypeError, `"a.b"`, "without");
  assertThrows(() => net.registerParameter("", net.alpha), TypeError, `""`);
  assertThrows(() => net.registerBuffer("enc", zeros([1])), TypeError, `"enc" is already a module`, "buffer");
  assertThrows(() => net.registerModule("x", {} as Module), TypeError, `"x" must be a Module`);
  assertThrows(() => net.registerParameter("x", zeros([1]) as unknown as Parameter), TypeError, "Parameter", "Tensor");
  const buf = zeros([2]);
  new Stats(1, 1).registerBuffer("b", buf);
  assert(buf.kept, "registered buffers are kept");
});

gpuTest("Module train/eval reaches every descendant; device() names a module without tensors", (device) => {
  const net = new Net(4);
  assert(net.training && net.children().every((m) => m.training), "training by default");
  net.eval();
  assert(!net.training && net.modules().every((m) => !m.training), "eval everywhere");
  net.train();
  assert(net.modules().every((m) => m.training), "train everywhere");
  assert(net.device() === device, "device");
  assertThrows(() => new Empty().device(), Error, "Empty.device", "no parameters or buffers");
  const text = new Sequential(new Empty(), new Net(1)).toString();
  assert(text.includes("(0): Empty()") && text.includes("(1): Net(\n    (enc): Scale()"), `toString:\n${text}`);
});

gpuTest("loadStateDict copies every parameter and buffer on the GPU", async () => {
  const a = new Net(5), b = new Net(6);
  const want = await values(a.stateDict());
  const before = await values(b.stateDict());
  assert(JSON.stringify(want) !== JSON.stringify(before), "the two nets differ to begin with");
  const res = b.loadStateDict(a.stateDict());
  assertEquals(res, { missing: [], unexpected: [] }, "result");
  assertEquals(await values(b.stateDict()), want, "copied values");
  b.loadStateDict(Object.fromEntries(new Net(7).stateDict()));
  assertEquals((await values(b.stateDict()))["stats.steps"], [7 + 10], "record input, i32 buffer");
});

gpuTest("loadStateDict lists every mismatch in one error and changes nothing", async () => {
  const net = new Net(8);
  const before = await values(net.stateDict());
  const state = new Net(9).stateDict();
  state.delete("enc.bias");
  state.set("enc.weight", zeros([4]));
  state.set("stats.steps", zeros([1]));
  state.set("extra.weight", zeros([2, 5]));
  const e = assertThrows(
    () => net.loadStateDict(state, { source: "runs/x.fdl" }),
    Error,
    `Cannot load "runs/x.fdl" into Net (4 problems)`,
    `"enc.weight" is [4], model expects [3]`,
    `missing "enc.bias" (model expects [3])`,
    `"stats.steps" is f32, model expects i32`,
    `unexpected "extra.weight" [2,5]`,
  );
  assert(!(e instanceof TypeError), "plain Error");
  assertEquals(await values(net.stateDict()), before, "nothing changed");
  const released = new Net(9).stateDict();
  released.get("alpha")!.dispose();
  assertThrows(() => net.loadStateDict(released), Error, `"alpha" was released`);
  assertEquals(await values(net.stateDict()), before, "nothing changed after a released tensor");
});

gpuTest("loadStateDict with strict: false skips missing and unexpected keys but still refuses shapes", async () => {
  const net = new Net(10);
  const src = new Net(11);
  const state = src.stateDict();
  state.delete("alpha");
  state.set("bogus", zeros([1]));
  const res = net.loadStateDict(state, { strict: false });
  assertEquals(res, { missing: ["alpha"], unexpected: ["bogus"] }, "result");
  const got = await values(net.stateDict()), want = await values(src.stateDict());
  assertEquals(got["alpha"], [10], "alpha kept");
  assertEquals(got["enc.weight"], want["enc.weight"], "others loaded");
  state.set("enc.bias", zeros([5]));
  assertThrows(() => net.loadStateDict(state, { strict: false }), Error, `"enc.bias" is [5], model expects [3]`);
});
