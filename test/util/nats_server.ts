/**
 * A nats-server with one run's credentials, for tests and benches: the server runner of
 * scripts/nats_server.ts plus createRunCredentials, and connections as each user.
 */
import { startNatsServer } from "../../scripts/nats_server.ts";
import type { NatsServer } from "../../scripts/nats_server.ts";
import { connectLink, coordinatorInbox, createRunCredentials, serverAuthorization } from "../../src/distributed/nats/mod.ts";
import type { NatsConnection, RunCredentials } from "../../src/distributed/nats/mod.ts";

/** A server for one run. */
export interface RunServer {
  server: NatsServer;
  creds: RunCredentials;
  /** Connect over WebSocket as the coordinator. */
  connectCoordinator(): Promise<NatsConnection>;
  /** Connect over WebSocket as rank slot k. */
  connectRank(k: number): Promise<NatsConnection>;
  stop(): Promise<void>;
}

/** Start a server for a run of `slots` rank slots with this max_payload. */
export async function startRunServer(slots: number, maxPayload = 1024 * 1024): Promise<RunServer> {
  const creds = await createRunCredentials(slots);
  const server = await startNatsServer({ maxPayload, authorization: serverAuthorization(creds) });
  return {
    server,
    creds,
    connectCoordinator: () =>
      connectLink(server.wsUrl, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run)),
    connectRank: (k) => connectLink(server.wsUrl, creds.ranks[k].user, creds.ranks[k].pass, `rank ${k}`),
    stop: () => server.stop(),
  };
}

/** Resolve with the value `poll` returns once it is not undefined; reject after `ms` naming `what`. */
export async function until<T>(what: string, poll: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = poll();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
