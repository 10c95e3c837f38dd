/**
 * A walk-in rank's start: the first module of its bundle (src/walk_in_build.ts) calls
 * {@link startWalkIn}, before the program's module runs. With the loader's record on
 * `globalThis` (walk_in_data.ts), it joins the run with the token the loader checked. The
 * bundle's URL is the entry, the builder is found by its ordinal (`joinRun`'s `bundled`).
 * The same bundle runs in Deno (walk_in_loader.ts: prints one line at its first step, the time since the command started
 * and the bytes fetched, and exits when the run ends, 0, or when the rank never served, one
 * line, 1) and on a tab's join page (walk_in_page.ts: the page's hooks hear the rank).
 */
import { joinRun } from "../run/join.ts";
import { walkInGlobal } from "./walk_in_data.ts";

/**
 * Join the run as a walk-in rank, when this process (or page) is one: the walk-in loader
 * left its record on `globalThis`; elsewhere nothing happens. Called by a walk-in bundle's
 * first module with the bundle's own URL, before the program's module creates its builder.
 * @param entry The bundle's URL (`import.meta.url` of its first module).
 */
export function startWalkIn(entry: string): void {
  const deno = (globalThis as unknown as { Deno?: { exit(code: number): never } }).Deno;
  const w = walkInGlobal();
  if (w?.page) {
    const page = w.page;
    try {
      const nav = (globalThis as { navigator?: { platform?: string } }).navigator;
      const rank = joinRun(w.token, {
        entry,
        bundled: true,
        host: `walk-in tab on ${nav?.platform || "an unknown platform"}`,
        log: (line) => page.log(line),
        onEvent: (e) => page.event(e as Parameters<typeof page.event>[0]),
      });
      page.joining(rank.rank, rank.run);
      rank.done.then((why) => page.done(why, false), (e) => page.done((e as Error).message ?? String(e), true));
    } catch (e) {
      page.done((e as Error).message ?? String(e), true);
    }
  } else if (w && deno) {
    let first = true;
    const fail = (e: unknown) => {
      console.error(`walk-in: ${(e as Error).message ?? e}`);
      deno.exit(1);
    };
    try {
      const rank = joinRun(w.token, {
        entry,
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
}
