/**
 * A coordinator harness without GPU: fake ranks that implement the rank protocol
 * (`RankApi`) on a virtual clock, so tests replay interleavings deterministically.
 *
 * Every rank action (a batch ends, a control call answers, a rank dies) is an event on
 * one virtual timeline, and `performance.now()` reads it during the run. The simulation fires the earliest event, then lets the real
 * `Coordinator` react fully (all microtasks and zero-delay timers) before the next. A
 * run whose coordinator is still waiting when no event is left can never end: that is
 * a hang, reported at once with the coordinator's own wait report, not after a timeout
 * (unless the test gives the coordinator's real-time ceilings a bounded wait).
 */
import { setImmediate } from "node:timers";
import { Coordinator, type RunObserver } from "../../src/distributed/coordinator/coordinator.ts";
import type { Persistence } from "../../src/distributed/coordinator/persistence/persistence.ts";
import { DdpHandle, type TrainedState } from "../../src/distributed/run/handle.ts";
import type { ChunkReport } from "../../src/distributed/coordinator/report/metrics.ts";
import type {
  Adoption,
  CollectiveAck,
  CollectiveCall,
  ChunkPlan,
  CoordinatorSink,
  EvalOutcome,
  Frame,
  LayoutTable,
  RankApi,
  RankHello,
  RankSetup,
  SyncAck,
} from "../../src/distributed/protocol/messages.ts";
import { RankClient } from "../../src/distributed/coordinator/transport/rank_client.ts";
import { RankLostError } from "../../src/distributed/protocol/errors.ts";
import { resolveConfig, type ResolvedRunConfig } from "../../src/distributed/run/validate_config.ts";
import type { RankPlace, RunEvents } from "../../src/distributed/coordinator/report/observer.ts";
import type { DdpBuilder } from "../../src/distributed/run/builder.ts";
import type { Module } from "../../src/nn/mod.ts";
import { ArrayDataSet, SGD, Trainer, type Variable } from "../../src/index.ts";

/** A program over `samples` one-value rows whose model and loss fake ranks never call: the run's shape alone. */
export function fakeProgram(samples: number): DdpBuilder<Module> {
  const ds = new ArrayDataSet([{ data: new Float32Array(samples), shape: [samples, 1] }]);
  return Trainer.builder(
    () => ({}) as unknown as Module,
    (params) => new SGD(params, { lr: 0.1 }),
    () => undefined as unknown as Variable,
  ).dataset(ds);
}

/** One parameter tensor of 4 values: enough for frames, averages and acks. */
export const FAKE_LAYOUT: LayoutTable = {
  params: [{ name: "w", shape: [4], offset: 0, numel: 4 }],
  buffers: [],
  paramCount: 4,
  bufferCount: 0,
};

/** How a fake rank behaves; every duration is virtual ms. */
export interface FakeRankScript {
  /** ms of the rank's n-th batch (0-based, over the whole run). */
  batchMs(n: number): number;
  /** ms a control call (snapshot, adopt, evaluate, …) takes to answer; default 0. */
  controlMs?(what: string): number;
  /** Die (worker gone) once this many batches are done; undefined: never. */
  dieAfterBatches?: number;
  /** A control call that never answers (the rank stays alive), by name. */
  hangOn?: string;
  /**
   * Lost right after it answered its n-th (1-based) call of this name: "train" (the chunk's
   * reply is on its way, no reduce has folded it yet), "snapshot" (its frame is on its way),
   * "adopt", "collective".
   */
  dieAfter?: { call: "train" | "snapshot" | "adopt" | "collective"; n: number };
  /**
   * Its n-th (1-based) snapshot's frame fails the coordinator's checks (a NaN, as the NATS
   * transport refuses one): the rank is dropped and the snapshot call rejects.
   */
  refuseSnapshot?: number;
  /**
   * Deliver each chunk's last batch event after the chunk's reply (a worker's events and
   * replies travel on different message ports, with no order between them).
   */
  lateLastEvent?: boolean;
  /**
   * A spare slot of an elastic run: the rank starts standby, and asks to join at
   * this virtual ms (the coordinator admits it at the next epoch boundary). With
   * `spare: true` and no `joinAt`, the test asks through `SimControl.requestJoin`.
   */
  joinAt?: number;
  spare?: boolean;
  /** Before its first batch the rank says it compiles `what`, and that batch takes `ms` longer. */
  compileFirst?: { what: string; ms: number };
}

/** What a test may do to a simulated run while it goes (elastic joins, deaths at chosen moments). */
export interface SimControl {
  clock: Timeline;
  ranks: FakeRank[];
  /**
   * A spare rank's join passed its checks: the coordinator admits it at the next epoch
   * boundary. Default place: host `fake-host-<rank>`, adapter "fake", remote.
   */
  requestJoin(rank: number, place?: RankPlace): void;
  /** Ranks waiting for the next boundary. */
  pendingJoins(): number[];
  /** What the coordinator would print now about what it waits for. */
  waitReport(): string;
}

interface Event {
  t: number;
  seq: number;
  fire: () => void;
}

/** A fake nccl-* collective under way: its members meet here as at the slab's barrier. */
interface Meeting {
  size: number;
  arrived: { done: () => void; abort: () => void }[];
}

/** The virtual clock and its event queue. */
export class Timeline {
  now = 0;
  /** Collectives waiting for their members, by round and generation (rank/collective.ts's barrier). */
  readonly meetings = new Map<string, Meeting>();
  /** A member is gone: every collective still waiting for members is aborted, as the slab's abort does. */
  abortMeetings(): void {
    for (const m of this.meetings.values()) for (const a of m.arrived) a.abort();
    this.meetings.clear();
  }
  #queue: Event[] = [];
  #seq = 0;
  at(delay: number, fire: () => void): void {
    this.#queue.push({ t: this.now + Math.max(0, delay), seq: this.#seq++, fire });
    this.#queue.sort((a, b) => a.t - b.t || a.seq - b.seq);
  }
  next(): Event | undefined {
    const e = this.#queue.shift();
    if (e) this.now = e.t;
    return e;
  }
  get pending(): number {
    return this.#queue.length;
  }
}

/** A rank that trains nothing: batches are events, parameters are its rank id plus its steps. */
export class FakeRank implements RankApi {
  #sink!: CoordinatorSink;
  #setup!: RankSetup;
  #done = 0;
  #stepsSinceAvg = 0;
  #snapshots = new Map<number, number>();
  /** The parameters of each consensus this rank adopted, in order (f32 values or bf16 words). */
  readonly adopted: Frame["params"][] = [];
  /** Each nccl-* collective call this rank answered, in order. */
  readonly collectives: CollectiveCall[] = [];
  #busy = false;
  #stopped = false;
  #queued: (() => void)[] = [];
  client!: RankClient;
  /** Chunks this rank trained: [epoch, offset, size]. */
  readonly trained: [number, number, number][] = [];
  /** The rank's own log: [epoch, offset] of every batch it trained since its last adopted frame. */
  #sinceAvg: [number, number][] = [];
  /** Per round, the batches ([epoch, offset]) the frame (or collective slot) it gave holds. */
  readonly framed = new Map<number, [number, number][]>();
  #answered = new Map<string, number>();

  constructor(readonly rank: number, readonly clock: Timeline, readonly script: FakeRankScript) {}

  init(setup: RankSetup, sink: CoordinatorSink): Promise<RankHello> {
    this.#setup = setup;
    this.#sink = sink;
    return Promise.resolve({ rank: this.rank, adapter: "fake", layout: FAKE_LAYOUT });
  }
  initialState(): Promise<Frame> {
    return Promise.resolve(this.#frame(0, 0));
  }
  /** The consensus a joining rank loads (elastic membership). */
  loaded?: Frame;
  load(frame: Frame): Promise<void> {
    return this.#control("load", () => void (this.loaded = frame));
  }

  train(plan: ChunkPlan): Promise<ChunkReport> {
    if (this.#busy) return Promise.reject(new Error(`fake rank ${this.rank}: a chunk is already running`));
    this.#busy = true;
    const B = this.#setup.batchSize;
    const batches = plan.ranges.reduce((a, [, size]) => a + Math.floor(size / B), 0);
    return new Promise((resolve) => {
      let k = 0, ms = 0;
      const step = () => {
        if (this.#stopped || k === batches) {
          this.#busy = false;
          for (const [offset, size] of plan.ranges) this.trained.push([plan.epoch, offset, size]);
          resolve({
            rank: this.rank,
            epoch: plan.epoch,
            avgLoss: 1,
            batches: k,
            samples: k * B,
            epochMs: ms,
            shareCompleteMs: ms,
            computeOnlyMs: ms,
            dataStarveMs: 0,
            scalars: {},
          });
          this.#answer("train");
          this.#drain();
          return;
        }
        let d = this.script.batchMs(this.#done);
        const compile = this.#done === 0 && k === 0 ? this.script.compileFirst : undefined;
        if (compile) {
          this.#sink.compiling(this.rank, compile.what);
          d += compile.ms;
        }
        const [start] = plan.ranges[0]; // the coordinator sends one range a chunk
        this.clock.at(d, () => {
          if (this.#stopped) return;
          this.#sinceAvg.push([plan.epoch, start + k * B]);
          k++;
          ms += d;
          this.#done++;
          this.#stepsSinceAvg++;
          const event = { rank: this.rank, epoch: plan.epoch, ms: d, computeMs: d, loss: 1, lr: 0.1, samples: B };
          if (this.script.lateLastEvent && k === batches) this.clock.at(0, () => this.#sink.batch(event));
          else this.#sink.batch(event);
          if (this.script.dieAfterBatches !== undefined && this.#done >= this.script.dieAfterBatches) {
            this.die("its worker died (scripted)");
            return;
          }
          this.#drain();
          step();
        });
      };
      step();
    });
  }

  /** The rank's worker is gone: the client sees what a worker `error` event gives. */
  die(why: string): void {
    this.#stopped = true;
    this.clock.abortMeetings();
    this.client.fail(new RankLostError(this.rank, `rank ${this.rank}: ${why}`), false);
  }

  /** Always an f32 frame, whatever the round's dtype. */
  snapshot(round: number, _dtype?: Frame["dtype"]): Promise<Frame> {
    return this.#control("snapshot", () => {
      this.#snapshots.set(round, this.#stepsSinceAvg);
      this.framed.set(round, this.#sinceAvg.slice(0, this.#stepsSinceAvg));
      const f = this.#frame(round, this.#stepsSinceAvg);
      if ((this.#answered.get("snapshot") ?? 0) + 1 === this.script.refuseSnapshot) {
        const err = new RankLostError(this.rank, `rank ${this.rank}: its frame was refused: "w" holds NaN (scripted)`);
        this.#stopped = true;
        this.client.fail(err, false);
        throw err;
      }
      this.#answer("snapshot");
      return f;
    });
  }
  adopt(a: Adoption): Promise<SyncAck> {
    return this.#control("adopt", () => {
      this.adopted.push(a.consensus.params.slice());
      const took = this.#snapshots.get(a.round) ?? this.#stepsSinceAvg;
      this.#stepsSinceAvg = Math.max(0, this.#stepsSinceAvg - took);
      this.#sinceAvg.splice(0, took);
      this.#snapshots.clear();
      this.#answer("adopt");
      return { rank: this.rank, divergence: 0, preNorm: 1, postNorm: 1 };
    });
  }
  /**
   * The nccl-* collective without the slab: counts only, but its members meet as at the
   * slab's barrier. All arrived: each takes its steps out ("done"); a member lost first: every
   * one waiting returns "aborted" with nothing changed (the coordinator retries over the survivors).
   */
  collective(c: CollectiveCall): Promise<CollectiveAck> {
    return this.#control("collective", () =>
      new Promise<CollectiveAck>((resolve) => {
        const key = `${c.round}/${c.generation}`;
        const m = this.clock.meetings.get(key) ?? { size: c.masses.length, arrived: [] };
        this.clock.meetings.set(key, m);
        m.arrived.push({
          abort: () => resolve({ rank: this.rank, status: "aborted", batches: this.#stepsSinceAvg }),
          done: () => {
            this.collectives.push(c);
            const batches = this.#stepsSinceAvg;
            this.framed.set(c.round, this.#sinceAvg.splice(0, c.steps));
            this.#stepsSinceAvg = Math.max(0, this.#stepsSinceAvg - c.steps);
            this.#answer("collective");
            resolve({ rank: this.rank, status: "done", batches, ack: { rank: this.rank, divergence: 0, preNorm: 1, postNorm: 1 } });
          },
        });
        if (m.arrived.length === m.size) {
          this.clock.meetings.delete(key);
          for (const a of m.arrived) a.done();
        }
      })
    );
  }
  evaluate(epoch: number): Promise<EvalOutcome> {
    return this.#control("evaluate", () => ({ epoch, value: 0.5 }));
  }
  checkpoint(): Promise<void> {
    return this.#control("checkpoint", () => undefined);
  }
  finalState(): Promise<Frame> {
    return this.#control("finalState", () => this.#frame(0, this.#stepsSinceAvg));
  }
  optimizerState() {
    return this.#control("optimizerState", () => ({ tensors: {}, shapes: {}, scalars: {} }));
  }
  memory() {
    return Promise.resolve({ liveBytes: 0, pooledBytes: 0, totalBytes: 0, created: 0 });
  }
  stop(): Promise<void> {
    this.#stopped = true;
    return Promise.resolve();
  }

  /** Count an answered call; lost right after it when the script says so (the answer is on its way). */
  #answer(call: string): void {
    const n = (this.#answered.get(call) ?? 0) + 1;
    this.#answered.set(call, n);
    const d = this.script.dieAfter;
    if (d && d.call === call && d.n === n) this.clock.at(0, () => this.die(`lost after its ${call} #${n} (scripted)`));
  }

  #frame(round: number, batches: number): Frame {
    const params = new Float32Array(FAKE_LAYOUT.paramCount).fill(this.rank + this.#done / 1000);
    return { rank: this.rank, round, batches, dtype: "f32", params, buffers: new Float32Array(0) };
  }

  /** Answer after `controlMs`, between batches as the real runtime does; never, when scripted to hang. */
  #control<T>(what: string, fn: () => T | Promise<T>): Promise<T> {
    if (this.#stopped) return Promise.reject(new Error(`fake rank ${this.rank}: stopped`));
    return new Promise<T>((resolve, reject) => {
      if (this.script.hangOn === what) return;
      const answer = () => {
        try {
          resolve(fn());
        } catch (e) {
          reject(e);
        }
      };
      const run = () => this.clock.at(this.script.controlMs?.(what) ?? 0, answer);
      if (this.#busy) this.#queued.push(run);
      else run();
    });
  }
  #drain(): void {
    for (const run of this.#queued.splice(0)) run();
  }
}

/** What a simulated run gives back. */
export interface SimResult {
  state?: TrainedState;
  error?: Error;
  handle: DdpHandle;
  ranks: FakeRank[];
  /** What the coordinator printed on stderr (console.warn). */
  warnings: string[];
  /** Virtual ms at the end. */
  virtualMs: number;
}

/**
 * Let the coordinator react to the last event. Its continuations are microtasks, but a
 * chain of them can outlast a few event-loop hops, so hop until a zero-delay timer has
 * fired: setTimeout(0) is a true macrotask (~2 ms in Deno); setImmediate is cheap (~0.02 ms).
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
}
/**
 * Run the real coordinator over fake ranks until it ends. Rejects with "hang" and the
 * coordinator's wait report when it waits with no event left to come.
 * @param builder A builder whose dataset, epochs, batch size and policy define the run.
 */
export async function simulate<M extends Module>(
  builder: DdpBuilder<M>,
  scripts: FakeRankScript[],
  observer: RunObserver = {},
  options: {
    realWaitMs?: number;
    microtaskJitter?: () => number;
    onStart?: (ctl: SimControl) => void;
    /** The run's monitor (RunEvents), made from the resolved config; closed when the run ends. */
    events?: (cfg: ResolvedRunConfig, world: number) => RunEvents;
    /** A resume seed (`resumeFrom`) and a bundle writer (`savePath`), as launch.ts passes them. */
    persistence?: Persistence;
  } = {},
): Promise<SimResult> {
  const state = builder.state;
  const W = scripts.length;
  const cfg = resolveConfig(state.config, { worldSize: W, datasetLen: state.spec.dataset!.len() });
  const clock = new Timeline();
  const events = options.events?.(cfg, W);
  const ranks = scripts.map((s, r) => new FakeRank(r, clock, s));
  const spare = (s: FakeRankScript) => s.spare || s.joinAt !== undefined;
  const clients = ranks.map((f, r) => (f.client = spare(scripts[r]) ? RankClient.spare(f.rank, f) : new RankClient(f.rank, f)));
  await Promise.all(clients.map((c) => c.call("init", (api) => api.init({ rank: c.rank, batchSize: cfg.batchSize } as RankSetup))));
  const warnings: string[] = [];
  const warn = console.warn, now = performance.now;
  // The coordinator's own clock (reduce ms feeds ElChe's overhead) is the virtual one too.
  performance.now = () => clock.now;
  console.warn = (...a: unknown[]) => void warnings.push(a.map(String).join(" "));
  let coordinator!: Coordinator<M>;
  let settled = false;
  let state$: TrainedState | undefined, error: Error | undefined;
  let begin!: (h: DdpHandle) => void;
  const started = new Promise<DdpHandle>((r) => (begin = r));
  const result = (async () => {
    coordinator = new Coordinator(state, cfg, clients, FAKE_LAYOUT, await started, observer, events, options.persistence);
    const requestJoin = (r: number, place?: RankPlace) =>
      coordinator.requestJoin(r, place ?? { host: `fake-host-${r}`, adapter: "fake", transport: "remote" });
    scripts.forEach((s, r) => s.joinAt !== undefined && clock.at(s.joinAt, () => requestJoin(r)));
    options.onStart?.({ clock, ranks, requestJoin, pendingJoins: () => coordinator.pendingJoins, waitReport: () => coordinator.waitReport() });
    return await coordinator.run();
  })();
  const handle = new DdpHandle(W, ranks.map(() => "fake"), result, () => coordinator?.shutdown());
  begin(handle);
  result.then((s) => (state$ = s), (e) => (error = e)).finally(() => (settled = true));
  try {
    for (;;) {
      // With microtaskJitter, the next event fires after a random number of microtask
      // turns, in the middle of the coordinator's reaction to the last one (a completion
      // landing while the run loop awaits): interleavings a full settle never shows.
      const k = options.microtaskJitter ? Math.floor(options.microtaskJitter() * 40) : -1;
      if (k >= 0 && clock.pending > 0) for (let i = 0; i < k; i++) await Promise.resolve();
      else await settle();
      if (settled) break;
      let e = clock.next();
      // The coordinator's own ceilings are real timers: with realWaitMs, give them that long.
      for (const t0 = Date.now(); !e && !settled && Date.now() - t0 < (options.realWaitMs ?? 0);) {
        await new Promise((r) => setTimeout(r, 20));
        await settle();
        e = clock.next();
      }
      if (settled) break;
      if (!e) {
        const report = coordinator.waitReport();
        coordinator.shutdown();
        for (let i = 0; i < 100 && !settled; i++) {
          await settle();
          clock.next()?.fire();
        }
        throw new Error(`hang at virtual ${clock.now} ms: no event left and the run has not ended. ${report}`);
      }
      e.fire();
    }
  } finally {
    console.warn = warn;
    performance.now = now;
    await Promise.all(clients.map((c) => c.close()));
    await events?.close();
  }
  return { state: state$, error, handle, ranks, warnings, virtualMs: clock.now };
}

/**
 * The ranks' own count of what reached the model: give `observer` to {@link simulate}; after
 * the run, `count(result)` maps each epoch's batch offsets to the number of averaged frames
 * (or collective slots with mass) that held them, from each fake rank's log of its frames.
 */
export function modelLedger(epochs: number): { observer: RunObserver; count(out: SimResult): Map<number, number>[] } {
  const averaged: [number, number][] = []; // [round, rank]
  return {
    observer: { wantsFrames: true, frames: (round, per) => per.forEach((f, r) => f && averaged.push([round, r])) },
    count(out) {
      const folded = Array.from({ length: epochs }, () => new Map<number, number>());
      for (const [round, r] of averaged) {
        for (const [epoch, offset] of out.ranks[r].framed.get(round) ?? []) {
          folded[epoch].set(offset, (folded[epoch].get(offset) ?? 0) + 1);
        }
      }
      return folded;
    },
  };
}
