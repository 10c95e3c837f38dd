/**
 * Run a relay of a NATS run: on the host of the ranks it sums, with the token
 * the coordinator printed for it. It needs no GPU and no program.
 *
 *   deno run -A --no-check scripts/relay.ts <relay token>
 *
 * Exit code 0 when the run ended (the coordinator's bye), 1 when it never served (refused at
 * join, no answer), 2 for a bad token; each failure is one line on stderr.
 */
import { joinRelay } from "../src/index.ts";

if (!Deno.args[0]) {
  console.error("usage: deno run -A scripts/relay.ts <relay token>");
  Deno.exit(2);
}
let relay: ReturnType<typeof joinRelay>;
try {
  relay = joinRelay(Deno.args[0], { log: (line) => console.log(line) });
} catch (e) {
  console.error(`scripts/relay.ts: ${(e as Error).message}`); // a bad token: one line, exit 2
  Deno.exit(2);
}
relay.done.then(
  () => Deno.exit(0),
  (e) => {
    console.error(`scripts/relay.ts: ${(e as Error)?.message ?? e}`); // names the slot already
    Deno.exit(1);
  },
);
