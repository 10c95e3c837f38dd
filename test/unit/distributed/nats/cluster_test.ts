/**
 * A 3-node NATS cluster (scripts/nats_server.ts `startNatsCluster`) and `connectLink` with
 * every node's URL: the routes form, a message crosses nodes, and a client whose node is
 * killed moves to a survivor (found by its connection name in the nodes' `/connz`, not
 * guessed) and is heard again there. A client given one URL does not move: what the join
 * token's `urls` are for.
 */
import { startNatsCluster } from "../../../../scripts/nats_server.ts";
import { connectLink, coordinatorInbox, createRunCredentials, serverAuthorization } from "../../../../src/distributed/nats/mod.ts";
import type { NatsConnection } from "../../../../src/distributed/nats/mod.ts";
import { fromRankSubject } from "../../../../src/distributed/nats/subjects.ts";
import { assert, assertEquals } from "../../../util/assert.ts";

/** Poll `f` until it returns a value (not undefined); a loud error after `ms` naming `what`. */
async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`hang: ${what} within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Publish on `subject` from `from` until `to`'s subscription hears it (routes propagate interest asynchronously). */
async function heard(from: NatsConnection, to: NatsConnection, subject: string, what: string): Promise<void> {
  let got = false;
  const sub = to.subscribe(subject, { callback: () => void (got = true) });
  try {
    await to.flush();
    await until(what, async () => {
      from.publish(subject, new Uint8Array([1]));
      await from.flush().catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
      return got || undefined;
    });
  } finally {
    sub.unsubscribe();
  }
}

Deno.test("startNatsCluster: 3 routed nodes; a client with every URL moves to a survivor when its node dies, one with a single URL does not", async () => {
  const creds = await createRunCredentials(3);
  const cluster = await startNatsCluster(3, { authorization: serverAuthorization(creds) });
  const conns: NatsConnection[] = [];
  try {
    assertEquals(cluster.wsUrls.length, 3, "a URL per node");
    for (const s of cluster.nodes) {
      const routez = await (await fetch(`${s.monitorUrl}/routez`)).json();
      assertEquals(routez.num_routes, 2, `${s.monitorUrl} routes`);
    }
    const c = await connectLink(cluster.wsUrls, creds.coordinator.user, creds.coordinator.pass, "coordinator", coordinatorInbox(creds.run));
    const r1 = await connectLink(cluster.wsUrls, creds.ranks[1].user, creds.ranks[1].pass, "rank 1");
    conns.push(c, r1);
    const at = await until("the coordinator in a node's /connz", async () => (await cluster.nodeOf("flodl coordinator")) >= 0 ? cluster.nodeOf("flodl coordinator") : undefined);
    // A rank on a node the coordinator is not on, with only that node's URL.
    const other = (at + 1) % 3;
    const r2 = await connectLink(cluster.wsUrls[other], creds.ranks[2].user, creds.ranks[2].pass, "rank 2");
    conns.push(r2);
    await heard(r2, c, fromRankSubject(creds.run, 2), "rank 2's message across the route to the coordinator");

    const reconnected = (async () => {
      for await (const s of c.status()) if (s.type === "reconnect") return;
    })();
    await cluster.nodes[at].kill();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([reconnected, new Promise((_, no) => timer = setTimeout(() => no(new Error("hang: the coordinator's reconnect within 20 s")), 20_000))])
      .finally(() => clearTimeout(timer));
    const moved = await until("the coordinator on a surviving node", async () => {
      const n = await cluster.nodeOf("flodl coordinator");
      return n >= 0 ? n : undefined;
    });
    assert(moved !== at && cluster.nodes[moved].pid > 0, `the coordinator moved from node ${at} to a survivor, is on ${moved}`);
    await heard(r2, c, fromRankSubject(creds.run, 2), "rank 2 heard by the coordinator on its new node");
    await heard(r1, c, fromRankSubject(creds.run, 1), "rank 1 heard by the coordinator on its new node");

    // rank 2 had one URL: its node killed, it has nowhere to go.
    const r2Node = await cluster.nodeOf("flodl rank 2");
    assertEquals(r2Node, other, "rank 2 on the node of its one URL");
    await cluster.nodes[other].kill();
    assertEquals(await cluster.nodeOf("flodl rank 2"), -1, "rank 2 (one URL) is on no node once its node died");
    const left = cluster.nodes.findIndex((s) => s.pid > 0);
    await until("the coordinator on the last node", async () => (await cluster.nodeOf("flodl coordinator")) === left || undefined);
  } finally {
    await Promise.all(conns.map((nc) => nc.close().catch(() => {})));
    await cluster.stop();
  }
});
