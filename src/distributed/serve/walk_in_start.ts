/**
 * A walk-in rank's first module in its bundle: with the loader's record on `globalThis`
 * (walk_in_data.ts), join the run with the token it checked. The bundle's URL is the entry,
 * the builder is found by its ordinal (`joinRun`'s `bundled`). Prints one line when it
 * reaches its first step (the time since the command started and the bytes fetched), and exits when
 * the run ends (0) or the rank never served (one line, 1).
 */
import { joinRun } from "../run/join.ts";
import { walkInGlobal } from "./walk_in_data.ts";

const deno = (globalThis as unknown as { Deno?: { exit(code: number): never } }).Deno;
const w = walkInGlobal();
if (w && deno) {
  let first = true;
  const fail = (e: unknown) => {
    console.error(`walk-in: ${(e as Error).message ?? e}`);
    deno.exit(1);
  };
  try {
    const rank = joinRun(w.token, {
      entry: import.meta.url,
      bundled: true,
      host: "",
      log: (line) => console.log(line),
      onEvent: (e) => {
        if (!first || e.kind !== "batch") return;
        first = false;
        // performance.now() counts from the process's start: the command's own time.
        console.log(`walk-in: first step after ${Math.round(performance.now())} ms (${w.bytes} bytes fetched)`);
      },
    });
    rank.done.then(() => deno.exit(0), fail);
  } catch (e) {
    fail(e);
  }
}
