/**
 * The shared-memory slab of the nccl-* collective: one
 * `SharedArrayBuffer` that the coordinator allocates for a group of W ranks and every rank
 * maps. It holds a control word block, W slots of L = P + Bc f32 values (parameters then
 * buffers, each pre-scaled by its rank's mass) and one result region of L values.
 *
 * ```
 *  Int32 control [STATE, COUNT, 0, 0] | slot 0 (L f32) | ... | slot W-1 | result (L f32)
 * ```
 *
 * Both sides import it: the coordinator creates and aborts slabs (coordinator/reduce/reduce_nccl.ts),
 * a rank writes its slot, meets the others at {@link barrier}, reduces its 1/W slice of the
 * result ({@link reduceSlice}) and reads the whole result back (rank/collective.ts).
 *
 * NOTE: barrier generations. `STATE` counts the barriers the group passed (0, 1, 2, ...),
 * plus the {@link ABORTED} bit once the coordinator aborted the group. The last arriver bumps
 * the count with a compare-exchange from the exact generation it arrived at (which fails
 * once the bit is set); the abort ORs the bit in without touching the count. A waiter looks
 * at the count first: so either every survivor passes a barrier or none does, whichever of
 * the bump and the abort lands first (a rank never adopts a consensus its peers abandoned).
 */

/** Int32 words before the f32 data (16 bytes keeps the f32 views aligned). */
export const CONTROL_WORDS = 4;
/** Index of the barrier generation (or {@link ABORTED}). */
export const STATE = 0;
/** Index of the arrival count of the barrier in progress. */
export const COUNT = 1;
/** The bit of `STATE` the coordinator sets to abort this group (a rank died or the reduce stalled). */
export const ABORTED = 1 << 30;

/**
 * Longest single blocking `Atomics.wait`, ms. Between two waits the rank yields to its
 * event loop so its heartbeats (every 1 s) keep flowing while it waits for a slow peer; a
 * notify (the last arriver, or an abort) wakes it at once, so this bounds nothing but the
 * heartbeat gap.
 */
export const WAIT_SLICE_MS = 50;

/** A group's shared memory and its geometry. Structured-cloneable: it crosses `postMessage` as is (the memory is shared). */
export interface Slab {
  sab: SharedArrayBuffer;
  world: number;
  /** Parameter values per slot (P). */
  params: number;
  /** Buffer values per slot (Bc). */
  buffers: number;
}

/** Typed views over a slab (built anew on each side: a cloned SAB is a new object over the same memory). */
export interface SlabViews {
  ctrl: Int32Array<SharedArrayBuffer>;
  /** Slot k: parameters then buffers, pre-scaled. */
  slot(k: number): Float32Array<SharedArrayBuffer>;
  /** The consensus: parameters then buffers. */
  result: Float32Array<SharedArrayBuffer>;
}

/**
 * Allocate a slab for `world` ranks of P parameters and Bc buffer values.
 * @throws {RangeError} When SharedArrayBuffer is missing (a page without cross-origin isolation) or a size is invalid.
 */
export function createSlab(world: number, params: number, buffers: number): Slab {
  if (!Number.isInteger(world) || world < 1) throw new RangeError(`createSlab: world must be an integer >= 1, got ${world}`);
  if (!Number.isInteger(params) || params < 0 || !Number.isInteger(buffers) || buffers < 0) {
    throw new RangeError(`createSlab: params and buffers must be integers >= 0, got ${params} and ${buffers}`);
  }
  assertSharedMemory();
  const L = params + buffers;
  const sab = new SharedArrayBuffer(CONTROL_WORDS * 4 + (world + 1) * L * 4);
  return { sab, world, params, buffers };
}

/** Views over a slab. */
export function slabViews(s: Slab): SlabViews {
  const L = s.params + s.buffers, base = CONTROL_WORDS * 4;
  return {
    ctrl: new Int32Array(s.sab, 0, CONTROL_WORDS),
    slot: (k) => new Float32Array(s.sab, base + k * L * 4, L),
    result: new Float32Array(s.sab, base + s.world * L * 4, L),
  };
}

/**
 * SharedArrayBuffer and Atomics are there: Deno, or a page served with cross-origin
 * isolation (COOP/COEP headers).
 * @throws {Error} Naming `crossOriginIsolated` and the two headers a page needs.
 */
export function assertSharedMemory(): void {
  const g = globalThis as { crossOriginIsolated?: boolean; SharedArrayBuffer?: unknown; Atomics?: unknown };
  if (typeof g.SharedArrayBuffer !== "function" || typeof g.Atomics !== "object" || g.crossOriginIsolated === false) {
    throw new Error(
      `Trainer.run: the nccl-* modes (backend Nccl) need SharedArrayBuffer, which this page does not have ` +
        `(crossOriginIsolated is ${g.crossOriginIsolated}): serve it with the headers ` +
        `"Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp" ` +
        `(vite.config.ts does for the dev server and preview), or use the cpu-* mode`,
    );
  }
}

/** The contiguous slice [lo, hi) of L values that slot k of W reduces (sizes differ by at most 1; any L, any W). */
export function sliceOf(k: number, world: number, L: number): [number, number] {
  return [Math.floor((k * L) / world), Math.floor(((k + 1) * L) / world)];
}

const f32 = Math.fround;

/**
 * Write one rank's contribution into its slot: parameters × `mass` and buffers × `mover`
 * (rounded to f32 once each, as the CPU plane's pre-scale does).
 */
export function writeSlot(v: SlabViews, slot: number, params: ArrayLike<number>, buffers: ArrayLike<number>, mass: number, mover: number): void {
  const out = v.slot(slot), P = params.length, m = f32(mass), b = f32(mover);
  if (out.length !== P + buffers.length) {
    throw new RangeError(`writeSlot: slot holds ${out.length} values, got ${P} params + ${buffers.length} buffers`);
  }
  for (let i = 0; i < P; i++) out[i] = m * params[i];
  for (let i = 0; i < buffers.length; i++) out[P + i] = b * buffers[i];
}

/**
 * Reduce slot k's 1/W slice: sum the slice over every slot, then divide once by the summed
 * mass (parameters: Σ masses; buffers: Σ movers), writing the result region. A section whose
 * summed mass is 0 is left as it is (zero-mass rounds never get here: the coordinator skips them).
 */
export function reduceSlice(s: Slab, v: SlabViews, k: number, masses: readonly number[], movers: readonly number[]): void {
  const L = s.params + s.buffers;
  const [lo, hi] = sliceOf(k, s.world, L);
  const slots = Array.from({ length: s.world }, (_, j) => v.slot(j));
  const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
  const mSum = sum(masses), bSum = sum(movers);
  const invP = mSum > 0 ? f32(1 / mSum) : 0, invB = bSum > 0 ? f32(1 / bSum) : 0;
  const out = v.result;
  for (let i = lo; i < hi; i++) {
    const inv = i < s.params ? invP : invB;
    if (inv === 0) continue;
    // NOTE: the slot values are f32; their sum is accumulated in f64 and rounded once, then
    // multiplied by the f32 reciprocal (at least as close as the CPU plane's f32 running sum).
    let acc = 0;
    for (let j = 0; j < slots.length; j++) acc += slots[j][i];
    out[i] = f32(f32(acc) * inv);
  }
}

/** How a barrier ended. */
export type BarrierOutcome = "passed" | "aborted" | "timeout";

/**
 * Meet the other `world - 1` ranks at barrier `generation` (0 for the first of a group's
 * life, then 1, 2, ...). Waits in slices of {@link WAIT_SLICE_MS}, yielding to the event
 * loop between them; returns "aborted" once the coordinator aborted the group, "timeout"
 * after `timeoutMs`. Only in a worker (a page's main thread may not `Atomics.wait`).
 */
export async function barrier(ctrl: Int32Array<SharedArrayBuffer>, world: number, generation: number, timeoutMs: number): Promise<BarrierOutcome> {
  if (Atomics.load(ctrl, STATE) !== generation) return "aborted";
  if (Atomics.add(ctrl, COUNT, 1) === world - 1) {
    // The last arriver: nobody can arrive at the next barrier before the bump below.
    Atomics.store(ctrl, COUNT, 0);
    const was = Atomics.compareExchange(ctrl, STATE, generation, generation + 1);
    Atomics.notify(ctrl, STATE);
    return was === generation ? "passed" : "aborted";
  }
  const until = performance.now() + timeoutMs;
  for (;;) {
    const s = Atomics.load(ctrl, STATE);
    if ((s & ~ABORTED) > generation) return "passed";
    if (s & ABORTED) return "aborted";
    const left = until - performance.now();
    if (left <= 0) return "timeout";
    if (Atomics.wait(ctrl, STATE, generation, Math.min(WAIT_SLICE_MS, left)) === "timed-out") {
      await new Promise((r) => setTimeout(r, 0)); // heartbeats and messages run here
    }
  }
}

/** Abort a group: every rank waiting at (or arriving later at) one of its barriers returns "aborted". */
export function abortSlab(s: Slab): void {
  const ctrl = slabViews(s).ctrl;
  Atomics.or(ctrl, STATE, ABORTED);
  Atomics.notify(ctrl, STATE);
}
