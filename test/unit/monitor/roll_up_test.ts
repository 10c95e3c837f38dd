import { CORE_REDUCTIONS, reductionFor, rollUp, type RollUpChild } from "../../../src/monitor/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

const A = {
  work: 2,
  values: { loss: 1, throughput: 10, batch_share: 0.25, data_starve: 3, compute_only_ms: 7, acc: 0.5, lr: 0.1 },
};
const B = {
  work: 6,
  values: { loss: 3, throughput: 30, batch_share: 0.75, data_starve: 5, compute_only_ms: 4, acc: 0.7, lr: 0.2 },
};

Deno.test("rollUp: core keys use their fixed reductions whatever is declared", () => {
  const got = rollUp([A, B], { loss: "max", throughput: "mean", acc: "min", lr: "last" });
  // loss: (1·2 + 3·6) / 8 = 2.5; throughput 10+30; share .25+.75; starve max(3,5); compute max(7,4)
  assertEquals(got, {
    loss: 2.5,
    throughput: 40,
    batch_share: 1,
    data_starve: 5,
    compute_only_ms: 7,
    acc: 0.5,
    lr: 0.2,
  });
  assertEquals(CORE_REDUCTIONS, {
    throughput: "sum",
    batch_share: "sum",
    loss: "mean",
    data_starve: "max",
    compute_only_ms: "max",
  });
  assertEquals(reductionFor("loss", { loss: "max" }), "mean");
  assertEquals(reductionFor("user", {}), "mean");
});

Deno.test("rollUp: each user reduction, keys only over the children that report them", () => {
  const kids: RollUpChild[] = [
    { work: 1, values: { s: 2, x: 4 } },
    { work: 3, values: { s: 5 } },
    { work: 2, values: { s: -1, z: 9 } },
  ];
  assertEquals(rollUp(kids, { s: "sum" }).s, 6);
  assertEquals(rollUp(kids, { s: "max" }).s, 5);
  assertEquals(rollUp(kids, { s: "min" }).s, -1);
  assertEquals(rollUp(kids, { s: "last" }).s, 5); // work 3 is the highest
  assertEquals(rollUp(kids).s, (2 * 1 + 5 * 3 - 1 * 2) / 6); // 15/6 = 2.5
  assertEquals(rollUp(kids).x, 4); // only the first child reports x
  assertEquals(rollUp(kids, { z: "sum" }).z, 9);
  assert(!("w" in rollUp(kids)), "a key no child reports is absent");
});

Deno.test("rollUp: Mean is absent when Σ work <= 0; Last takes the first child on a work tie", () => {
  const got = rollUp([{ work: 0, values: { loss: 1, m: 3 } }, { work: 0, values: { loss: 2 } }], { m: "sum" });
  assert(!("loss" in got), `loss should be absent, got ${JSON.stringify(got)}`);
  assertEquals(got.m, 3);
  assertEquals(rollUp([{ work: 3, values: { k: 7 } }, { work: 3, values: { k: 8 } }], { k: "last" }).k, 7);
  assertEquals(rollUp([]), {});
});

Deno.test("rollUp: NaN from a child that did work propagates; a zero-work child's NaN is ignored", () => {
  assert(Number.isNaN(rollUp([{ work: 1, values: { loss: NaN } }, { work: 2, values: { loss: 1 } }]).loss));
  assert(
    Number.isNaN(
      rollUp([{ work: 1, values: { data_starve: NaN } }, { work: 2, values: { data_starve: 1 } }]).data_starve,
    ),
  );
  assertEquals(rollUp([{ work: 0, values: { loss: NaN } }, { work: 2, values: { loss: 1.5 } }]).loss, 1.5);
});
