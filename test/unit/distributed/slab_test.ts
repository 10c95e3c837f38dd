/**
 * The nccl-* slab (protocol/slab.ts): the reduce-scatter against a float64 reference on
 * random inputs and masses (zero masses included, a length no world size divides), and the
 * barrier among real Web Workers: generations pass for all, an abort releases every waiter
 * and refuses late arrivals, a missing peer times out.
 */
import {
  abortSlab,
  assertSharedMemory,
  createSlab,
  reduceSlice,
  type Slab,
  slabViews,
  sliceOf,
  writeSlot,
} from "../../../src/distributed/protocol/slab.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";

Deno.test("sliceOf cuts any length into W contiguous slices that differ by at most one and cover it once", () => {
  for (const [L, W] of [[1037, 4], [7, 3], [2, 5], [0, 2], [129, 1]]) {
    let at = 0;
    const sizes: number[] = [];
    for (let k = 0; k < W; k++) {
      const [lo, hi] = sliceOf(k, W, L);
      assertEquals(lo, at, `slice ${k} of L=${L}, W=${W} starts where the last ended`);
      sizes.push(hi - lo);
      at = hi;
    }
    assertEquals(at, L, `L=${L}, W=${W}: slices cover it`);
    assert(Math.max(...sizes) - Math.min(...sizes) <= 1, `L=${L}, W=${W}: sizes ${sizes}`);
  }
});

Deno.test("reduce-scatter over the slab equals the float64 mass-weighted mean (params: n^γ masses, zeros included; buffers: movers) on odd P", () => {
  const rng = mulberry32(17);
  for (const [W, P, Bc] of [[2, 1037, 13], [3, 129, 0], [5, 33, 7], [4, 7, 3]]) {
    const slab = createSlab(W, P, Bc);
    const v = slabViews(slab);
    const params = Array.from({ length: W }, () => randn(P, rng));
    const buffers = Array.from({ length: W }, () => randn(Bc, rng));
    // Masses n^γ with γ = 0.7 on random step counts; slot 1 did not move (mass 0, mover 0).
    const steps = Array.from({ length: W }, (_, k) => (k === 1 ? 0 : 1 + Math.floor(rng() * 9)));
    const masses = steps.map((n) => (n > 0 ? n ** 0.7 : 0));
    const movers = steps.map((n): number => (n > 0 ? 1 : 0));
    for (let k = 0; k < W; k++) writeSlot(v, k, params[k], buffers[k], masses[k], movers[k]);
    for (let k = 0; k < W; k++) reduceSlice(slab, v, k, masses, movers);
    const mSum = masses.reduce((a, b) => a + b, 0), bSum = movers.reduce((a, b) => a + b, 0);
    const wantP = new Float64Array(P), wantB = new Float64Array(Bc);
    for (let k = 0; k < W; k++) {
      for (let i = 0; i < P; i++) wantP[i] += (masses[k] * params[k][i]) / mSum;
      for (let i = 0; i < Bc; i++) wantB[i] += (movers[k] * buffers[k][i]) / bSum;
    }
    assertRelClose(v.result.slice(0, P), wantP, 1e-5, `params W=${W} P=${P}`);
    assertRelClose(v.result.slice(P), wantB, 1e-5, `buffers W=${W} Bc=${Bc}`);
  }
});

Deno.test("reduce-scatter with all masses 0 leaves the result region untouched", () => {
  const slab = createSlab(2, 5, 2);
  const v = slabViews(slab);
  v.result.fill(7);
  writeSlot(v, 0, randn(5, mulberry32(1)), randn(2, mulberry32(2)), 0, 0);
  writeSlot(v, 1, randn(5, mulberry32(3)), randn(2, mulberry32(4)), 0, 0);
  reduceSlice(slab, v, 0, [0, 0], [0, 0]);
  reduceSlice(slab, v, 1, [0, 0], [0, 0]);
  assert(v.result.every((x) => x === 7), `result ${v.result}`);
});

Deno.test("writeSlot and createSlab refuse mismatched sizes naming both", () => {
  const v = slabViews(createSlab(2, 5, 1));
  assertThrows(() => writeSlot(v, 0, new Float32Array(4), new Float32Array(1), 1, 1), RangeError, "6 values", "4 params + 1 buffers");
  assertThrows(() => createSlab(0, 5, 1), RangeError, "world", "got 0");
  assertThrows(() => createSlab(2, -1, 1), RangeError, "params", "-1");
});

Deno.test("a page without cross-origin isolation gets an error naming crossOriginIsolated and both headers", () => {
  const g = globalThis as { crossOriginIsolated?: boolean };
  const before = Object.getOwnPropertyDescriptor(globalThis, "crossOriginIsolated");
  Object.defineProperty(globalThis, "crossOriginIsolated", { value: false, configurable: true });
  try {
    assertThrows(
      () => assertSharedMemory(),
      Error,
      "crossOriginIsolated is false",
      "Cross-Origin-Opener-Policy: same-origin",
      "Cross-Origin-Embedder-Policy: require-corp",
      "cpu-*",
    );
    assertThrows(() => createSlab(2, 3, 0), Error, "crossOriginIsolated");
  } finally {
    if (before) Object.defineProperty(globalThis, "crossOriginIsolated", before);
    else delete g.crossOriginIsolated;
  }
  assertSharedMemory(); // Deno has shared memory
});

/** Start `n` barrier workers on `slab`, each meeting `generations`; resolves with their outcomes. */
function participants(slab: Slab, n: number, generations: number[], timeoutMs: number) {
  return Array.from({ length: n }, () => {
    const w = new Worker(new URL("./slab_barrier_worker.ts", import.meta.url), { type: "module" });
    return new Promise<string[]>((resolve, reject) => {
      w.onmessage = (e) => (w.terminate(), resolve(e.data as string[]));
      w.onerror = (e) => (w.terminate(), reject(new Error(e.message)));
      w.postMessage({ slab, generations, timeoutMs });
    });
  });
}

Deno.test("barrier: 3 workers pass 6 generations together; an abort releases 2 waiting for a third and refuses it later; a missing peer times out", async () => {
  const all = await Promise.all(participants(createSlab(3, 1, 0), 3, [0, 1, 2, 3, 4, 5], 30_000));
  assertEquals(all, Array(3).fill(Array(6).fill("passed")), "every worker passed every generation");

  const slab = createSlab(3, 1, 0);
  const waiting = participants(slab, 2, [0], 30_000);
  // Two have arrived when COUNT reads 2; then abort, as the coordinator does when a member dies.
  const ctrl = slabViews(slab).ctrl;
  while (Atomics.load(ctrl, 1) < 2) await new Promise((r) => setTimeout(r, 5));
  abortSlab(slab);
  assertEquals(await Promise.all(waiting), [["aborted"], ["aborted"]], "the waiters return aborted");
  assertEquals(await Promise.all(participants(slab, 1, [0], 30_000)), [["aborted"]], "a late arrival is refused");

  assertEquals(await Promise.all(participants(createSlab(2, 1, 0), 1, [0], 200)), [["timeout"]], "alone at a barrier of 2");
});
