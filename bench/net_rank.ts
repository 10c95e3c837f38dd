/**
 * A remote rank process for the network benches (bench/remote_ranks.ts, bench/slow_link.ts):
 * `deno run -A --no-check bench/net_rank.ts <token>` joins the run of bench/ddp_program.ts
 * (the trainer bench's MNIST MLP) and serves until it ends. Exit code 0 when the
 * coordinator ended the run, 1 when the rank never served.
 */
import { joinRun } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";

if (!Deno.args[0]) {
  console.error("bench/net_rank.ts: expects a join token as its one argument, got none");
  Deno.exit(2);
}
const rank = joinRun(Deno.args[0], { entry: new URL("./ddp_program.ts", import.meta.url), log: (l) => console.log(l) });
rank.done.then(
  () => exitNow(0), // Deno 2.9 on lavapipe may segfault tearing down a WebGPU device (examples/exit.ts)
  (e) => {
    console.error(`rank ${rank.rank}: ${e?.stack ?? e}`);
    exitNow(1);
  },
);
