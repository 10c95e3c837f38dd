/**
 * The demo's per-rank share line and why (demo/rank_share.ts): a 2-rank run without a slow
 * rank that splits 8% / 92% says which rank is slower per batch and why.
 */
import { RankShares } from "../../../demo/rank_share.ts";
import { assert, assertEquals } from "../../util/assert.ts";

const feed = (s: RankShares, rank: number, n: number, ms: number, computeMs = ms) => {
  for (let i = 0; i < n; i++) s.batch({ rank, ms, computeMs });
};

Deno.test("RankShares: nothing before a batch or with one rank; a rank still compiling is named", () => {
  assertEquals(new RankShares(2).lines(), undefined);
  const one = new RankShares(1);
  feed(one, 0, 3, 100);
  assertEquals(one.lines(), undefined, "one rank shares nothing");
  const s = new RankShares(2);
  feed(s, 1, 4, 120, 100);
  const l = s.lines()!;
  assertEquals(l.shares, "Batches per rank: rank 0 0% (0), rank 1 100% (4, 120 ms each, 100 computing)");
  assert(l.why.startsWith("Rank 0 has not finished a batch yet: still compiling GPU pipelines"), l.why);
});

Deno.test("RankShares: 9 against 80 batches without a slow rank names the slower rank, the ratio and the shared GPU", () => {
  const s = new RankShares(2);
  feed(s, 0, 9, 900, 850);
  feed(s, 1, 80, 100, 90);
  const l = s.lines()!;
  assertEquals(
    l.shares,
    "Batches per rank: rank 0 10% (9, 900 ms each, 850 computing), rank 1 90% (80, 100 ms each, 90 computing)",
  );
  assert(
    l.why.startsWith("Uneven without a slow rank: rank 0 takes 900 ms a batch, rank 1 100 ms (9.0× longer)"),
    l.why,
  );
  assert(l.why.includes("share this machine's GPU"), l.why);
});

Deno.test("RankShares: a rank slowed on purpose, one that started late, and even ranks each say so", () => {
  const slowed = new RankShares(2, { rank: 1, factor: 3 });
  feed(slowed, 0, 30, 100);
  feed(slowed, 1, 10, 300);
  assert(slowed.lines()!.why.startsWith("Rank 1 is slowed ×3 on purpose (Simulated slow rank)"), slowed.lines()!.why);
  const late = new RankShares(2);
  feed(late, 0, 1, 30_000); // its first batch compiles
  feed(late, 0, 9, 100);
  feed(late, 1, 1, 2_000);
  feed(late, 1, 39, 95);
  assert(
    late.lines()!.why.startsWith(
      "Rank 0 started later: its first batch, which compiles its GPU pipelines, took 30.0 s against rank 1's 2.0 s",
    ),
    late.lines()!.why,
  );
  const first = new RankShares(2);
  feed(first, 0, 1, 9_000);
  feed(first, 1, 12, 100);
  assert(first.lines()!.why.startsWith("Rank 0 has finished only its first batch"), first.lines()!.why);
  assertEquals(first.lines()!.shares, "Batches per rank: rank 0 8% (1), rank 1 92% (12, 100 ms each, 100 computing)");
  const tied = new RankShares(2);
  feed(tied, 0, 15, 249);
  feed(tied, 1, 15, 257);
  assertEquals(
    tied.lines()!.why,
    "The ranks run at about the same speed (rank 0 takes 249 ms a batch, rank 1 257 ms), so ElChe gives them about the same windows.",
    "equal shares name two ranks",
  );
  const even = new RankShares(3);
  for (const r of [0, 1, 2]) feed(even, r, 20 + r, 100 + r);
  assert(even.lines()!.why.startsWith("The ranks run at about the same speed"), even.lines()!.why);
  // The speed is of the latest 20 batches: a slow first (compiling) batch does not stay in it.
  const warm = new RankShares(2);
  feed(warm, 0, 1, 60_000);
  feed(warm, 0, 20, 100);
  assertEquals(warm.speed(0), { ms: 100, computeMs: 100 });
});
