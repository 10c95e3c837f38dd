/**
 * Open a NATS connection for a link: WebSocket (`wsconnect`, the one client path that
 * runs in browsers and Deno alike), reconnecting for as long as the link lets it. Core NATS
 * is at most once: what was in flight while a client reconnected is lost, so the links
 * resume (wire.ts: acknowledged chunks, kept until then and sent again) and decide when a
 * connection has been away too long (the rank's `beaconLossMs`, the coordinator's
 * `graceMs`).
 */
import { wsconnect } from "@nats-io/nats-core";

/** A message as the links read it. */
export interface NatsMsg {
  readonly data: Uint8Array;
}

/** A change of a connection's state: `disconnect`, `staleConnection`, `error` (with the server's error)… */
export interface NatsStatus {
  readonly type: string;
  readonly error?: Error;
}

/**
 * What the links use of a NATS connection, declared here rather than imported from
 * nats-core: the package bundles nats-core, so its published types must not name it. The
 * connection `wsconnect` returns is one of these.
 */
export interface NatsConnection {
  /** The server's INFO (`max_payload`: the largest message it takes). */
  readonly info?: { readonly max_payload: number };
  publish(subject: string, payload?: Uint8Array): void;
  subscribe(subject: string, opts: { callback: (err: Error | null, msg: NatsMsg) => void }): { unsubscribe(): void };
  request(subject: string, payload: Uint8Array, opts: { timeout: number }): Promise<NatsMsg>;
  flush(): Promise<void>;
  drain(): Promise<void>;
  close(): Promise<void>;
  /** Resolves when the connection closes, with the error that closed it if any. */
  closed(): Promise<void | Error>;
  isClosed(): boolean;
  status(): AsyncIterable<NatsStatus>;
  /** Bytes through the connection so far (bench/nats_link.ts measures the wire with it). */
  stats(): { readonly inBytes: number; readonly outBytes: number };
}

/**
 * Connect to a NATS server, or to one node of a cluster, over WebSocket with a run's user and password.
 * Given several URLs (a cluster's nodes, as a join token lists them), the client connects to
 * one of them and, when that node goes away, reconnects to another (in the client's shuffled
 * order, each tried every `reconnectTimeWait`, for as long as the link lets it); only those URLs: the
 * client ignores cluster URLs a server gossips (`ignoreClusterUpdates`), which may be
 * unreachable from here or outside a walk-in's `--allow-net`.
 * @param url `ws://host:port` (loopback tests) or `wss://host:port` (anything else), or a list of them.
 * @param who Names the side in errors: "coordinator" or "rank 3".
 * @param inboxPrefix Reply subjects' prefix (the coordinator's: `coordinatorInbox(run)`).
 * @throws {Error} Naming `who`, the user and the URL when the server refuses or is unreachable.
 */
export async function connectLink(
  url: string | readonly string[],
  user: string,
  pass: string,
  who: string,
  inboxPrefix?: string,
): Promise<NatsConnection> {
  try {
    return await wsconnect({
      servers: typeof url === "string" ? url : [...url],
      ignoreClusterUpdates: true,
      user,
      pass,
      name: `flodl ${who}`,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 10_000,
      ...(inboxPrefix ? { inboxPrefix } : {}),
    });
  } catch (e) {
    throw new Error(`${who}: NATS at ${typeof url === "string" ? url : url.join(", ")} refused user "${user}": ${(e as Error).message}`, { cause: e });
  }
}

/** The server's max_payload for this connection (bytes). */
export function maxPayloadOf(nc: NatsConnection, who: string): number {
  const n = nc.info?.max_payload;
  if (!n) throw new Error(`${who}: the NATS connection has no server info (max_payload unknown)`);
  return n;
}
