/**
 * The module a walk-in's printed command runs (`deno run --allow-net=<host:ports> <URL of
 * this module> <join token>`), served by the coordinator (walk_in_server.ts) as built
 * JavaScript. It imports nothing at run time (walk_in_check.ts is built in): it fetches the
 * run's bundle and data packs from the folder it was served from, checks each one's sha256
 * against the join token's, claims the token's slot (once per slot: a second process, or a
 * tab, on the same slot is refused), and only then leaves the packs on `globalThis`
 * (walk_in_data.ts) and imports the bundle from those very bytes (a Blob URL, so nothing is
 * fetched twice and nothing unchecked runs). A token that does not decode, or carries no
 * walk-in fields, is one line and exit 2; a slot already taken, or a file that cannot be
 * fetched or whose sha256 differs, is one line naming it and exit 1.
 */
import { claimSlot, fetchChecked, walkInOf, WalkInRefusal } from "./walk_in_check.ts";

const started = performance.now();
const deno = (globalThis as unknown as {
  Deno: { args: string[]; exit(code: number): never };
}).Deno;

try {
  const token = deno.args[0];
  const walk =
    walkInOf(token, "run the command as the coordinator printed it (deno run --allow-net=… <URL> <token>)").fields;
  const names = Object.keys(walk.packs);
  const [bundle, ...packs] = await Promise.all([
    fetchChecked(import.meta.url, "bundle", "bundle.js", walk.bundle),
    ...names.map((n) => fetchChecked(import.meta.url, `${n} pack`, `${n}.pack`, walk.packs[n])),
  ]);
  // Claimed once checked: a tampered file does not use up the slot.
  await claimSlot(import.meta.url, walk.ticket);
  const bytes = bundle.length + packs.reduce((a, p) => a + p.length, 0);
  (globalThis as { [k: symbol]: unknown })[Symbol.for("flodl-webgpu.walkIn")] = {
    token,
    packs: Object.fromEntries(names.map((n, i) => [n, packs[i]])),
    started,
    bytes,
  };
  console.log(
    `walk-in: bundle and ${names.join(", ")} data checked (sha256), ${bytes} bytes in ${
      Math.round(performance.now() - started)
    } ms`,
  );
  await import(URL.createObjectURL(new Blob([bundle], { type: "text/javascript" })));
} catch (e) {
  if (!(e instanceof WalkInRefusal)) throw e;
  console.error(`walk-in: ${e.message}`);
  deno.exit(e.code);
}
