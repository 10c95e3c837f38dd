/**
 * A remote rank's network blinks (issue 27): its link to NATS goes through a proxy
 * (test/util/cut_proxy.ts) that, mid-epoch, first resets its connections and keeps the link
 * down for 4 s (a Wi-Fi drop: the rank reconnects), then black-holes it for 4 s (bytes wait,
 * connections stay). Both are within the grace, so the links resume where they stopped
 * (nats/README.md "Liveness"): no rank lost, every sample trained exactly once, the rank
 * there to the end. One local worker rank and one remote rank process over a real
 * nats-server. With cpu-sync and an f32 wire a cut run ends with the very bytes of an
 * uninterrupted one: nothing was lost, repeated or reordered on the way. bench/fault_soak.ts
 * draws these faults at random, many runs in a row.
 */
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { flatParams } from "../../util/flat_params.ts";
import { within } from "../../util/processes.ts";
import { proxiedRun } from "../../util/proxied_remote.ts";

/** Far above a 2000-sample epoch here, so only a hang reaches it. */
const RUN_BOUND_MS = 240_000;
const DOWN_MS = 4000;

gpuTest("a remote rank's link reset and down 4 s, then black-holed 4 s, mid-epoch: it resumes, no rank lost, every sample once", async () => {
  const faults: Promise<void>[] = [];
  let afterCut = -1, last = 0;
  // A grace of 20 s (reconnectGraceSecs, the rank's too): a 4 s outage is well inside it.
  const r = await proxiedRun(20, (n) => {
    last = n;
    if (n === 3) faults.push(r.proxy.cut(DOWN_MS).then(() => void (afterCut = last)));
    if (afterCut > 0 && n === afterCut + 3) faults.push(r.proxy.hold(DOWN_MS));
  });
  try {
    const h = await r.builder.run();
    await within(h.join(), RUN_BOUND_MS, "the run's end after the link was cut");
    await Promise.all(faults);
    assertEquals(faults.length, 2, "both faults fired mid-epoch");
    assert(r.proxy.accepted >= 2, `the rank reconnected after the reset (connections through the proxy: ${r.proxy.accepted})`);
    assertEquals(r.lost, [], "no rank lost");
    r.ledger.exactlyOnce("a link cut and held mid-epoch");
    const acc = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
    assert(acc !== undefined && acc > 0.5, `accuracy after the cuts ${acc}`);
    const own = await r.stop();
    const log = await r.procs[0].output;
    assert(own && /the coordinator ended the run/.test(log), `the rank stayed to the end and stopped on its own:\n${log}`);
  } finally {
    await r.stop(0);
  }
});

gpuTest("cpu-sync, f32 wire: a run whose remote rank's link is reset mid-epoch ends with the uninterrupted run's consensus, byte for byte", async () => {
  const once = async (cutAt?: number) => {
    const faults: Promise<void>[] = [];
    const r = await proxiedRun(20, (n) => void (n === cutAt && faults.push(r.proxy.cut(DOWN_MS))), { sync: true });
    try {
      const h = await r.builder.run();
      const params = flatParams(await within(h.join(), RUN_BOUND_MS, "the run's end"));
      await Promise.all(faults);
      assertEquals(faults.length, cutAt === undefined ? 0 : 1, "the cut fired mid-epoch");
      assertEquals(r.lost, [], "no rank lost");
      return { params, accepted: r.proxy.accepted, counts: r.ledger.counts[0] };
    } finally {
      await r.stop();
    }
  };
  const plain = await once(), cut = await once(10);
  // Sync splits each epoch's samples in equal plans and runs only whole batches of each (flodl's
  // rule), so 8 samples of each rank's 1000 are left out in both runs alike: the same ledger.
  assertEquals([...cut.counts], [...plain.counts], "the samples trained, as in the uninterrupted run");
  assert(plain.counts.every((n) => n <= 1), "no sample trained twice");
  assert(cut.accepted >= 2, `the rank reconnected after the reset (connections through the proxy: ${cut.accepted})`);
  const differ = plain.params.findIndex((v, i) => !Object.is(v, cut.params[i]));
  assertEquals(cut.params.length, plain.params.length, "parameter count");
  assertEquals(differ, -1, `consensus bytes after the cut: first difference at value ${differ} (${plain.params[differ]} vs ${cut.params[differ]})`);
});
