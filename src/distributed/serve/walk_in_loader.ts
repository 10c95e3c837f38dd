/**
 * The module a walk-in's printed command runs (`deno run --allow-net=<host:ports> <URL of
 * this module> <join token>`), served by the coordinator (walk_in_server.ts) as built
 * JavaScript. It imports nothing: it fetches the run's bundle and data packs from the folder
 * it was served from, checks each one's sha256 against the join token's, and only then
 * leaves the packs on `globalThis` (walk_in_data.ts) and imports the bundle from those very
 * bytes (a Blob URL, so nothing is fetched twice and nothing unchecked runs). A token that
 * does not decode, or carries no walk-in fields, is one line and exit 2; a file that cannot
 * be fetched or whose sha256 differs is one line naming it and exit 1.
 */
export {};

const started = performance.now();
const deno = (globalThis as unknown as {
  Deno: { args: string[]; exit(code: number): never };
}).Deno;

function fail(code: number, line: string): never {
  console.error(`walk-in: ${line}`);
  return deno.exit(code);
}

interface WalkIn {
  bundle: string;
  packs: Record<string, string>;
}

/** The walk-in fields of a join token (base64url of JSON), or a one-line exit. */
function walkInOf(token: string | undefined): WalkIn {
  if (!token) fail(2, "no join token: run the command as the coordinator printed it (deno run --allow-net=… <URL> <token>)");
  const named = `the join token "${token.slice(0, 12)}…" (${token.length} characters)`;
  let v: { walkIn?: Partial<WalkIn> };
  try {
    const b64 = token.replaceAll("-", "+").replaceAll("_", "/");
    v = JSON.parse(atob(b64 + "=".repeat((4 - b64.length % 4) % 4)));
  } catch {
    fail(2, `${named} does not decode (cut short when copied?): copy it whole`);
  }
  const w = v?.walkIn;
  const hex = (s: unknown) => typeof s === "string" && /^[0-9a-f]{64}$/.test(s);
  if (!w || !hex(w.bundle) || !w.packs || !Object.values(w.packs).every(hex)) {
    fail(2, `${named} has no walk-in fields (bundle and packs sha256): it is for a checkout's --join, not for this command`);
  }
  return w as WalkIn;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One file of the run, fetched whole and checked against its sha256. */
async function fetchChecked(item: string, file: string, want: string): Promise<Uint8Array<ArrayBuffer>> {
  const url = new URL(file, import.meta.url);
  let res: Response;
  try {
    res = await fetch(url);
  } catch (e) {
    fail(1, `cannot fetch the ${item} ${url.href}: ${(e as Error).message}`);
  }
  if (!res.ok) fail(1, `the ${item} ${url.href}: HTTP ${res.status}: ${(await res.text()).trim()}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  const got = await sha256(bytes);
  if (got !== want) {
    fail(1, `the ${item} ${url.href} has sha256 ${got}, the join token says ${want}: refused (a tampered or stale file); nothing was run`);
  }
  return bytes;
}

const token = deno.args[0];
const walk = walkInOf(token);
const names = Object.keys(walk.packs);
const [bundle, ...packs] = await Promise.all([
  fetchChecked("bundle", "bundle.js", walk.bundle),
  ...names.map((n) => fetchChecked(`${n} pack`, `${n}.pack`, walk.packs[n])),
]);
const bytes = bundle.length + packs.reduce((a, p) => a + p.length, 0);
(globalThis as { [k: symbol]: unknown })[Symbol.for("flodl-webgpu.walkIn")] = {
  token,
  packs: Object.fromEntries(names.map((n, i) => [n, packs[i]])),
  started,
  bytes,
};
console.log(`walk-in: bundle and ${names.join(", ")} data checked (sha256), ${bytes} bytes in ${Math.round(performance.now() - started)} ms`);
await import(URL.createObjectURL(new Blob([bundle], { type: "text/javascript" })));
