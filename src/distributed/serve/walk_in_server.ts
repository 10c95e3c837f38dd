/**
 * The coordinator's HTTP side for walk-in ranks: a `Deno.serve` on the NATS server's host
 * and a free port, serving only the run's files under a per-run access key,
 * `http://host:port/<key>/`: the loader (`walk_in.js`, the URL the printed command runs),
 * the bundle (`bundle.js`: rank runtime + program + imports) and the data packs
 * (`<name>.pack`, HEAD and `Range` answered, so a page can read them with `openRangedUrl`).
 * Nothing else: a path is looked up by its exact name in that table; one with `..`, a
 * backslash or any percent-encoding is refused (400), a wrong or missing key too (403), each
 * with one line, and `onRefused` is told.
 *
 * Tabs (`tls` given, and the page's loader in the files): a second listener, https, serves
 * the same files plus, per slot, the join page `https://host:port/<key>/join/<ticket>`
 * (walk_in_page_html.ts: the slot's token inside the page, never in a URL) and the NATS
 * link `wss://host:port/<key>/nats` (walk_in_proxy.ts). Each slot's token carries a
 * one-use ticket: the first loader (tab or Deno) to `POST /<key>/claim/<ticket>` takes the
 * slot; any later claim, and any later open of the page, is refused (409) with one line.
 */
import { decodeJoinToken, encodeJoinToken, serversOf } from "../nats/mod.ts";
import { JOIN_PAGE_CSP, joinPageHtml } from "./walk_in_page_html.ts";
import { proxyWebSocket } from "./walk_in_proxy.ts";

/** The files of a run's walk-ins (built JavaScript and packs). */
export interface WalkInFiles {
  /** The loader module (walk_in_loader.ts built). */
  loader: Uint8Array;
  /** The bundle (the rank runtime with the program, built: `buildWalkIn`). */
  bundle: Uint8Array;
  /** Data packs by name (`train`, `test`): `packBytes` of the datasets. */
  packs: Record<string, Uint8Array>;
  /** The join page's loader (walk_in_page.ts built): with `tls`, tabs get links. */
  page?: Uint8Array;
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
  /** A request refused (wrong key, a path outside the run's files, a slot already taken), as one line. */
  onRefused?: (line: string) => void;
  /** Certificate and key (PEM; walk_in_tls.ts makes or reads them): an https listener for tabs. */
  tls?: { cert: string; key: string };
  /** The https listener's port (default 0: a free one). */
  tlsPort?: number;
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
  /** The command a walk-in runs for `joinToken`: `deno run --allow-net=<this, every NATS node's host:port> <url> <token>`. */
  command(joinToken: string): string;
  /** `host:port` of the https listener (with `tls`). */
  readonly httpsHostPort?: string;
  /** The slot's tab link, `https://host:port/<key>/join/<ticket>` (with `tls` and a page), else undefined. */
  link(joinToken: string): string | undefined;
  /** Stop serving. */
  close(): Promise<void>;
}

/** The one Deno call the server needs (typed here so browser type-checks need no Deno types). */
interface DenoServe {
  serve(
    opts: { hostname: string; port: number; onListen: () => void; cert?: string; key?: string },
    handler: (req: Request) => Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void> };
}

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", pack: "application/octet-stream" };

/** The per-slot routes beside the files: `claim/<ticket>` (POST), `join/<ticket>` (GET), `nats` (WebSocket). */
export interface WalkInRoutes {
  claim(ticket: string, req: Request): Response;
  join(ticket: string): Response;
  nats?(req: Request): Response;
}

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
export function walkInHandler(
  key: string,
  files: Map<string, Uint8Array>,
  tell?: (line: string) => void,
  routes?: WalkInRoutes,
): (req: Request) => Promise<Response> {
  return (req) => {
    const raw = /^[a-z]+:\/\/[^/]*(\/[^?#]*)/i.exec(req.url)?.[1] ?? "/";
    const claim = /^\/[^/]*\/claim\/[^/]+$/.test(raw);
    if (req.method !== "GET" && req.method !== "HEAD" && !(claim && req.method === "POST")) {
      return Promise.resolve(refuse(405, `${req.method} ${raw}: only GET and HEAD (POST for a claim)`, tell));
    }
    if (/%|\.\.|\\/.test(raw)) return Promise.resolve(refuse(400, `${raw}: refused (traversal or an encoded path: only the run's own file names are served)`, tell));
    const [, k, name, more, extra] = raw.split("/");
    if (k !== key) return Promise.resolve(refuse(403, `${raw}: wrong or missing access key: run the command the coordinator printed, copied whole`, tell));
    if (routes && extra === undefined && more !== undefined && (name === "claim" || name === "join")) {
      if (name === "claim" && req.method !== "POST") {
        return Promise.resolve(refuse(405, `${req.method} ${raw}: a claim is a POST`, tell));
      }
      return Promise.resolve(name === "claim" ? routes.claim(more, req) : routes.join(more));
    }
    if (routes?.nats && name === "nats" && more === undefined) {
      if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        return Promise.resolve(refuse(426, `${raw}: the NATS link is a WebSocket`, tell));
      }
      return Promise.resolve(routes.nats(req));
    }
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

/** A slot's one-use ticket: who took it and when, once claimed. */
interface Slot {
  rank: number;
  ticket: string;
  /** The tab's token (the NATS URL the https origin's proxy), once there is an https listener. */
  tabToken?: string;
  claimed?: string;
}

const hex = (n: number) => Array.from(crypto.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, "0")).join("");
const TEXT = { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" };

/**
 * Serve a run's walk-in files (see the module comment).
 * @throws {Error} When an address cannot be listened on (naming it).
 */
export async function serveWalkIn(files: WalkInFiles, opts: WalkInServeOptions): Promise<WalkInServer> {
  for (const name of Object.keys(files.packs)) {
    if (!/^[a-z0-9_-]{1,32}$/.test(name)) throw new RangeError(`serveWalkIn: pack name must be 1-32 of [a-z0-9_-], got ${JSON.stringify(name)}`);
  }
  const key = hex(16);
  const table = new Map<string, Uint8Array>([["walk_in.js", files.loader], ["bundle.js", files.bundle]]);
  if (files.page) table.set("page.js", files.page);
  for (const [name, bytes] of Object.entries(files.packs)) table.set(`${name}.pack`, bytes);
  const digests: WalkInDigests = { bundle: await sha256(files.bundle), packs: {} };
  for (const [name, bytes] of Object.entries(files.packs)) digests.packs[name] = await sha256(bytes);
  const deno = (globalThis as unknown as { Deno?: DenoServe }).Deno;
  if (!deno) throw new Error("serveWalkIn: needs Deno (Deno.serve); a browser cannot serve walk-ins");

  const slots = new Map<number, Slot>(), byTicket = new Map<string, Slot>();
  let upstream: string | undefined; // nats-server's WebSocket URL, from the first token
  const tell = opts.onRefused;
  const taken = (slot: Slot) =>
    refuse(409, `slot ${slot.rank} is already taken (by ${slot.claimed}); each join link serves once: ask the coordinator for a free slot`, tell);
  const routes: WalkInRoutes = {
    claim(ticket, req) {
      const slot = byTicket.get(ticket);
      if (!slot) return refuse(404, `claim ${ticket.slice(0, 8)}…: no slot of this run has this ticket (a link of another run?)`, tell);
      if (slot.claimed) return taken(slot);
      const who = /Deno\//.test(req.headers.get("user-agent") ?? "") ? "a Deno walk-in" : "a browser tab";
      slot.claimed = `${who} at ${new Date().toISOString().slice(11, 19)} UTC`;
      return new Response(`flodl walk-in: slot ${slot.rank} is yours\n`, { status: 200, headers: TEXT });
    },
    join(ticket) {
      const slot = byTicket.get(ticket);
      if (!slot?.tabToken) return refuse(404, `join/${ticket.slice(0, 8)}…: not a join link of this run (copied whole?)`, tell);
      if (slot.claimed) return taken(slot);
      const headers = { ...TEXT, "content-type": "text/html; charset=utf-8", "content-security-policy": JOIN_PAGE_CSP, "referrer-policy": "no-referrer" };
      return new Response(joinPageHtml(slot.tabToken, key), { headers });
    },
    nats: (req) => upstream ? proxyWebSocket(req, upstream, tell) : refuse(503, "the NATS link: no slot token made yet, nothing to proxy to", tell),
  };
  const handler = walkInHandler(key, table, tell, routes);
  const listen = (port: number, tls?: { cert: string; key: string }) => {
    try {
      return deno.serve({ hostname: opts.hostname, port, onListen: () => {}, ...tls }, handler);
    } catch (e) {
      throw new Error(`serveWalkIn: cannot listen on ${opts.hostname}:${port}${tls ? " (https)" : ""}: ${(e as Error).message}`, { cause: e });
    }
  };
  const server = listen(opts.port ?? 0);
  let secure: ReturnType<DenoServe["serve"]> | undefined;
  try {
    secure = opts.tls ? listen(opts.tlsPort ?? 0, opts.tls) : undefined;
  } catch (e) {
    await server.shutdown();
    throw e;
  }
  const host = opts.advertise ?? opts.hostname;
  const at = (port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`;
  const hostPort = at(server.addr.port);
  const httpsHostPort = secure ? at(secure.addr.port) : undefined;
  const url = `http://${hostPort}/${key}/walk_in.js`;
  const slotOf = (joinToken: string) => {
    const t = decodeJoinToken(joinToken);
    upstream ??= t.url;
    let slot = slots.get(t.rank);
    if (!slot) {
      slot = { rank: t.rank, ticket: hex(16) };
      slots.set(t.rank, slot);
      byTicket.set(slot.ticket, slot);
    }
    return { t, slot };
  };
  // A Deno walk-in gets every node of a cluster; a tab the one wss URL of this origin's proxy.
  const token = (joinToken: string, nats?: string) => {
    const { t: { url, urls, ...rest }, slot } = slotOf(joinToken);
    return encodeJoinToken(nats ?? urls ?? url, { ...rest, walkIn: { ...digests, ticket: slot.ticket } } as typeof rest);
  };
  return {
    hostPort,
    httpsHostPort,
    url,
    digests,
    token: (joinToken) => token(joinToken),
    command(joinToken) {
      // Every node of a cluster: the rank fails over among them, and Deno refuses a host not listed.
      // With the port always (URL's host drops a default one: wss://h:443 would allow every port of h).
      const nats = serversOf(decodeJoinToken(joinToken)).map((u) => {
        const n = new URL(u);
        return `${n.hostname}:${n.port || (n.protocol === "wss:" ? 443 : 80)}`;
      });
      return `deno run --allow-net=${[hostPort, ...nats].join(",")} ${url} ${token(joinToken)}`;
    },
    link(joinToken) {
      if (!httpsHostPort || !files.page) return undefined;
      const tabToken = token(joinToken, `wss://${httpsHostPort}/${key}/nats`);
      const slot = slotOf(joinToken).slot;
      slot.tabToken = tabToken;
      return `https://${httpsHostPort}/${key}/join/${slot.ticket}`;
    },
    close: async () => {
      await server.shutdown();
      await secure?.shutdown();
    },
  };
}
