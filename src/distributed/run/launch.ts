/**
 * `run()`: validate, size the world, start the ranks (Web Workers that re-enter the
 * entry module, or the single-device path in process), broadcast rank 0's initial
 * state, and hand the coordinator's run to a {@link DdpHandle}.
 */
import type { Module } from "../../nn/mod.ts";
import type { BuilderState, ClusterSpec } from "./builder_state.ts";
import { Coordinator, type RunObserver } from "../coordinator/coordinator.ts";
import { describeError, RankLostError } from "../protocol/errors.ts";
import { DdpHandle } from "./handle.ts";
import type { LayoutTable, RankHello, RankSetup } from "../protocol/messages.ts";
import type { RankPlace } from "../coordinator/report/observer.ts";
import type { NatsTransport } from "../coordinator/transport/transport_nats.ts";
import type { JoinExpectation } from "../protocol/remote_hello.ts";
import { awaitHello, WorkerTransport } from "../coordinator/transport/transport_worker.ts";
import { RankClient } from "../coordinator/transport/rank_client.ts";
import { RelayClient } from "../coordinator/reduce/relay_client.ts";
import { wireDtype } from "../coordinator/reduce/reduce_cycle.ts";
import { programArgs, type RankRole } from "./reentry.ts";
import { runMonitor } from "./run_monitor.ts";
import { loadCollector } from "../../gpu/mod.ts";
import { BundleWriter, loadResume, type Persistence } from "../coordinator/persistence/persistence.ts";
import { setupFor } from "./rank_setup.ts";
import { stallCeilingMs } from "../coordinator/control/max_failure.ts";
import { graceWindows } from "../coordinator/control/grace.ts";
import { checkRemote, openRemoteSlots, type RemoteSlots } from "./remote_slots.ts";
import { layoutDigest, programId } from "../protocol/remote_hello.ts";
import { assertSharedMemory } from "../protocol/slab.ts";

import { runSingle } from "./single.ts";
import { type DiskStage, prepareDiskStage } from "./disk_stage.ts";
import { resolveConfig, type ResolvedRunConfig } from "./validate_config.ts";

const OBSERVER = Symbol.for("flodl-webgpu.runObserver");

/** Attach `observer` to the next launch of `state` ({@link observe} in builder.ts). */
export function attachObserver<M extends Module>(state: BuilderState<M>, observer: RunObserver): void {
  (state as unknown as { [OBSERVER]: RunObserver })[OBSERVER] = observer;
}

function observerOf<M extends Module>(state: BuilderState<M>): RunObserver {
  return (state as unknown as { [OBSERVER]?: RunObserver })[OBSERVER] ?? {};
}

/** One rank per distinct adapter the runtime exposes (usually one). */
async function distinctAdapters(): Promise<ClusterSpec> {
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  if (!gpu) return { ranks: [{}] };
  const seen = new Map<string, GPUPowerPreference>();
  for (const pp of ["high-performance", "low-power"] as GPUPowerPreference[]) {
    const a = await gpu.requestAdapter({ powerPreference: pp });
    if (!a) continue;
    const key = `${a.info.vendor}|${a.info.architecture}|${a.info.device}|${a.info.description}`;
    if (!seen.has(key)) seen.set(key, pp);
  }
  if (seen.size <= 1) return { ranks: [{}] };
  return { ranks: [...seen.values()].map((powerPreference) => ({ powerPreference })) };
}

function checkCluster(c: ClusterSpec): void {
  if (c.ranks.length < 1) throw new RangeError(`Trainer.run: cluster must list at least one rank, got ${c.ranks.length}`);
  c.ranks.forEach((r, i) => {
    if (r.slowdown !== undefined && !(Number.isFinite(r.slowdown) && r.slowdown >= 1)) {
      throw new RangeError(`Trainer.run: cluster rank ${i} slowdown must be a finite number >= 1, got ${r.slowdown}`);
    }
    if (r.speedHint !== undefined && !(Number.isFinite(r.speedHint) && r.speedHint > 0)) {
      throw new RangeError(`Trainer.run: cluster rank ${i} speedHint must be a finite number > 0, got ${r.speedHint}`);
    }
    for (const knob of ["vramBytes", "ramBytes"] as const) {
      const v = r[knob];
      if (v !== undefined && !(Number.isFinite(v) && v >= 0)) {
        throw new RangeError(`Trainer.run: cluster rank ${i} ${knob} must be a finite number of bytes >= 0, got ${v}`);
      }
    }
  });
}

/** Validate a builder and start it. */
export async function launch<M extends Module>(state: BuilderState<M>): Promise<DdpHandle> {
  if (!state.spec.dataset) throw new TypeError("Trainer.run: dataset is required (.dataset() or .sampleDataset()), got undefined");
  // Everything that needs no GPU is checked before any adapter is touched or rank started.
  const datasetLen = state.spec.dataset.len();
  if (state.cluster) checkCluster(state.cluster);
  // Remote slots in all: the awaited ones and the spare ones (elastic membership).
  const remote = state.remote ? state.remote.maxSlots ?? state.remote.slots : 0;
  if (state.remote && state.cluster) checkRemote(state.remote, state.cluster.ranks.length);
  resolveConfig(state.config, { worldSize: state.cluster ? state.cluster.ranks.length + remote : undefined, datasetLen });
  const local = state.cluster ?? await distinctAdapters();
  if (state.remote) checkRemote(state.remote, local.ranks.length);
  // Remote slots are ranks after the local ones; setupFor, ElChe's hints and the monitor see the whole world.
  const cluster: ClusterSpec = { ranks: [...local.ranks, ...Array.from({ length: remote }, () => ({}))] };
  if (remote) state = { ...state, cluster };
  const W = cluster.ranks.length;
  const cfg = resolveConfig(state.config, { worldSize: W, datasetLen });
  if (datasetLen * cfg.augment < cfg.batchSize) {
    throw new RangeError(
      `Trainer.run: batchSize must fit the dataset: ${datasetLen} samples × augment ${cfg.augment} < ${cfg.batchSize}`,
    );
  }
  if (state.spec.evalFn && !state.spec.evalDataset) throw new TypeError("Trainer.run: evalFn needs evalDataset, got undefined");
  for (const w of cfg.warnings) console.warn(`Trainer.run: ${w}`);
  if ((cfg.checkpointAtEpoch !== undefined || cfg.checkpointEvery !== undefined) && !cfg.savePath && !state.spec.checkpointFn) {
    throw new RangeError(`Trainer.run: checkpointAtEpoch/checkpointEvery need savePath (or a checkpointFn), got savePath undefined`);
  }
  const persistence = {
    resume: cfg.resumeFrom ? await loadResume(cfg.resumeFrom, cfg, W) : undefined,
    writer: cfg.savePath ? new BundleWriter(cfg.savePath) : undefined,
  };
  if (W > 1 && cfg.backend === "nccl") {
    assertSharedMemory(); // before any worker starts: a clear error on a page without isolation
    if (W > local.ranks.length) {
      throw new RangeError(
        `backend(Nccl) with remoteRanks: the nccl-* collective shares memory between the ranks of one process, ` +
          `which ranks on other machines cannot; use a cpu-* mode (Cpu backend) for a run with remote ranks`,
      );
    }
  }
  const stage = await prepareDiskStage(cfg);
  try {
    if (W === 1) return await runSingle(state, cfg, observerOf(state), persistence, stage);
    return await launchRanks(state, cfg, { ...cluster, ranks: cluster.ranks }, persistence, stage, local.ranks.length);
  } catch (e) {
    await stage.remove();
    throw e;
  }
}

async function launchRanks<M extends Module>(
  state: BuilderState<M>,
  cfg: ResolvedRunConfig,
  cluster: ClusterSpec,
  persistence: Persistence,
  stage: DiskStage,
  locals = cluster.ranks.length,
): Promise<DdpHandle> {
  const W = cluster.ranks.length;
  const session = crypto.randomUUID();
  const entry = state.entry ?? state.site.url;
  const clients: RankClient[] = [];
  const timeoutMs = state.entryTimeoutSecs * 1000;
  let remote: RemoteSlots | undefined;
  const relays: RelayClient[] = [];
  const close = async () => {
    await Promise.all(relays.map((r) => r.close()));
    await Promise.all(clients.map((c) => c.close()));
    await remote?.close();
  };
  await loadCollector(); // RankClient collects every MESSAGES_PER_COLLECT messages (Deno only)
  let hellos: RankHello[];
  /** Where each rank runs (the monitor); undefined for a spare slot until a rank joins it. */
  const places: (RankPlace | undefined)[] = [];
  const host = hostName();
  let want: JoinExpectation | undefined;
  try {
    // Tokens go out first: remote processes start while the local workers load.
    if (state.remote) remote = await openRemoteSlots(state.remote, locals, state.site, programArgs(), graceWindows(cfg));
    for (let rank = 0; rank < locals; rank++) {
      const role: RankRole = { rank, world: W, entry, site: state.site, timeoutMs, session, args: programArgs() };
      const worker = new Worker(new URL("../../../workers/rank.ts", import.meta.url), {
        type: "module",
        name: JSON.stringify(role),
      });
      const hello = awaitHello(worker, rank, session, timeoutMs);
      clients.push(new RankClient(rank, new WorkerTransport(rank, worker)));
      await hello;
    }
    hellos = await Promise.all(
      clients.map((c) => c.call("init", (api) => api.init(setupFor(state, cfg, c.rank, W, stage.dir, locals)))),
    );
    for (const h of hellos) places.push({ host, adapter: h.adapter, transport: "worker" });
    if (remote) {
      want = {
        program: programId(state.site),
        layout: layoutDigest(hellos[0].layout),
        datasetLen: state.spec.dataset!.len(),
        wire: wireDtype(cfg.elche.bf16Wire, false),
      };
      const joined = await remote.joined(want);
      const far = remote.transports.map((t) => new RankClient(t.rank, t));
      clients.push(...far);
      // A rank behind a relay sends its reduce frames there; the relay's client loses them with it.
      const relayOf = new Map(remote.relays.flatMap((r) => r.ranks.map((k) => [k, r.link.rank] as const)));
      for (const r of remote.relays) relays.push(new RelayClient(r.link, far.filter((c) => r.ranks.includes(c.rank))));
      const farHellos = await Promise.all(far.map((c) =>
        c.call("init", (api) => api.init({ ...setupFor(state, cfg, c.rank, W, undefined, 1), relay: relayOf.get(c.rank) }))
      ));
      farHellos.forEach((h, i) => places.push({ host: joined[i].host, adapter: h.adapter, transport: "remote" }));
      // The dashboard names a remote rank by its machine.
      hellos.push(...farHellos.map((h, i) => ({ ...h, adapter: `${joined[i].host || "remote"}: ${h.adapter}` })));
    }
    checkLayouts(hellos);
    const init = await clients[0].call("initialState", (api) => api.initialState());
    await Promise.all(clients.slice(1).map((c) =>
      c.call("load", (api) => api.load({ ...init, params: init.params.slice(), buffers: init.buffers.slice() }))
    ));
    // Spare slots (elastic): standby clients, admitted by the coordinator at an epoch boundary.
    for (const t of remote?.spares ?? []) clients.push(RankClient.spare(t.rank, t));
  } catch (e) {
    await close();
    throw e instanceof RankLostError ? e : new Error(`Trainer.run: starting ${W} ranks failed: ${describeError(e)}`, { cause: e });
  }
  const observer = observerOf(state);
  const adapters = [...hellos.map((h) => h.adapter), ...(remote?.spares ?? []).map(() => "(spare slot)")];
  const monitor = runMonitor(state, cfg, W, adapters, places);
  let coordinator: Coordinator<M> | undefined;
  // A rank silent past its allowance is lost. One silent past the heartbeat timeout but
  // allowed longer (compiling, slow steps) is asked, where its transport can tell, whether it
  // is still there at all: a closed tab is lost then, not after the stall ceiling.
  const probing = new Map<number, number>();
  const watchdog = setInterval(() => {
    const limit = cfg.heartbeatTimeoutSecs * 1000, compileLimit = stallCeilingMs(cfg.heartbeatTimeoutSecs);
    const now = performance.now();
    for (const c of clients) {
      const silent = c.overdueMs(now, limit, compileLimit);
      if (c.alive && silent > 0) {
        const why = c.compiling
          ? `compiling GPU pipelines (stall ceiling ${((c.hold?.compileMs ?? compileLimit) / 1000).toFixed(0)} s)`
          : c.hold?.knob ?? `heartbeatTimeoutSecs ${cfg.heartbeatTimeoutSecs}`;
        c.fail(new RankLostError(c.rank, `rank ${c.rank} was silent for ${(silent / 1000).toFixed(1)} s (${why})`), false);
      } else if (c.alive && c.transport.present && now - c.lastSeen > (c.hold?.silentMs ?? limit) && now - (probing.get(c.rank) ?? -Infinity) > limit) {
        probing.set(c.rank, now);
        const quiet = now - c.lastSeen;
        void c.transport.present().then((here) => {
          if (!here && c.alive) {
            c.fail(new RankLostError(c.rank, `rank ${c.rank} is gone: its connection left the NATS server while it was silent for ${(quiet / 1000).toFixed(1)} s`), false);
          }
        });
      }
    }
  }, 250);
  let begin!: (h: DdpHandle) => void;
  const started = new Promise<DdpHandle>((r) => (begin = r));
  const result = (async () => {
    try {
      coordinator = new Coordinator(state, cfg, clients, hellos[0].layout, await started, observer, monitor, persistence);
      const join = (t: NatsTransport) =>
        spareJoin(remote!, t, want!, clients[t.rank], hellos[0].layout, (h) => setupFor(state, cfg, h, W, undefined, 1), coordinator!, (name) => {
          adapters[t.rank] = name; // handle.devices() names the rank by its machine from now on
        });
      for (const t of remote?.spares ?? []) join(t);
      // A remote rank dropped (away past reconnectGraceSecs) may come back: its slot reopens as a spare.
      if (remote) coordinator.onRankLost = (rank) => rank >= locals && void rejoinSlot(remote!, rank, coordinator!, join);
      return await coordinator.run();
    } finally {
      clearInterval(watchdog);
      await close();
      await stage.remove(); // after the ranks stopped: a dead rank's stage file goes too
      await monitor?.close();
      await persistence.writer?.flush().catch(() => {});
    }
  })();
  const memory = () => Promise.all(clients.map((c) => (c.alive ? c.call("memory", (api) => api.memory()).catch(() => null) : null)));
  const handle = new DdpHandle(W, adapters, result, () => coordinator?.shutdown(), memory);
  begin(handle);
  return handle;
}

/** This machine's name (Deno), or "" (a browser: the coordinator's own host). */
function hostName(): string {
  try {
    return (globalThis as { Deno?: { hostname?: () => string } }).Deno?.hostname?.() ?? "";
  } catch {
    return ""; // no --allow-sys
  }
}

/**
 * A spare slot's join, in the background of a running run (elastic membership): the hello
 * checked, `init`, the layout compared with rank 0's, then the coordinator admits the rank
 * at its next epoch boundary. A refused or failed join is a warning; the run goes on.
 */
function spareJoin<M extends Module>(
  remote: RemoteSlots,
  t: NatsTransport,
  want: JoinExpectation,
  client: RankClient,
  layout: LayoutTable,
  setup: (rank: number) => RankSetup,
  coordinator: Coordinator<M>,
  named: (device: string) => void,
): void {
  (async () => {
    const hello = await remote.spareJoined(t, want);
    const h = await client.call("init", (api) => api.init(setup(t.rank)));
    if (key(h.layout) !== key(layout)) {
      await t.link.refuse(`its model layout differs from rank 0's`);
      throw new Error(`rank ${t.rank} built a model with other parameters than rank 0 (${h.layout.paramCount} vs ${layout.paramCount} values)`);
    }
    named(`${hello.host || "remote"}: ${h.adapter}`);
    coordinator.requestJoin(t.rank, { host: hello.host, adapter: h.adapter, transport: "remote" });
  })().catch((e) => {
    console.warn(`flodl-webgpu: the rank joining spare slot ${t.rank} was not admitted: ${describeError(e)} (the run goes on)`);
  });
}

/** Reopen a dropped remote rank's slot as a standby (the coordinator's `reopen`), and join it as a spare's. */
async function rejoinSlot<M extends Module>(remote: RemoteSlots, rank: number, coordinator: Coordinator<M>, join: (t: NatsTransport) => void): Promise<void> {
  try {
    const t = await remote.reopen(rank);
    if (!t) return; // the run ended first
    if (!coordinator.reopen(rank, RankClient.spare(rank, t))) return void (await t.close());
    join(t);
  } catch (e) {
    console.warn(`flodl-webgpu: rank ${rank}'s slot was not reopened: ${describeError(e)} (the run goes on without it)`);
  }
}

const key = (l: LayoutTable) => JSON.stringify([l.params.map((e) => [e.name, e.shape]), l.buffers.map((e) => [e.name, e.shape])]);

function checkLayouts(hellos: RankHello[]): void {
  const want = key(hellos[0].layout);
  for (const h of hellos.slice(1)) {
    if (key(h.layout) !== want) {
      throw new Error(
        `Trainer.run: rank ${h.rank} built a model with other parameters than rank 0 ` +
          `(${h.layout.paramCount} vs ${hellos[0].layout.paramCount} values); every rank must build the same model`,
      );
    }
  }
}
