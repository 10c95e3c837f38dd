/**
 * A PyTorch state dict with BatchNorm (LeNet, test/fixtures/safetensors/interop.py) loads
 * strict into our twin, `num_batches_tracked` (I64) included, and gives torch's eval output;
 * our file loads strict into torch, which sees I64 counters. The same both ways for a
 * bidirectional 2-layer LSTM with a Linear head, for a 2-layer TransformerEncoder and a 2-layer
 * TransformerDecoder (batch first and sequence first) and for the zoo's ResNet-20. Runs Debian's /usr/bin/python3
 * with torch (apt-get install python3-torch); Deno only (it spawns a process).
 */
import {
  BatchNorm1d,
  BatchNorm2d,
  Conv2d,
  fromArray,
  LayerNorm,
  Linear,
  loadSafetensors,
  LSTM,
  MaxPool2d,
  Module,
  saveSafetensors,
  TransformerDecoder,
  TransformerDecoderLayer,
  TransformerEncoder,
  TransformerEncoderLayer,
  Variable,
} from "../../../src/index.ts";
import { encodeSafetensors } from "../../../src/io/mod.ts";
import { ResNet20 } from "../../../src/zoo/mod.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

const PYTHON = "/usr/bin/python3";
const SCRIPT = new URL("../../fixtures/safetensors/interop.py", import.meta.url).pathname;

/** Twin of interop.py's LeNet: same member names, so the state dict keys match torch's. */
class LeNet extends Module {
  conv1 = new Conv2d(1, 6, 5, { seed: 1 });
  bn1 = new BatchNorm2d(6);
  conv2 = new Conv2d(6, 16, 5, { seed: 2 });
  bn2 = new BatchNorm2d(16);
  fc1 = new Linear(16 * 4 * 4, 120, { seed: 3 });
  bn3 = new BatchNorm1d(120);
  fc2 = new Linear(120, 84, { seed: 4 });
  fc3 = new Linear(84, 10, { seed: 5 });
  pool = new MaxPool2d(2);
  forward(x: Variable): Variable {
    x = this.pool.forward(this.bn1.forward(this.conv1.forward(x)).relu());
    x = this.pool.forward(this.bn2.forward(this.conv2.forward(x)).relu());
    x = this.bn3.forward(this.fc1.forward(x.flatten(1))).relu();
    return this.fc3.forward(this.fc2.forward(x).relu());
  }
}

/** Twin of interop.py's BiLSTM. */
class BiLSTM extends Module {
  rnn = new LSTM(7, 6, { numLayers: 2, batchFirst: true, bidirectional: true });
  head = new Linear(12, 3);
  forward(x: Variable): Variable {
    const out = this.rnn.forward(x); // [B, T, 12]
    return this.head.forward(out.narrow(1, out.shape[1] - 1, 1).reshape([out.shape[0], 12]));
  }
}

/** Twin of interop.py's Encoder: `encoder.layers.{0,1}.*` and `encoder.norm.*`, as torch names them. */
class Encoder extends Module {
  readonly encoder: TransformerEncoder;
  constructor(batchFirst: boolean) {
    super();
    const layer = new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst });
    this.encoder = new TransformerEncoder(layer, 2, { norm: new LayerNorm(8) });
  }
  forward(x: Variable): Variable {
    return this.encoder.forward(x);
  }
}

/**
 * Twin of interop.py's Decoder: `decoder.layers.{0,1}.*` and `decoder.norm.*`; the input's first
 * 4 steps are the target (causal), the other 5 the memory.
 */
class Decoder extends Module {
  readonly decoder: TransformerDecoder;
  constructor(readonly batchFirst: boolean) {
    super();
    const layer = new TransformerDecoderLayer(8, 2, { dimFeedforward: 16, dropout: 0, batchFirst });
    this.decoder = new TransformerDecoder(layer, 2, { norm: new LayerNorm(8) });
  }
  forward(x: Variable): Variable {
    const dim = this.batchFirst ? 1 : 0;
    return this.decoder.forward(x.narrow(dim, 0, 4), x.narrow(dim, 4, x.shape[dim] - 4), { tgtCausal: true });
  }
}

interface TorchReport {
  state: Record<string, { dtype: string; shape: number[]; values: number[] }>;
  x: number[];
  y: number[];
}

async function python(...args: string[]): Promise<TorchReport> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(PYTHON, { args: [SCRIPT, ...args] }).output();
  } catch (e) {
    throw new Error(`This test needs Debian's python3 with torch at ${PYTHON} (apt-get install python3-torch): ${e}`);
  }
  assert(out.success, `interop.py ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

async function evalOutput(model: LeNet, x: number[]): Promise<Float32Array> {
  model.eval();
  return (await model.forward(new Variable(fromArray(x, [3, 1, 28, 28]))).toArray()) as Float32Array;
}

async function withTemp<T>(fn: (path: string) => Promise<T>): Promise<T> {
  const dir = Deno.makeTempDirSync();
  try {
    return await fn(`${dir}/lenet.safetensors`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

gpuTest("a torch-saved LeNet with BatchNorm loads strict: every value, num_batches_tracked = 3, torch's output", async () => {
  await withTemp(async (path) => {
    const torch = await python("lenet-save", path);
    const model = new LeNet();
    const r = loadSafetensors(model, Deno.readFileSync(path), path);
    assertEquals([r.missing, r.unexpected], [[], []], "strict load");
    const ours = model.stateDict();
    assertEquals([...ours.keys()].sort(), Object.keys(torch.state).sort(), "state dict keys");
    for (const [k, w] of Object.entries(torch.state)) {
      const t = ours.get(k)!;
      assertEquals([...t.shape], w.shape, `${k} shape`);
      assertEquals([...await t.toArray()], w.values, `${k} values`);
    }
    assertEquals(torch.state["bn2.num_batches_tracked"].dtype, "I64", "torch writes the counter as I64");
    assertEquals([...await model.bn2.numBatchesTracked.toArray()], [3], "bn2.num_batches_tracked");
    assertRelClose(await evalOutput(model, torch.x), torch.y, 1e-3, "eval output against torch's");
  });
});

gpuTest("torch loads our LeNet strict: counters arrive as I64 with our count, values and output match", async () => {
  await withTemp(async (path) => {
    const model = new LeNet();
    const rng = mulberry32(12);
    for (let i = 0; i < 2; i++) model.forward(new Variable(fromArray(randn(4 * 784, rng), [4, 1, 28, 28])));
    Deno.writeFileSync(path, await saveSafetensors(model));
    const torch = await python("lenet-load", path);
    for (const [k, t] of model.stateDict()) {
      const seen = torch.state[k];
      assertEquals(seen.dtype, k.endsWith("num_batches_tracked") ? "I64" : "F32", `${k} dtype in torch`);
      assertEquals(seen.values, [...await t.toArray()], `${k} values in torch`);
    }
    assertEquals(torch.state["bn1.num_batches_tracked"].values, [2], "two training batches counted");
    assertRelClose(await evalOutput(model, torch.x), torch.y, 1e-3, "eval output against torch's");
  });
});

gpuTest("num_batches_tracked stays out of the averaged buffers; a file without it loads strict and resets it", async () => {
  const bn = new BatchNorm1d(3);
  assertEquals(bn.namedBuffers().map(([k]) => k), ["running_mean", "running_var"], "namedBuffers (the f32 frame)");
  assertEquals(bn.namedCounters().map(([k]) => k), ["num_batches_tracked"], "namedCounters");
  bn.forward(new Variable(fromArray([1, 2, 3, 4, 5, 7], [2, 3])));
  bn.eval().forward(new Variable(fromArray([1, 2, 3], [1, 3])));
  assertEquals([...await bn.numBatchesTracked.toArray()], [1], "counted in training only");
  const f32 = (n: number, v: number) => ({ dtype: "F32" as const, shape: [n], data: new Float32Array(n).fill(v) });
  const old = encodeSafetensors({ weight: f32(3, 1), bias: f32(3, 0), running_mean: f32(3, 0), running_var: f32(3, 1) });
  const r = loadSafetensors(bn, old, "old.safetensors");
  assertEquals(r.missing, [], "a counter is never missing");
  assertEquals([...await bn.numBatchesTracked.toArray()], [0], "reset to 0 as PyTorch");
});

gpuTest("an I64 count beyond the i32 range is refused, naming the file, tensor and value, before any write", async () => {
  const bn = new BatchNorm1d(2);
  const f32 = (v: number) => ({ dtype: "F32" as const, shape: [2], data: new Float32Array(2).fill(v) });
  const bytes = encodeSafetensors({
    weight: f32(5),
    bias: f32(0),
    running_mean: f32(0),
    running_var: f32(1),
    num_batches_tracked: { dtype: "I64", shape: [], data: new BigInt64Array([3_000_000_000n]) },
  });
  assertThrows(
    () => loadSafetensors(bn, bytes, "big.safetensors"),
    RangeError,
    `"big.safetensors"`,
    `"num_batches_tracked"`,
    "3000000000",
    "[-2147483648, 2147483647]",
  );
  assertEquals([...await bn.weight!.data.toArray()], [1, 1], "nothing written");
});

/**
 * `<net>-save` in torch, loaded strict here: torch's output on its input. Then a fresh one of
 * ours (other values: a fresh seed) into torch by `<net>-load`, strict: torch's values and its
 * output of our weights. The input keeps its shape both ways (`shape`).
 */
function roundTrip(net: string, what: string, make: () => Module, shape: number[]): void {
  gpuTest(`a torch-saved ${what} loads strict by PyTorch's names and gives torch's output; ours loads back into torch`, async () => {
    await withTemp(async (path) => {
      const torch = await python(`${net}-save`, path);
      const model = make();
      const r = loadSafetensors(model, Deno.readFileSync(path), path);
      assertEquals([r.missing, r.unexpected], [[], []], "strict load");
      const x = () => new Variable(fromArray(torch.x, shape));
      assertRelClose(await model.forward(x()).toArray(), torch.y, 1e-4, "output against torch's");
      const mine = make();
      Deno.writeFileSync(path, await saveSafetensors(mine));
      const back = await python(`${net}-load`, path);
      for (const [k, t] of mine.stateDict()) assertEquals(back.state[k].values, [...await t.toArray()], `${k} values in torch`);
      assertRelClose(await mine.forward(x()).toArray(), back.y, 1e-4, "torch's output of our weights");
    });
  });
}

roundTrip("bilstm", "bidirectional LSTM", () => new BiLSTM(), [2, 5, 7]);
roundTrip("encoder-bf", "TransformerEncoder (2 layers, a final norm, batch first)", () => new Encoder(true), [2, 5, 8]);
roundTrip("encoder-sf", "TransformerEncoder (2 layers, a final norm, sequence first)", () => new Encoder(false), [2, 5, 8]);
roundTrip("decoder-bf", "TransformerDecoder (2 layers, a final norm, batch first)", () => new Decoder(true), [2, 9, 8]);
roundTrip("decoder-sf", "TransformerDecoder (2 layers, a final norm, sequence first)", () => new Decoder(false), [9, 2, 8]);

gpuTest("a torch-trained ResNet-20 loads strict into the zoo's and gives torch's eval output; ours loads back into torch", async () => {
  await withTemp(async (path) => {
    const torch = await python("resnet20-save", path);
    const model = new ResNet20();
    const r = loadSafetensors(model, Deno.readFileSync(path), path);
    assertEquals([r.missing, r.unexpected], [[], []], "strict load");
    assertEquals([...model.stateDict().keys()].sort(), Object.keys(torch.state).sort(), "state dict keys");
    assertEquals(model.numParameters(), 272_186, "parameters: torch counts 272,186 for the same network");
    const x = () => new Variable(fromArray(torch.x, [2, 1, 32, 32]));
    model.eval();
    assertRelClose(await model.forward(x()).toArray(), torch.y, 1e-3, "eval output against torch's");
    const mine = new ResNet20();
    mine.forward(new Variable(fromArray(randn(2 * 1024, mulberry32(18)), [2, 1, 32, 32]))); // moves the running statistics
    Deno.writeFileSync(path, await saveSafetensors(mine));
    const back = await python("resnet20-load", path);
    for (const [k, t] of mine.stateDict()) assertEquals(back.state[k].values, [...await t.toArray()], `${k} values in torch`);
    mine.eval();
    assertRelClose(await mine.forward(x()).toArray(), back.y, 1e-3, "torch's eval output of our weights");
  });
});
