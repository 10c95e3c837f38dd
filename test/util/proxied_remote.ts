/**
 * One local worker rank and one remote rank process whose link to a real nats-server (or a
 * cluster's node 0) runs through a cut proxy (cut_proxy.ts): the set-up of the link-cut test and of
 * bench/fault_soak.ts. The program is the remote-rank tests' (mnist_remote.ts) with batches
 * of 16; the coordinator reaches NATS directly, the rank through the proxy (its token's URL
 * is rewritten), so a cut or a hold is the rank's network alone. Counts what the
 * coordinator's completed chunks trained (a Ledger) and the ranks it lost.
 */
import { type NatsCluster, type NatsServer, startNatsCluster } from "../../scripts/nats_server.ts";
import { ApplyPolicy, createRunCredentials, ElCheConfig, type RunObserver, serverAuthorization } from "../../src/index.ts";
import { observe } from "../../src/distributed/run/builder.ts";
import { decodeJoinToken, encodeJoinToken } from "../../src/distributed/nats/mod.ts";
import { remoteProgram, TRAIN } from "../fixtures/programs/mnist_remote.ts";
import { type CutProxy, startCutProxy } from "./cut_proxy.ts";
import { Ledger } from "./ledger.ts";
import { type Proc, reap, spawnDeno } from "./processes.ts";

const RANK_SCRIPT = new URL("../fixtures/remote_rank.ts", import.meta.url).pathname;

/** A proxied run, ready to `builder.run()`. */
export interface ProxiedRun {
  builder: ReturnType<typeof remoteProgram>;
  /** The nats-server (node 0 of the cluster), the one behind the proxy. */
  server: NatsServer;
  /** Every node (one unless `opts.nodes`). */
  cluster: NatsCluster;
  proxy: CutProxy;
  /** The remote rank process, once its token was handed out. */
  procs: Proc[];
  ledger: Ledger;
  lost: string[];
  /**
   * Reap the rank process (`graceMs` to end on its own), stop the proxy and the server;
   * whether it ended on its own. Once: a second call answers the first's result.
   */
  stop(graceMs?: number): Promise<boolean>;
}

/**
 * Set up a proxied run; `batch` is told each remote batch (rank 1), in order: where a test
 * or the soak fires its fault.
 * @param graceSecs The run's `reconnectGraceSecs` (and `heartbeatTimeoutSecs`): how long the
 *   coordinator holds the remote rank's slot while it is away, and the rank holds its state.
 * @param opts.sync cpu-sync with an f32 wire and a static half-and-half split instead of
 *   cpu-cadence with bf16: each rank's steps are then fixed, whatever the timing, so two runs
 *   end with the same consensus bytes.
 * @param opts.nodes A NATS cluster of this many routed nodes (default 1): the coordinator's
 *   token lists every node, the rank's node 0 through the proxy and the others directly.
 */
export async function proxiedRun(
  graceSecs: number,
  batch: (n: number) => void,
  opts: { sync?: boolean; nodes?: number } = {},
): Promise<ProxiedRun> {
  const creds = await createRunCredentials(2);
  const cluster = await startNatsCluster(opts.nodes ?? 1, { authorization: serverAuthorization(creds) });
  const server = cluster.nodes[0];
  const proxy = startCutProxy({ hostname: "127.0.0.1", port: Number(new URL(server.wsUrl).port) });
  const procs: Proc[] = [], lost: string[] = [];
  const ledger = new Ledger(TRAIN, 1, 42);
  const program = opts.sync
    ? remoteProgram(16).elche(ElCheConfig.cpuSync()).policy(ApplyPolicy.Sync).bf16Wire(false).partitionRatios([0.5, 0.5])
    : remoteProgram(16);
  const builder = program.heartbeatTimeoutSecs(graceSecs).reconnectGraceSecs(graceSecs).cluster({ ranks: [{}] }).remoteRanks({
    slots: 1,
    url: cluster.wsUrls,
    credentials: creds,
    joinTimeoutSecs: 120,
    onJoinToken: (_r, t) => {
      const { url: _direct, urls: _all, ...rest } = decodeJoinToken(t);
      procs.push(spawnDeno(RANK_SCRIPT, [encodeJoinToken([`ws://127.0.0.1:${proxy.port}`, ...cluster.wsUrls.slice(1)], rest)]));
    },
  });
  let n = 0, stopped: Promise<boolean> | undefined;
  const observer: RunObserver = {
    chunk: ledger.chunk,
    rankLost: (r, why) => lost.push(`${r}: ${why}`),
    batch: (e) => void (e.rank === 1 && batch(++n)),
  };
  observe(builder, observer);
  return {
    builder,
    server,
    cluster,
    proxy,
    procs,
    ledger,
    lost,
    stop(graceMs = 30_000) {
      return stopped ??= (async () => {
        const [own] = await reap(procs, graceMs);
        await proxy.close();
        await cluster.stop();
        return own ?? false;
      })();
    },
  };
}
