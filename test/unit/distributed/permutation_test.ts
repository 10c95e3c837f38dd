import { epochSlice, permutation, PickKey, pickToSample, Rng } from "../../../src/distributed/rank/permutation.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

// Test vectors from the C reference implementations (xoshiro128starstar.c, splitmix64.c of
// prng.di.unimi.it), compiled with gcc: state {1,2,3,4}; and states seeded by two SplitMix64
// outputs (lo word first). PickKey mixes from Python's unbounded ints masked to 64 bits.
const XOSHIRO_1234 = [11520, 0, 5927040, 70819200, 2031721883, 1637235492];
const SEEDED: [bigint, number[]][] = [
  [0n, [3737715805, 2584255861, 2876756834, 3286328325, 1553311962]],
  [42n, [1776835114, 4165204688, 17111135, 2317295270, 2792088233]],
  [0xdeadbeefcafef00dn, [2474271784, 3449294574, 398812087, 2604086039, 1794633561]],
];

Deno.test("Rng matches the xoshiro128** reference from state {1, 2, 3, 4}", () => {
  const r = Rng.fromState([1, 2, 3, 4]);
  assertEquals(XOSHIRO_1234.map(() => r.nextU32()), XOSHIRO_1234);
  assertThrows(() => Rng.fromState([0, 0, 0, 0]), RangeError, "not all zero");
});

Deno.test("Rng seeds xoshiro128** with two SplitMix64 outputs", () => {
  for (const [seed, want] of SEEDED) {
    const r = new Rng(seed);
    assertEquals(want.map(() => r.nextU32()), want, `seed ${seed}`);
  }
});

Deno.test("Rng.below is in range and roughly uniform; next is in [0, 1)", () => {
  const r = new Rng(9);
  const hist = new Array(7).fill(0);
  for (let i = 0; i < 7000; i++) hist[r.below(7)]++;
  // Each bucket expects 1000; 5σ ≈ 5·sqrt(1000·6/7) ≈ 146.
  assert(hist.every((h) => Math.abs(h - 1000) < 146), `histogram ${hist}`);
  for (let i = 0; i < 1000; i++) {
    const x = r.next();
    assert(x >= 0 && x < 1, `next() = ${x}`);
  }
  assertThrows(() => r.below(0), RangeError, "Rng.below", "got 0");
});

Deno.test("permutation is a deterministic per-epoch shuffle of 0..n-1", () => {
  const n = 257;
  const a = permutation(42, 3, n), b = permutation(42, 3, n);
  assertEquals([...a], [...b]);
  assertEquals([...a].sort((x, y) => x - y), Array.from({ length: n }, (_, i) => i));
  const other = permutation(42, 4, n);
  assert(other.some((v, i) => v !== a[i]), "epochs differ");
  // seed + epoch is the PRNG seed: (41, 4) and (42, 3) are the same stream.
  assertEquals([...permutation(41, 4, n)], [...a]);
  assertEquals([...permutation(1, 0, 0)], []);
  assertEquals([...permutation(1, 0, 1)], [0]);
});

Deno.test("permutation: every element lands in every position about equally often", () => {
  const n = 5, trials = 5000;
  const counts = Array.from({ length: n }, () => new Array(n).fill(0));
  for (let e = 0; e < trials; e++) permutation(7, e, n).forEach((v, pos) => counts[v][pos]++);
  // 1000 expected per cell, 5σ ≈ 5·sqrt(1000·0.8) ≈ 141.
  for (const row of counts) {
    assert(row.every((c) => Math.abs(c - trials / n) < 141), `counts ${JSON.stringify(counts)}`);
  }
});

Deno.test("epochSlice cuts each pass into equal slices and drops the remainder", () => {
  assertEquals(epochSlice(0, 1, 101), { pass: 0, offset: 0, size: 101 });
  assertEquals(epochSlice(4, 3, 101), { pass: 1, offset: 33, size: 33 });
  assertEquals(epochSlice(5, 3, 101), { pass: 1, offset: 66, size: 33 });
  assertThrows(() => epochSlice(0, 0, 10), RangeError, "splits", "got 0");
});

Deno.test("pickToSample maps pick p to sample p / k, view p % k", () => {
  assertEquals(pickToSample(0, 3), { sample: 0, view: 0 });
  assertEquals(pickToSample(7, 3), { sample: 2, view: 1 });
  assertEquals(pickToSample(7, 1), { sample: 7, view: 0 });
});

Deno.test("PickKey.mix follows the u64 wrapping mix of flodl", () => {
  const cases: [number, number, number, number, bigint][] = [
    // seed, epoch, sample, repeat, want
    [42, 0, 0, 0, 0xf519f86e98b4a745n],
    [42, 3, 12, 1, 0x1c0944cab6f6846fn],
    [7, 100, 59999, 3, 0x0a0a9d6e0bede2ecn],
    [0, 0, 1, 0, 0x94d049bb59593536n],
  ];
  for (const [seed, epoch, sample, repeat, want] of cases) {
    assertEquals(new PickKey(sample, repeat, epoch, seed).mix().toString(16), want.toString(16));
  }
  const k = new PickKey(12, 1, 3, 42);
  assertEquals(k.rng().nextU32(), new Rng(0x1c0944cab6f6846fn).nextU32());
  assert(new PickKey(12, 2, 3, 42).rng().nextU32() !== k.rng().nextU32(), "views differ");
});
