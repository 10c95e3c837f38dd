/**
 * A remote rank's network blinks (issue 27): its link to NATS goes through a proxy
 * (test/util/cut_proxy.ts) that, mid-epoch, first resets its connections and keeps the link
 * down for 4 s (a Wi-Fi drop: the rank reconnects), then black-holes it for 4 s (bytes wait,
 * connections stay). Both are within the grace, so the links resume where they stopped
 * (nats/README.md "Liveness"): no rank lost, every sample trained exactly once, the rank
 * there to the end. One run, one local worker rank and one remote rank process over a real
 * nats-server. bench/fault_soak.ts draws these faults at random, many runs in a row.
 */
import { assert, assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { within } from "../../util/processes.ts";
import { proxiedRun } from "../../util/proxied_remote.ts";

/** Far above a 2000-sample epoch here, so only a hang reaches it. */
const RUN_BOUND_MS = 240_000;
const DOWN_MS = 4000;

gpuTest("a remote rank's link reset and down 4 s, then black-holed 4 s, mid-epoch: it resumes, no rank lost, every sample once", async () => {
  const faults: Promise<void>[] = [];
  let afterCut = -1, last = 0;
  // heartbeatTimeoutSecs 20 (the rank's beaconLossMs is 30 s): a 4 s outage is well inside both.
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
