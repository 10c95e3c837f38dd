/**
 * Open a NATS connection for a link: WebSocket (`wsconnect`, the one client path that
 * runs in browsers and Deno alike), reconnect off. Off because core NATS is at most once:
 * messages in flight while a client reconnects are lost, the link has no retransmission,
 * and a lost chunk would leave a call hanging. So a lost connection is a dead rank, as
 * DESIGN.md "Beyond one machine" says, and never a silent gap.
 */
import { wsconnect } from "@nats-io/nats-core";
import type { NatsConnection } from "@nats-io/nats-core";

/** A NATS connection, as the links use it (re-exported so callers need not import nats-core). */
export type { NatsConnection };

/**
 * Connect to a NATS server over WebSocket with a run's user and password.
 * @param url `ws://host:port` (loopback tests) or `wss://host:port` (anything else).
 * @param who Names the side in errors: "coordinator" or "rank 3".
 * @param inboxPrefix Reply subjects' prefix (the coordinator's: `coordinatorInbox(run)`).
 * @throws {Error} Naming `who`, the user and the URL when the server refuses or is unreachable.
 */
export async function connectLink(url: string, user: string, pass: string, who: string, inboxPrefix?: string): Promise<NatsConnection> {
  try {
    return await wsconnect({
      servers: url,
      user,
      pass,
      name: `flodl ${who}`,
      reconnect: false,
      timeout: 10_000,
      ...(inboxPrefix ? { inboxPrefix } : {}),
    });
  } catch (e) {
    throw new Error(`${who}: NATS at ${url} refused user "${user}": ${(e as Error).message}`, { cause: e });
  }
}

/** The server's max_payload for this connection (bytes). */
export function maxPayloadOf(nc: NatsConnection, who: string): number {
  const n = nc.info?.max_payload;
  if (!n) throw new Error(`${who}: the NATS connection has no server info (max_payload unknown)`);
  return n;
}
