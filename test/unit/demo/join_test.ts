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
