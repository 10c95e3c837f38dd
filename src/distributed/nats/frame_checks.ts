/**
 * Checks of a frame that arrived from a remote rank, before it may be averaged: who sent
 * it, its round, dtype, sizes, and that every value is finite. A worker rank runs our own
 * code; a remote one is a process or tab elsewhere, so its frames are checked like input.
 * Every refusal names the rank and what was expected against what came.
 */

/** The fields of a frame (protocol.ts `Frame`) these checks read. */
export interface FrameLike {
  rank: number;
  round: number;
  dtype: "bf16" | "f32";
  /** bf16: two values per u32 word, element 2i in the low half; f32: one per element. */
  params: Uint32Array | Float32Array;
  buffers: Float32Array;
  /** Optimizer steps since the last reduce (a rank's frame; a relay's sum has none). */
  batches?: number;
  /** The relay that holds this rank's values (a relayed rank's snapshot answer: no values here). */
  via?: number;
}

/** What the coordinator expects of a frame from `rank`. */
export interface FrameExpectation {
  rank: number;
  dtype: "bf16" | "f32";
  /** Parameter values (the layout table's paramCount). */
  paramCount: number;
  /** Buffer values (the layout table's bufferCount). */
  bufferCount: number;
  /** The round asked for: a frame of an earlier round is stale (a replay or a lagging answer). */
  round: number;
  /**
   * The rank sits behind this relay: its snapshot answer must say so (`via`) and hold no
   * values (the relay checks and sums them).
   */
  via?: number;
  /** Who sent it, for messages (default `rank <rank>`; a relay's sum: `relay 0`). */
  who?: string;
}

/** bf16 exponent bits: all ones is Inf or NaN. */
const BF16_EXP = 0x7f80;

/** What a value is, for a message: its constructor's name. */
function typeName(x: unknown): string {
  return x === null || x === undefined ? String(x) : (x as object).constructor?.name ?? typeof x;
}

/** Index of the first non-finite f32 value, or -1. */
function firstNonFinite(a: Float32Array): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return i;
  return -1;
}

/** Index of the first non-finite bf16 value of `n` packed in `words`, or -1. */
function firstNonFiniteBf16(words: Uint32Array, n: number): number {
  for (let i = 0; i < n; i++) if (((words[i >> 1] >>> ((i & 1) * 16)) & BF16_EXP) === BF16_EXP) return i;
  return -1;
}

/**
 * Check a frame from a remote rank against what the coordinator asked for.
 * @param frame As decoded from the link (unknown until checked).
 * @param want The rank, dtype, counts and round expected.
 * @returns The frame, typed.
 * @throws {TypeError} On a wrong shape of object, dtype or array type, naming the rank.
 * @throws {RangeError} On a wrong rank, round, size, or a NaN/Inf value (index given).
 * @example
 * ```ts
 * import { checkFrame } from "./frame_checks.ts";
 * const frame = { rank: 1, round: 3, dtype: "f32", params: new Float32Array([1, 2]), buffers: new Float32Array(0) };
 * checkFrame(frame, { rank: 1, dtype: "f32", paramCount: 2, bufferCount: 0, round: 3 });
 * ```
 */
export function checkFrame(frame: unknown, want: FrameExpectation): FrameLike {
  const who = want.who ?? `rank ${want.rank}`;
  if (frame === null || typeof frame !== "object") {
    throw new TypeError(`${who}: sent a ${frame === null ? "null" : typeof frame}, not a frame`);
  }
  const f = frame as Partial<FrameLike>;
  if (f.rank !== want.rank) throw new RangeError(`${who}: sent a frame that says rank ${f.rank}`);
  if (f.batches !== undefined && !(Number.isInteger(f.batches) && f.batches >= 0)) {
    throw new RangeError(`${who}: frame batches is ${f.batches}, not an integer >= 0`);
  }
  if (!Number.isInteger(f.round)) throw new TypeError(`${who}: frame round is ${f.round}, not an integer`);
  if (f.round! < want.round) {
    throw new RangeError(`${who}: frame of round ${f.round}, from the past (round ${want.round} asked)`);
  }
  if (f.round! > want.round) {
    throw new RangeError(`${who}: frame of round ${f.round}, from the future (round ${want.round} asked)`);
  }
  if (f.dtype !== want.dtype) {
    throw new TypeError(`${who}: frame dtype "${f.dtype}", the run's wire is "${want.dtype}"`);
  }
  if (want.via !== undefined || f.via !== undefined) return checkVia(f, want, who);
  if (!(f.buffers instanceof Float32Array)) {
    throw new TypeError(`${who}: frame buffers are a ${typeName(f.buffers)}, expected Float32Array`);
  }
  if (f.buffers.length !== want.bufferCount) {
    throw new RangeError(`${who}: frame holds ${f.buffers.length} buffer values, expected ${want.bufferCount}`);
  }
  let bad: number;
  if (want.dtype === "bf16") {
    if (!(f.params instanceof Uint32Array)) {
      throw new TypeError(`${who}: bf16 frame params are a ${typeName(f.params)}, expected Uint32Array`);
    }
    const words = Math.ceil(want.paramCount / 2);
    if (f.params.length !== words) {
      throw new RangeError(
        `${who}: bf16 frame holds ${f.params.length} words, expected ${words} for ${want.paramCount} parameters`,
      );
    }
    bad = firstNonFiniteBf16(f.params, want.paramCount);
  } else {
    if (!(f.params instanceof Float32Array)) {
      throw new TypeError(`${who}: f32 frame params are a ${typeName(f.params)}, expected Float32Array`);
    }
    if (f.params.length !== want.paramCount) {
      throw new RangeError(`${who}: f32 frame holds ${f.params.length} parameter values, expected ${want.paramCount}`);
    }
    bad = firstNonFinite(f.params);
  }
  if (bad >= 0) throw new RangeError(`${who}: frame parameter ${bad} of round ${f.round} is NaN or Inf; not averaged`);
  const badBuf = firstNonFinite(f.buffers);
  if (badBuf >= 0) {
    throw new RangeError(`${who}: frame buffer value ${badBuf} of round ${f.round} is NaN or Inf; not averaged`);
  }
  return f as FrameLike;
}

/** A relayed rank's snapshot answer: the relay it names, and no values of its own. */
function checkVia(f: Partial<FrameLike>, want: FrameExpectation, who: string): FrameLike {
  if (f.via !== want.via) {
    throw new RangeError(
      want.via === undefined
        ? `${who}: frame says it went to relay ${f.via}, but the rank has no relay`
        : `${who}: frame says relay ${f.via}, the rank's relay is ${want.via}`,
    );
  }
  const n = (x: unknown) => (ArrayBuffer.isView(x) ? (x as Float32Array).length : -1);
  if (n(f.params) !== 0 || n(f.buffers) !== 0) {
    throw new RangeError(`${who}: a relayed frame must carry no values here (its relay sums them), got ${n(f.params)} params and ${n(f.buffers)} buffer values`);
  }
  return f as FrameLike;
}
