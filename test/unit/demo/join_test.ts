/** The demo page's "Join a run" helpers (demo/join.ts): the program module a link may name, and the status line. */
import { idleJoin, joinText, programUrl } from "../../../demo/join.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("demo join: ?program= is a .ts path on the page's server (default npm start's program); anything else is named", () => {
  const origin = "http://localhost:5173";
  assertEquals(programUrl(null, origin).href, "http://localhost:5173/examples/program.ts");
  assertEquals(programUrl("/demo/programs/lenet.ts", origin).href, "http://localhost:5173/demo/programs/lenet.ts");
  for (const bad of ["https://evil.example/x.ts", "//evil.example/x.ts", "/examples/../x.ts", "/x.js", "examples/program.ts"]) {
    assertThrows(() => programUrl(bad, origin), RangeError, "?program=", ".ts", JSON.stringify(bad));
  }
});

Deno.test("demo join: the status line names the rank, its steps and why it stopped", () => {
  const s = idleJoin();
  assertEquals(joinText(s).startsWith("Not joined."), true);
  Object.assign(s, { state: "training", rank: 2, run: "abc", steps: 7, samples: 168, epoch: 0, loss: 0.5 });
  assertEquals(joinText(s), "Rank 2 of run abc: training, epoch 1, 7 steps (168 samples), loss 0.5000.");
  Object.assign(s, { state: "stopped", reason: "rank 2: the coordinator ended the run (done)" });
  assertEquals(joinText(s), "Rank 2 left the run after 7 steps (168 samples): rank 2: the coordinator ended the run (done)");
});

Deno.test("demo join: a frozen tab says so, and once it runs again how long it was away (frozen, or stopped without a word)", () => {
  const s = idleJoin();
  Object.assign(s, { state: "training", rank: 1, run: "abc", steps: 7, samples: 168, epoch: 0, loss: 0.5, frozen: true });
  assertEquals(joinText(s), "Rank 1 of run abc: frozen by the browser after 7 steps; it goes on where it stopped if it is back within the run's grace.");
  Object.assign(s, { frozen: false, aways: 1, awayMs: 30_400, awayHow: "frozen", steps: 9, samples: 216 });
  assertEquals(joinText(s), "Rank 1 of run abc: training, epoch 1, 9 steps (216 samples), loss 0.5000. Back after 30 s frozen.");
  Object.assign(s, { aways: 2, awayMs: 12_600, awayHow: "without running" });
  assertEquals(joinText(s).endsWith("Back after 13 s without running (away 2 times)."), true);
  Object.assign(s, { state: "stopped", reason: "rank 1: the coordinator ended the run (done)" });
  assertEquals(joinText(s), "Rank 1 left the run after 9 steps (216 samples): rank 1: the coordinator ended the run (done)", "a stopped rank: why, not the freeze");
});

Deno.test("demo join: a rank dropped from the run says so while it asks back, and that it rejoined", () => {
  const s = idleJoin();
  Object.assign(s, { state: "rejoining", rank: 1, run: "abc", steps: 7, samples: 168, reason: "rank 1: the coordinator ended the run (dropped from the run: rejoin with the same token)" });
  assertEquals(joinText(s), "Rank 1 was dropped from run abc (rank 1: the coordinator ended the run (dropped from the run: rejoin with the same token)); saying hello again with the same token, to be taken back at the next epoch…");
  Object.assign(s, { state: "training", rejoins: 1, epoch: 1, steps: 9, samples: 216, loss: 0.25 });
  assertEquals(joinText(s), "Rank 1 of run abc: training, epoch 2, 9 steps (216 samples), loss 0.2500. Rejoined the run after being dropped.");
});
