import { describeOuter, DiLoCo, OuterAvg, outerFromSpec, type OuterOptimizer, OuterStepper, SlowMo } from "../../../src/distributed/protocol/outer.ts";
import { assert, assertEquals, assertRelClose, assertThrows } from "../../util/assert.ts";
import { mulberry32, randn } from "../../util/random.ts";
import { ArrayDataSet, AverageBackend, ElCheConfig, SGD, Trainer, Variable } from "../../../src/index.ts";
import type { Module } from "../../../src/nn/mod.ts";
import { BundleWriter, loadResume } from "../../../src/distributed/coordinator/persistence/persistence.ts";
import { readBundleOuter } from "../../../src/distributed/coordinator/persistence/bundle.ts";
import { resolveConfig } from "../../../src/distributed/run/validate_config.ts";
import { FsStorage } from "../../../src/io/mod.ts";
import { simulate } from "../../util/fake_ranks.ts";

/** f64 reference of the outer loop: prev = first consensus, then v = μv + g, new = prev − lr·dir. */
function reference(cons: Float32Array[], lr: number, mu: number, nesterov: boolean): Float64Array[] {
  let prev = Float64Array.from(cons[0]);
  const v = new Float64Array(prev.length);
  const out: Float64Array[] = [];
  for (const c of cons) {
    const next = new Float64Array(prev.length);
    for (let i = 0; i < next.length; i++) {
      const g = prev[i] - c[i];
      v[i] = mu * v[i] + g;
      next[i] = prev[i] - lr * (nesterov ? mu * v[i] + g : v[i]);
    }
    out.push(next);
    prev = next;
  }
  return out;
}

function run(opt: SlowMo | DiLoCo, cons: Float32Array[]): Float32Array[] {
  const s = new OuterStepper(opt);
  return cons.map((c) => s.apply(c)!);
}

const rng = mulberry32(21);
const cons = [0, 1, 2, 3].map(() => randn(33, rng));

Deno.test("SlowMo: first window is a no-op, then v = μv + g, new = prev − lr·v", () => {
  const got = run(new SlowMo({ lr: 0.7, momentum: 0.9 }), cons);
  const want = reference(cons, 0.7, 0.9, false);
  assertEquals([...got[0]], [...cons[0]]);
  got.forEach((g, k) => assertRelClose(g, want[k], 1e-5, `window ${k}`));
  // lr 1, μ 0: new = prev − (prev − consensus) = consensus.
  const plain = run(new SlowMo({ lr: 1, momentum: 0 }), cons);
  assertRelClose(plain[2], cons[2], 1e-6, "lr 1, μ 0 is plain averaging");
});

Deno.test("DiLoCo: Nesterov new = prev − lr·(μv + g) and resets the inner optimizer", () => {
  const opt = new DiLoCo({ lr: 0.7, momentum: 0.9 });
  assertEquals(opt.resetsInner, true);
  const got = run(opt, cons);
  const want = reference(cons, 0.7, 0.9, true);
  got.forEach((g, k) => assertRelClose(g, want[k], 1e-5, `window ${k}`));
  const slow = run(new SlowMo({ lr: 0.7, momentum: 0.9 }), cons);
  assert(slow[2].some((x, i) => x !== got[2][i]), "Nesterov differs from heavy-ball");
  assertEquals(new SlowMo({ lr: 1, momentum: 0.9 }).resetsInner, false);
});

Deno.test("OuterStepper passes zero-mass rounds through without stepping", () => {
  const s = new OuterStepper(new SlowMo({ lr: 0.7, momentum: 0.9 }));
  s.apply(cons[0]);
  assertEquals(s.apply(null), null);
  const after = s.apply(cons[1])!;
  assertRelClose(after, reference(cons.slice(0, 2), 0.7, 0.9, false)[1], 1e-5, "null round skipped");
  // Without momentum, a re-anchored window (resume: prev_global is not saved) returns its consensus.
  const r = new OuterStepper(new SlowMo({ lr: 0.7, momentum: 0 }));
  r.apply(cons[0]);
  r.apply(cons[1]);
  r.reanchor();
  assertEquals([...r.apply(cons[3])!], [...cons[3]]);
});

Deno.test("OuterAvg is the identity and stateless", () => {
  const o = new OuterAvg();
  assert(o.step(cons[0], cons[1]) === cons[1], "returns the consensus");
  assertEquals(o.state(), null);
  assertEquals(new OuterStepper(o).apply(cons[2]), cons[2]);
});

Deno.test("momentum state round-trips through state()/loadState()", () => {
  const a = new SlowMo({ lr: 0.5, momentum: 0.8 });
  assertEquals(a.state(), null);
  a.step(cons[0], cons[1]);
  const saved = a.state()!;
  const b = new SlowMo({ lr: 0.5, momentum: 0.8 });
  b.loadState(saved);
  assertEquals([...b.step(cons[1], cons[2])], [...a.step(cons[1], cons[2])]);
  const c = new SlowMo({ lr: 0.5, momentum: 0.8 });
  c.loadState(new Float32Array(3));
  assertThrows(() => c.step(cons[0], cons[1]), RangeError, "momentum has 3 elements", "33");
});

Deno.test("outer optimizers reject bad hyperparameters and mismatched lengths", () => {
  assertThrows(() => new SlowMo({ lr: 0, momentum: 0.9 }), RangeError, "SlowMo", "lr", "got 0");
  assertThrows(() => new DiLoCo({ lr: 0.7, momentum: 1 }), RangeError, "DiLoCo", "momentum", "got 1");
  assertThrows(() => new OuterAvg().step(cons[0], cons[1].subarray(2)), RangeError, "33", "31");
});

Deno.test("describeOuter/outerFromSpec: a rank's replica (nccl-*) steps bit-identically to the coordinator's; other classes are not described", () => {
  const rng = mulberry32(9);
  const cons = Array.from({ length: 5 }, () => randn(33, rng));
  for (const make of [() => new SlowMo({ lr: 0.9, momentum: 0.8 }), () => new DiLoCo({ lr: 0.7, momentum: 0.5 }), () => new OuterAvg()]) {
    const here = new OuterStepper(make());
    const spec = describeOuter(here.optimizer)!;
    assertEquals(spec.name, here.optimizer.name);
    // A structured clone, as the spec crosses to a worker.
    const there = new OuterStepper(outerFromSpec(structuredClone(spec)));
    for (const c of cons) assertEquals([...there.apply(c)!], [...here.apply(c)!], `${spec.name}: replica vs coordinator`);
  }
  class Sub extends DiLoCo {}
  const custom: OuterOptimizer = { name: "Mine", resetsInner: false, step: (_p, c) => c, state: () => null, loadState() {} };
  assertEquals(describeOuter(new Sub({ lr: 1, momentum: 0 })), undefined, "a subclass may step differently");
  assertEquals(describeOuter(custom), undefined, "a custom outer optimizer");
  assertThrows(() => outerFromSpec({ name: "Adam" as "SlowMo" }), RangeError, "Adam");
  assertThrows(() => outerFromSpec({ name: "DiLoCo", lr: -1, momentum: 0.5 }), RangeError, "lr");
});

Deno.test("resume restores the outer momentum from <stem>.outer.fdl: the first round after resumeFrom steps with it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "outer_resume_" });
  const stem = `${dir}/ckpt`;
  const lr = 0.5, mu = 0.9;
  const program = (epochs: number) =>
    Trainer.builder(
      () => ({}) as unknown as Module,
      (params) => new SGD(params, { lr: 0.1 }),
      () => undefined as unknown as Variable,
    ).dataset(new ArrayDataSet([{ data: new Float32Array(64), shape: [64, 1] }]))
      .batchSize(4).numEpochs(epochs).outerOptimizer(() => new SlowMo({ lr, momentum: mu }))
      .elche(ElCheConfig.cpuSync());
  const scripts = () => [0, 1].map(() => ({ batchMs: () => 10 }));
  try {
    // A first run of 1 epoch checkpoints at its end: the bundle holds SlowMo's momentum
    // (non-zero: the fake ranks' parameters move every round). realWaitMs: the bundle's file
    // writes are real I/O, off the virtual clock.
    const first = program(1).savePath(stem).checkpointEvery(1);
    const writer = new BundleWriter(stem);
    const a = await simulate(first, scripts(), {}, { persistence: { writer }, realWaitMs: 10_000 });
    await writer.flush();
    assertEquals(a.error, undefined, "first run");
    const saved = await readBundleOuter(new FsStorage(dir), "ckpt");
    assert(saved !== null && saved.flat.some((x) => x !== 0), "the bundle holds non-zero outer momentum");
    const v = saved!.flat;

    // Resume for epoch 2 twice, with and without the momentum file: the first adopted consensus
    // c' = prev − lr·(μ·v + 0) with the momentum (the window re-anchors: prev = c, g = 0), c without.
    const resumed = async (keepMomentum: boolean) => {
      if (!keepMomentum) await Deno.remove(`${stem}.outer.fdl`);
      const b = program(2).resumeFrom(stem);
      const cfg = resolveConfig(b.state.config, { worldSize: 2, datasetLen: 64 });
      const seed = await loadResume(stem, cfg, 2);
      assertEquals(seed.outer !== undefined, keepMomentum, "seed.outer read from the bundle");
      const out = await simulate(b, scripts(), {}, { persistence: { resume: seed }, realWaitMs: 10_000 });
      assertEquals(out.error, undefined, "resumed run");
      return out.ranks[0].adopted[0] as Float32Array;
    };
    // nccl-*: the ranks step replicas; each gets the momentum with its first collective.
    const b = program(2).resumeFrom(stem).backend(AverageBackend.Nccl);
    const seed = await loadResume(stem, resolveConfig(b.state.config, { worldSize: 2, datasetLen: 64 }), 2);
    const nccl = await simulate(b, scripts(), {}, { persistence: { resume: seed }, realWaitMs: 10_000 });
    assertEquals(nccl.error, undefined, "resumed nccl run");
    for (const r of nccl.ranks) {
      const states = r.collectives.map((c) => c.outer?.state);
      assert(states.length > 1, `rank ${r.rank}: collectives`);
      assertEquals([...states[0]!], [...v], `rank ${r.rank}: the first collective carries the momentum`);
      assertEquals(states.slice(1).filter(Boolean).length, 0, `rank ${r.rank}: later collectives carry none`);
    }
    // A replica built from it steps as the coordinator's restored copy does.
    const spec = nccl.ranks[0].collectives[0].outer!;
    const copy = new SlowMo({ lr, momentum: mu });
    copy.loadState(v);
    const c0 = randn(v.length, mulberry32(3)), c1 = randn(v.length, mulberry32(4));
    assertEquals([...run(outerFromSpec(spec) as SlowMo, [c0, c1])[1]], [...run(copy, [c0, c1])[1]], "replica vs copy");

    const withV = await resumed(true), withoutV = await resumed(false);
    const want = Float64Array.from(withoutV, (c, i) => c - lr * mu * v[i]);
    assertRelClose(withV, want, 1e-6, "first adoption after resume: c − lr·μ·v");
    assert(withV.some((x, i) => x !== withoutV[i]), "the momentum changed the step");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
