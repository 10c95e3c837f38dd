/**
 * The coordinator's HTTP side for walk-in ranks: a `Deno.serve` on the NATS server's host
 * and a free port, serving only the run's files under a per-run access key,
 * `http://host:port/<key>/`: the loader (`walk_in.js`, the URL the printed command runs),
 * the bundle (`bundle.js`: rank runtime + program + imports) and the data packs
 * (`<name>.pack`, HEAD and `Range` answered, so a page can read them with `openRangedUrl`).
 * Nothing else: a path is looked up by its exact name in that table; one with `..`, a
 * backslash or any percent-encoding is refused (400), a wrong or missing key too (403), each
 * with one line, and `onRefused` is told. A join page for browser tabs is one more table
 * entry (its HTML, a browser bundle) and `Deno.serve`'s `cert`/`key` for https.
 */
import { decodeJoinToken, encodeJoinToken } from "../nats/mod.ts";

/** The files of a run's walk-ins (built JavaScript and packs). */
export interface WalkInFiles {
  /** The loader module (walk_in_loader.ts built). */
  loader: Uint8Array;
  /** The bundle (walk_in_entry.ts with the program, built). */
  bundle: Uint8Array;
  /** Data packs by name (`train`, `test`): `packBytes` of the datasets. */
  packs: Record<string, Uint8Array>;
}

/** What a walk-in's join token carries beyond a rank's: the sha256 (hex) of every file it runs or reads. */
export interface WalkInDigests {
  /** The bundle's sha256. */
  bundle: string;
  /** Each pack's sha256 by name. */
  packs: Record<string, string>;
}

/** Options of {@link serveWalkIn}. */
export interface WalkInServeOptions {
  /** Address to listen on (the NATS server's: `127.0.0.1`, `0.0.0.0`, an interface's). */
  hostname: string;
  /** How ranks reach it (default: `hostname`; a host name when listening on every interface). */
  advertise?: string;
  /** Port (default 0: a free one). */
  port?: number;
  /** A request refused (wrong key, a path outside the run's files), as one line. */
  onRefused?: (line: string) => void;
}

/** A running walk-in server. */
export interface WalkInServer {
  /** `host:port` ranks reach it at (for `--allow-net`). */
  readonly hostPort: string;
  /** The loader's URL: what the printed command runs. */
  readonly url: string;
  /** The sha256 of the bundle and of each pack. */
  readonly digests: WalkInDigests;
  /** A rank's join token with the walk-in digests added. */
  token(joinToken: string): string;
  /** The command a walk-in runs for `joinToken`: `deno run --allow-net=<this, the NATS host:port> <url> <token>`. */
  command(joinToken: string): string;
  /** Stop serving. */
  close(): Promise<void>;
}

/** The one Deno call the server needs (typed here so browser type-checks need no Deno types). */
interface DenoServe {
  serve(
    opts: { hostname: string; port: number; onListen: () => void },
    handler: (req: Request) => Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void> };
}

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", pack: "application/octet-stream" };

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes.slice()));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One line refused, as the response body and the `onRefused` line. */
function refuse(status: number, line: string, tell?: (line: string) => void): Response {
  tell?.(line);
  return new Response(`flodl walk-in: ${line}\n`, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}

/**
 * The request handler over a table of files (name → bytes) under `/<key>/` (see the module comment).
 * @example
 * ```ts
 * import { walkInHandler } from "./walk_in_server.ts";
 * const h = walkInHandler("k3y", new Map([["walk_in.js", new TextEncoder().encode("1")]]));
 * if ((await h(new Request("http://h/k3y/walk_in.js"))).status !== 200) throw new Error("not served");
 * if ((await h(new Request("http://h/nope/walk_in.js"))).status !== 403) throw new Error("wrong key served");
 * ```
 */
export function walkInHandler(key: string, files: Map<string, Uint8Array>, tell?: (line: string) => void): (req: Request) => Promise<Response> {
  return (req) => {
    const raw = /^[a-z]+:\/\/[^/]*(\/[^?#]*)/i.exec(req.url)?.[1] ?? "/";
    if (req.method !== "GET" && req.method !== "HEAD") return Promise.resolve(refuse(405, `${req.method} ${raw}: only GET and HEAD`, tell));
    if (/%|\.\.|\\/.test(raw)) return Promise.resolve(refuse(400, `${raw}: refused (traversal or an encoded path: only the run's own file names are served)`, tell));
    const [, k, name, more] = raw.split("/");
    if (k !== key) return Promise.resolve(refuse(403, `${raw}: wrong or missing access key: run the command the coordinator printed, copied whole`, tell));
    const bytes = more === undefined ? files.get(name ?? "") : undefined;
    if (!bytes) return Promise.resolve(refuse(404, `${raw}: not one of this run's files (${[...files.keys()].join(", ")})`, tell));
    const headers = new Headers({
      "content-type": TYPES[name.split(".").pop()!] ?? "application/octet-stream",
      "accept-ranges": "bytes",
      "cache-control": "no-store",
    });
    const range = req.headers.get("range");
    if (range !== null) {
      const m = /^bytes=(\d+)-(\d*)$/.exec(range.trim());
      const first = m ? Number(m[1]) : NaN, last = m && m[2] !== "" ? Math.min(Number(m[2]), bytes.length - 1) : bytes.length - 1;
      if (!m || first > last || first >= bytes.length) {
        headers.set("content-range", `bytes */${bytes.length}`);
        return Promise.resolve(new Response(null, { status: 416, headers }));
      }
      headers.set("content-range", `bytes ${first}-${last}/${bytes.length}`);
      headers.set("content-length", String(last - first + 1));
      return Promise.resolve(new Response(req.method === "HEAD" ? null : bytes.slice(first, last + 1), { status: 206, headers }));
    }
    headers.set("content-length", String(bytes.length));
    return Promise.resolve(new Response(req.method === "HEAD" ? null : bytes.slice(), { status: 200, headers }));
  };
}

/**
 * Serve a run's walk-in files (see the module comment).
 * @throws {Error} When the address cannot be listened on (naming it).
 */
export async function serveWalkIn(files: WalkInFiles, opts: WalkInServeOptions): Promise<WalkInServer> {
  for (const name of Object.keys(files.packs)) {
    if (!/^[a-z0-9_-]{1,32}$/.test(name)) throw new RangeError(`serveWalkIn: pack name must be 1-32 of [a-z0-9_-], got ${JSON.stringify(name)}`);
  }
  const key = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  const table = new Map<string, Uint8Array>([["walk_in.js", files.loader], ["bundle.js", files.bundle]]);
  for (const [name, bytes] of Object.entries(files.packs)) table.set(`${name}.pack`, bytes);
  const digests: WalkInDigests = { bundle: await sha256(files.bundle), packs: {} };
  for (const [name, bytes] of Object.entries(files.packs)) digests.packs[name] = await sha256(bytes);
  const deno = (globalThis as unknown as { Deno?: DenoServe }).Deno;
  if (!deno) throw new Error("serveWalkIn: needs Deno (Deno.serve); a browser cannot serve walk-ins");
  let server: ReturnType<DenoServe["serve"]>;
  try {
    server = deno.serve({ hostname: opts.hostname, port: opts.port ?? 0, onListen: () => {} }, walkInHandler(key, table, opts.onRefused));
  } catch (e) {
    throw new Error(`serveWalkIn: cannot listen on ${opts.hostname}:${opts.port ?? 0}: ${(e as Error).message}`, { cause: e });
  }
  const host = opts.advertise ?? opts.hostname;
  const hostPort = `${host.includes(":") ? `[${host}]` : host}:${server.addr.port}`;
  const url = `http://${hostPort}/${key}/walk_in.js`;
  const token = (joinToken: string) => {
    const { url: nats, ...rest } = decodeJoinToken(joinToken);
    return encodeJoinToken(nats, { ...rest, walkIn: digests } as typeof rest);
  };
  return {
    hostPort,
    url,
    digests,
    token,
    command(joinToken) {
      const nats = new URL(decodeJoinToken(joinToken).url).host;
      return `deno run --allow-net=${hostPort},${nats} ${url} ${token(joinToken)}`;
    },
    close: () => server.shutdown(),
  };
}
