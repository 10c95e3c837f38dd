/** checkFrame: a remote rank's frame is refused naming the rank for each way it can be wrong. */
import { assert } from "../../../util/assert.ts";
import { mulberry32, randn } from "../../../util/random.ts";
import { checkFrame, type FrameExpectation } from "../../../../src/distributed/nats/frame_checks.ts";

/** Pack f32 values as bf16 by truncation (high half), element 2i in the low half of word i. */
function packTrunc(x: Float32Array): Uint32Array<ArrayBuffer> {
  const hi = new Uint32Array(x.buffer, x.byteOffset, x.length), out = new Uint32Array(Math.ceil(x.length / 2));
  for (let i = 0; i < x.length; i++) out[i >> 1] |= (hi[i] >>> 16) << ((i & 1) * 16);
  return out;
}

const N = 33, B = 7;
const want: FrameExpectation = { rank: 2, dtype: "bf16", paramCount: N, bufferCount: B, round: 5 };
function good() {
  const rng = mulberry32(5);
  return {
    rank: 2,
    round: 5,
    batches: 3,
    dtype: "bf16" as const,
    params: packTrunc(randn(N, rng)),
    buffers: randn(B, rng),
  };
}

function refusal(frame: unknown, w = want): string {
  try {
    checkFrame(frame, w);
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "accepted";
}

Deno.test("checkFrame: a good bf16 and a good f32 frame pass; the odd bf16 padding half is not a value", () => {
  const f = good();
  f.params[f.params.length - 1] |= 0x7fff0000; // padding half of word 16 (odd count): NaN bits, ignored
  assert(refusal(f) === "accepted", refusal(f));
  const rng = mulberry32(6);
  const f32 = { rank: 2, round: 5, dtype: "f32", params: randn(N, rng), buffers: randn(B, rng) };
  assert(refusal(f32, { ...want, dtype: "f32" }) === "accepted", refusal(f32, { ...want, dtype: "f32" }));
});

Deno.test("checkFrame: wrong rank, round, dtype, sizes and non-finite values are refused naming rank 2", () => {
  const inf = good();
  inf.params[16] = (inf.params[16] & 0xffff0000) | 0xff80; // -Inf at parameter 32 (low half of word 16)
  const nanBuf = good();
  nanBuf.buffers[4] = NaN;
  const rng = mulberry32(8);
  const cases: [unknown, string, FrameExpectation?][] = [
    [null, "TypeError: rank 2: sent a null, not a frame"],
    [{ ...good(), rank: 1 }, "RangeError: rank 2: sent a frame that says rank 1"],
    [{ ...good(), round: 4 }, "RangeError: rank 2: frame of round 4, from the past (round 5 asked)"],
    [{ ...good(), round: 6 }, "RangeError: rank 2: frame of round 6, from the future (round 5 asked)"],
    [{ ...good(), round: 5.5 }, "TypeError: rank 2: frame round is 5.5, not an integer"],
    [{ ...good(), dtype: "f32" }, `TypeError: rank 2: frame dtype "f32", the run's wire is "bf16"`],
    [
      { ...good(), params: new Uint32Array(16) },
      "RangeError: rank 2: bf16 frame holds 16 words, expected 17 for 33 parameters",
    ],
    [
      { ...good(), params: new Float32Array(17) },
      "TypeError: rank 2: bf16 frame params are a Float32Array, expected Uint32Array",
    ],
    [{ ...good(), buffers: new Float32Array(6) }, "RangeError: rank 2: frame holds 6 buffer values, expected 7"],
    [{ ...good(), buffers: [1, 2] }, "TypeError: rank 2: frame buffers are a Array, expected Float32Array"],
    [inf, "RangeError: rank 2: frame parameter 32 of round 5 is NaN or Inf; not averaged"],
    [nanBuf, "RangeError: rank 2: frame buffer value 4 of round 5 is NaN or Inf; not averaged"],
    [
      { rank: 2, round: 5, dtype: "f32", params: randn(N - 1, rng), buffers: randn(B, rng) },
      "RangeError: rank 2: f32 frame holds 32 parameter values, expected 33",
      { ...want, dtype: "f32" },
    ],
  ];
  for (const [frame, msg, w] of cases) assert(refusal(frame, w) === msg, `want "${msg}", got "${refusal(frame, w)}"`);
  const p = randn(N, rng);
  p[9] = Infinity;
  const got = refusal({ rank: 2, round: 5, dtype: "f32", params: p, buffers: randn(B, rng) }, {
    ...want,
    dtype: "f32",
  });
  assert(got === "RangeError: rank 2: frame parameter 9 of round 5 is NaN or Inf; not averaged", got);
});

Deno.test("checkFrame: a relayed rank's answer names its relay and carries no values; steps must be a count", () => {
  const relayed = { ...good(), via: 9, params: new Uint32Array(0), buffers: new Float32Array(0) };
  assert(refusal(relayed, { ...want, via: 9 }) === "accepted", refusal(relayed, { ...want, via: 9 }));
  const cases: [unknown, string, FrameExpectation][] = [
    [relayed, "RangeError: rank 2: frame says it went to relay 9, but the rank has no relay", want],
    [{ ...relayed, via: 8 }, "RangeError: rank 2: frame says relay 8, the rank's relay is 9", { ...want, via: 9 }],
    [good(), "RangeError: rank 2: frame says relay undefined, the rank's relay is 9", { ...want, via: 9 }],
    [{ ...relayed, buffers: new Float32Array(7) }, "RangeError: rank 2: a relayed frame must carry no values here (its relay sums them), got 0 params and 7 buffer values", { ...want, via: 9 }],
    [{ ...relayed, round: 4 }, "RangeError: rank 2: frame of round 4, from the past (round 5 asked)", { ...want, via: 9 }],
    [{ ...good(), batches: -1 }, "RangeError: rank 2: frame batches is -1, not an integer >= 0", want],
    [{ ...good(), batches: 2.5 }, "RangeError: rank 2: frame batches is 2.5, not an integer >= 0", want],
  ];
  for (const [frame, msg, w] of cases) assert(refusal(frame, w) === msg, `want "${msg}", got "${refusal(frame, w)}"`);
});
