import { Parameter, type Variable } from "../../../src/autograd/mod.ts";
import { fromArray, Tensor } from "../../../src/tensor/mod.ts";
import { Module } from "../../../src/nn/module.ts";
import { decodeSafetensors, encodeSafetensors } from "../../../src/io/safetensors.ts";
import { loadSafetensors, saveSafetensors } from "../../../src/nn/state.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, randn } from "../../util/random.ts";

// NOTE: through a variable: Vite rewrites `new URL("<literal>", import.meta.url)` as an
// asset reference, and a folder's URL came back without its trailing slash.
const HERE = import.meta.url;
const FIXTURES = new URL("../../fixtures/safetensors/", HERE);

class Leaf extends Module {
  constructor(entries: [string, Tensor, "param" | "buffer"][]) {
    super();
    for (const [n, t, kind] of entries) {
      if (kind === "param") this.registerParameter(n, new Parameter(t));
      else this.registerBuffer(n, t);
    }
  }
  forward(x: Variable): Variable {
    return x;
  }
}

/** A module with the names, shapes and dtypes of test/fixtures/safetensors/torch_small.safetensors. */
class TorchSmall extends Module {
  constructor() {
    super();
    const e = (s: number[], dtype: "f32" | "i32" | "u32" = "f32") => Tensor.empty(s, { dtype });
    this.registerModule("fc1", new Leaf([["weight", e([7, 5]), "param"], ["bias", e([7]), "param"]]));
    this.registerParameter("scale", new Parameter(e([])));
    this.registerParameter("empty", new Parameter(e([0, 3])));
    this.registerModule("emb", new Leaf([["weight", e([3, 11]), "param"]]));
    this.registerParameter("half", new Parameter(e([6])));
    this.registerModule("bn", new Leaf([["num_batches_tracked", e([2, 3], "i32"), "buffer"]]));
    this.registerBuffer("counts", e([4], "u32"));
  }
  forward(x: Variable): Variable {
    return x;
  }
}

/** Seeded module: weight [7,33] and bias [7] parameters, an i32 buffer. */
function model(seed: number): Module {
  const rng = mulberry32(seed);
  return new Leaf([
    ["weight", fromArray(randn(7 * 33, rng), [7, 33]), "param"],
    ["bias", fromArray(randn(7, rng), [7]), "param"],
    ["steps", fromArray(new Int32Array([seed, -seed])), "buffer"],
  ]);
}

async function values(m: Module): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const [k, t] of m.stateDict()) out[k] = [...await t.toArray()];
  return out;
}

gpuTest("saveSafetensors then loadSafetensors restores a module exactly (F32)", async () => {
  const src = model(1), dst = model(2);
  const bytes = await saveSafetensors(src, { metadata: { epoch: "3" } });
  const file = decodeSafetensors(bytes);
  assertEquals(Object.keys(file.tensors), ["weight", "bias", "steps"], "keys in stateDict order");
  assertEquals(file.tensors.steps.dtype, "I32", "i32 buffer stays I32");
  const res = loadSafetensors(dst, bytes, "m.fdl");
  assertEquals(res, { missing: [], unexpected: [], metadata: { epoch: "3" } }, "result");
  assertEquals(await values(dst), await values(src), "values");
});

gpuTest("saveSafetensors BF16 halves the bytes and loads back rounded to bf16", async () => {
  const src = model(3), dst = model(4);
  const bytes = await saveSafetensors(src, { dtype: "BF16" });
  const file = decodeSafetensors(bytes);
  assertEquals(file.tensors.weight.dtype, "BF16", "dtype");
  assertEquals(file.tensors.weight.data.byteLength, 7 * 33 * 2, "two bytes per value");
  assertEquals(file.tensors.steps.dtype, "I32", "integer buffers are never rounded");
  loadSafetensors(dst, bytes);
  const want = await values(src), got = await values(dst);
  for (const k of ["weight", "bias"]) {
    want[k].forEach((w, i) => {
      const g = got[k][i];
      // bf16 keeps 8 significant bits: rounding moves a value by at most half an ulp, 2^-8 relative.
      assert(Math.abs(g - w) <= Math.abs(w) * 2 ** -8, `${k}[${i}]: ${g} is not ${w} rounded to bf16`);
      assert((new Uint32Array(new Float32Array([g]).buffer)[0] & 0xffff) === 0, `${k}[${i}] low bits are zero`);
    });
  }
  assertEquals(got.steps, want.steps, "steps");
});

gpuTest("positional keys p{i}/b{j} (flodl .fdl consensus files) round-trip", async () => {
  const src = model(5), dst = model(6);
  const bytes = await saveSafetensors(src, { keys: "positional" });
  assertEquals(Object.keys(decodeSafetensors(bytes).tensors), ["p0", "p1", "b0"], "keys");
  loadSafetensors(dst, bytes, "x.fdl", { keys: "positional" });
  assertEquals(await values(dst), await values(src), "values");
  assertThrows(() => loadSafetensors(model(7), bytes), Error, `missing "weight"`, `unexpected "p0"`);
});

gpuTest("loadSafetensors reads PyTorch's file (F32, BF16, F16, I32, U32, scalar, empty)", async () => {
  const bytes = new Uint8Array(await (await fetch(new URL("torch_small.safetensors", FIXTURES))).arrayBuffer());
  const want = await (await fetch(new URL("torch_small.json", FIXTURES))).json();
  const m = new TorchSmall();
  const res = loadSafetensors(m, bytes, "torch_small.safetensors");
  assertEquals(res.metadata, want.metadata, "metadata");
  const got = await values(m);
  for (const [k, w] of Object.entries(want.tensors) as [string, { values: (number | string)[] }][]) {
    assertEquals(got[k].map(String), w.values.map((v) => (v === "inf" ? "Infinity" : String(v))), `${k} values`);
  }
});

gpuTest("loadSafetensors lists every mismatch with the module in one error and writes nothing", async () => {
  const m = model(8);
  const before = await values(m);
  const bytes = encodeSafetensors({
    weight: { dtype: "F32", shape: [33, 7], data: new Float32Array(231) },
    steps: { dtype: "F32", shape: [2], data: new Float32Array(2) },
    other: { dtype: "U32", shape: [1], data: new Uint32Array(1) },
  });
  assertThrows(
    () => loadSafetensors(m, bytes, "bad.fdl"),
    Error,
    `Cannot load "bad.fdl" into Leaf (4 problems)`,
    `"weight" is [33,7], model expects [7,33]`,
    `missing "bias" (model expects [7])`,
    `"steps" is F32, model expects i32`,
    `unexpected "other" [1]`,
  );
  assertEquals(await values(m), before, "nothing written");
  assertThrows(() => loadSafetensors(m, bytes.subarray(0, 20), "cut.fdl"), RangeError, `"cut.fdl"`);
});
