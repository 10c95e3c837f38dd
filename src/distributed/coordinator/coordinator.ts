/**
 * The scheduler of a multi-rank run: dispatches chunks under the policy's pacing, decides
 * when a reduce is due and when an epoch ends, admits and loses ranks, and stops the run
 * when it cannot go on. It composes the coordinator's rooms (docs/ARCHITECTURE.md): what a
 * rank holds is `schedule/in_flight.ts`'s, ElChe, the guards and the meta-controller are
 * `control/cadence.ts`'s, a reduce is `reduce/`'s, bundles are `persistence/`'s, the epoch
 * ledger and the callbacks' rank are `report/` and `schedule/epoch_role.ts`'s. It runs on
 * the main thread, reaches ranks only through `RankClient` (protocol/transport.ts), and
 * never touches a GPU.
 *
 * One of the three files over 450 lines, on purpose: dispatch, the reduce gate, epoch
 * boundaries, joins, rank loss and the stop reasons are one state machine over the same
 * few objects (the work in flight, the clock, the consensus, the membership, the halt);
 * what does not read them lives in the rooms.
 */
import type { Module } from "../../nn/mod.ts";
import type { BatchEvent, ChunkReport, Frame, LayoutTable, SyncAck } from "../protocol/messages.ts";
import { RankLostError } from "../protocol/errors.ts";
import type { RankView } from "../protocol/transport.ts";
import { boundedCall, quietly } from "./transport/callbacks.ts";
import { Cadence } from "./control/cadence.ts";
import { type BundleSource, Checkpoints } from "./persistence/checkpoints.ts";
import type { Chunk, EpochCoverage, NextChunkContext } from "./schedule/chunk_pool.ts";
import { InFlight } from "./schedule/in_flight.ts";
import { EvalCadence, type ResolvedRunConfig } from "./control/config.ts";
import { EpochReports } from "./report/epoch_report.ts";
import { EpochRole } from "./schedule/epoch_role.ts";
import { type SaveReason, stallCeilingMs, unrecoverableReason } from "./control/max_failure.ts";
import {
  type RankPlace,
  type ReduceEvent,
  type RunEvents,
  type RunObserver,
  type RunSink,
  trainedState,
  type TrainedState,
} from "./report/observer.ts";
import { OuterStepper } from "../protocol/outer.ts";
import type { Persistence, ResumeSeed } from "./persistence/persistence.ts";
import type { RankClient } from "./transport/rank_client.ts";
import { reduceCycle, type ReduceInput } from "./reduce/reduce_cycle.ts";
import { NcclGroup, reduceNccl } from "./reduce/reduce_nccl.ts";
import { Wake } from "./schedule/wake.ts";
import type { RunDefinition } from "./report/run_definition.ts";
import { planSource, type WorkSource } from "./schedule/work_source.ts";

export type { RankPlace, ReduceEvent, RunObserver };

/** Where the run is: the epoch to close next, reduce rounds, consensus versions, batches folded. */
interface RunClock {
  frontier: number;
  round: number;
  version: number;
  globalStep: number;
}

/** The last consensus and what it holds: the coverage and epoch of the reduce that made it. */
interface Consensus {
  params: Float32Array | null;
  buffers: Float32Array | null;
  coverage: EpochCoverage[];
  epoch: number;
}

/** Who trains: members ever admitted (maxFailure's W), ranks lost, slots waiting to join. */
interface Membership {
  members: number;
  dead: number;
  /** Standby slots whose join passed its checks and init, waiting for the next epoch boundary. */
  joins: Map<number, RankPlace>;
  /** Ranks lost while a reduce was running: their work is given back once it settles (it may fold some of it). */
  lostInReduce: Set<number>;
}

/** Why the run stops: a cooperative shutdown, a failure to rethrow, or an unrecoverable reason to save. */
interface Halt {
  shutdown: boolean;
  failure?: Error;
  stop?: { reason: SaveReason; cause: Error };
}

export class Coordinator<M extends Module> {
  readonly W: number;
  #cfg: ResolvedRunConfig;
  #state: RunDefinition;
  #ranks: RankClient[];
  /** Lost ranks whose slot was reopened ({@link reopen}): admitted back, they are dead no more. */
  #rejoining = new Set<number>();
  #layout: LayoutTable;
  #sink: RunSink;
  #observer: RunObserver;
  #cadence: Cadence;
  #outer?: OuterStepper;
  /** Restored outer momentum the nccl-* ranks' replicas still need (their first collective). */
  #outerSeed?: Float32Array;
  #pickSpace: number;
  #batchSize: number;
  #sources = new Map<number, WorkSource>();
  #reports: EpochReports;
  #work: InFlight;
  #clock: RunClock = { frontier: 0, round: 0, version: 0, globalStep: 0 };
  #consensus: Consensus = { params: null, buffers: null, coverage: [], epoch: 0 };
  #membership: Membership = { members: 0, dead: 0, joins: new Map(), lostInReduce: new Set() };
  #halt: Halt = { shutdown: false };
  #reducing = false;
  #wake = new Wake();
  /** performance.now() of the last batch, chunk or reduce: what the stall ceiling measures from. */
  #lastProgress = performance.now();
  #role: EpochRole;
  #events?: RunEvents;
  /** Epochs whose first chunk was sent (epochStart fired). */
  #started = new Set<number>();
  #resume?: ResumeSeed;
  #checkpoints: Checkpoints;
  /** Ranks the last dispatch pass offered work and the source told to hold (nothing for them this window). */
  #held = new Set<number>();
  /** The nccl-* ranks' shared-memory group (rebuilt over the survivors after a loss). */
  #nccl = new NcclGroup();

  constructor(
    state: RunDefinition,
    cfg: ResolvedRunConfig,
    ranks: RankClient[],
    layout: LayoutTable,
    sink: RunSink,
    observer: RunObserver = {},
    events?: RunEvents,
    persistence: Persistence = {},
  ) {
    this.#events = events;
    this.#resume = persistence.resume;
    this.#checkpoints = new Checkpoints(persistence.writer, cfg, persistence.resume?.startEpoch);
    this.#reports = new EpochReports(ranks.length);
    this.#state = state;
    this.#cfg = cfg;
    this.#ranks = ranks;
    this.W = ranks.length;
    this.#layout = layout;
    this.#sink = sink;
    this.#observer = observer;
    this.#batchSize = cfg.batchSize;
    this.#pickSpace = (state.spec.dataset?.len() ?? 0) * cfg.augment;
    this.#work = new InFlight(this.W, cfg.batchSize);
    const resume = persistence.resume;
    this.#cadence = new Cadence(state, cfg, this.W, this.#pickSpace, resume);
    if (resume) {
      this.#clock = { frontier: resume.startEpoch, round: resume.round, version: 0, globalStep: resume.globalStep };
      this.#consensus.epoch = resume.startEpoch;
    }
    this.#role = new EpochRole({
      ranks,
      cfg,
      state,
      elche: this.#cadence.elche,
      sink,
      events,
      bounded: (client, what, fn) => this.#bounded(client, what, fn),
      stopping: () => this.#halt.stop !== undefined,
    });
    if (state.outerFactory) this.#outer = new OuterStepper(state.outerFactory());
    const momentum = persistence.resume?.outer;
    if (momentum && this.#outer) {
      if (momentum.length !== layout.paramCount) {
        throw new RangeError(
          `Trainer.run: resumeFrom: the bundle's outer momentum has ${momentum.length} values, the model's parameters ${layout.paramCount}`,
        );
      }
      this.#outer.optimizer.loadState(momentum); // prev_global re-anchors on the resumed model
      this.#outerSeed = momentum;
    }
    for (const r of ranks) {
      this.#wire(r);
      // A spare slot (elastic membership): out of ElChe and every plan until admitted.
      if (r.standby) this.#cadence.dead(r.rank);
      else this.#membership.members++;
    }
  }

  /** The coordinator's hooks on a rank's client. */
  #wire(r: RankClient): void {
    r.onBatch = (ev) => this.#onBatch(ev);
    r.onDown = (err, fatal) => (fatal ? this.#fail(err) : this.#rankLost(r.rank, err));
    r.onStandbyDown = (err) => {
      this.#rejoining.delete(r.rank);
      if (this.#membership.joins.delete(r.rank)) console.warn(`flodl-webgpu: ${err.message} (it was waiting to join; the run goes on)`);
    };
  }

  /** After a rank is lost (not a fatal error), with its rank: where its slot may be reopened (run/launch.ts). */
  onRankLost?: (rank: number) => void;

  /**
   * Put `client`, a standby slot, in the place of rank `rank`, which was lost: the rank may
   * come back through it, admitted like a spare slot's at the next epoch boundary
   * ({@link requestJoin}), and counted alive again (no longer dead for `maxFailure`). False
   * when rank `rank` is not lost or `client` is not standby.
   */
  reopen(rank: number, client: RankClient): boolean {
    const old = this.#ranks[rank];
    if (!old || old.alive || old.standby || !client.standby || client.rank !== rank) return false;
    this.#ranks[rank] = client;
    this.#wire(client);
    this.#rejoining.add(rank);
    return true;
  }

  /**
   * A standby slot's rank is ready (its join was checked and its `init` answered): admit it
   * at the next epoch boundary, where it gets the consensus and trains from the
   * next epoch on. Ignored for a slot that is not standby.
   */
  requestJoin(rank: number, place: RankPlace): void {
    const c = this.#ranks[rank];
    if (!c?.standby || c.cause) return;
    this.#membership.joins.set(rank, place);
    this.#observer.rankWaiting?.(rank, place);
  }

  /** Ranks waiting for the next epoch boundary to join. */
  get pendingJoins(): number[] {
    return [...this.#membership.joins.keys()];
  }

  /** Cooperative cancel: no new chunks; in-flight ones finish; a final reduce; then done. */
  shutdown(): void {
    this.#halt.shutdown = true;
    this.#poke();
  }

  #poke(): void {
    this.#wake.poke();
  }

  #fail(e: Error): void {
    this.#halt.failure ??= e;
    this.#poke();
  }

  #alive(): RankClient[] {
    return this.#ranks.filter((r) => r.alive);
  }

  #onBatch(ev: BatchEvent): void {
    this.#lastProgress = performance.now();
    this.#work.batch(ev.rank);
    this.#cadence.batch(ev);
    this.#observer.batch?.(ev);
    this.#events?.batch(ev);
    if (this.#cfg.policy === "async") this.#poke();
  }

  #source(epoch: number): WorkSource {
    let s = this.#sources.get(epoch);
    if (!s) {
      s = planSource(epoch, {
        cfg: this.#cfg,
        pickSpace: this.#pickSpace,
        alive: this.#ranks.map((r) => r.alive),
        resumed: this.#resume?.coverage.get(epoch),
        elche: this.#cadence.elche,
      });
      this.#sources.set(epoch, s);
      this.#reports.open(epoch);
    }
    return s;
  }

  #counts(): number[] {
    return this.#cadence.counts(this.#ranks.map((c) => c.alive));
  }

  #ctx(rank: number): NextChunkContext {
    return {
      policy: this.#cfg.policy,
      counts: this.#counts(),
      calibrated: this.#cadence.elche.calibrated,
      hinted: this.#cadence.elche.hinted,
      pickSpace: this.#pickSpace,
      batchSize: this.#batchSize,
      stepsSinceAvg: this.#work.window(rank),
      maxOvershoot: this.#cfg.policy === "async" ? this.#cadence.elche.maxOvershoot : 0,
    };
  }

  #dispatch(): void {
    this.#held.clear();
    if (this.#halt.shutdown) return;
    const barrier = this.#cfg.policy !== "async";
    const last = this.#cfg.numEpochs - 1;
    const counts = this.#counts();
    for (const client of this.#alive()) {
      const r = client.rank;
      if (this.#work.flight(r)) continue;
      // Barrier-paced: a rank that met its window quota waits for the reduce.
      if (barrier && (this.#reducing || this.#work.window(r) >= Math.max(1, counts[r]))) continue;
      // Barrier-paced: only the frontier epoch. Async: may stream one epoch ahead.
      const f = this.#clock.frontier;
      const epochs = barrier ? [f] : [f, f + 1];
      for (const epoch of epochs) {
        if (epoch > last) break;
        const source = this.#source(epoch);
        if (source.exhaustedFor(r)) continue;
        const chunk = source.next(r, this.#ctx(r));
        if (chunk) this.#send(client, chunk, source);
        else this.#held.add(r);
        break;
      }
    }
  }

  #send(client: RankClient, chunk: Chunk, source: WorkSource): void {
    const r = client.rank;
    if (!this.#started.has(chunk.epoch)) {
      this.#started.add(chunk.epoch);
      this.#events?.epochStart(chunk.epoch);
    }
    this.#work.sent(r, chunk, source);
    const epochFn = this.#role.epochFn(chunk.epoch, r);
    client.call("train", (api) =>
      api.train({
        epoch: chunk.epoch,
        ranges: [[chunk.offset, chunk.size]],
        globalStep: this.#clock.globalStep,
        version: this.#clock.version,
        epochFn,
      })).then(
        (report) => this.#completed(r, chunk, source, report),
        () => this.#poke(), // the rank is down: onDown decided what that means
      );
  }

  #completed(r: number, chunk: Chunk, source: WorkSource, report: ChunkReport): void {
    if (!this.#ranks[r].alive) return;
    this.#lastProgress = performance.now();
    this.#work.completed(r, chunk, source, report);
    this.#reports.chunk(chunk.epoch, report);
    this.#poke();
  }

  /**
   * A lost rank's work goes back: whatever it trained that no reduce folded, and what it
   * had in flight, is served first to the survivors of every epoch not yet covered; what it
   * trained for nothing is accounted as discarded in its epoch's metrics.
   */
  #reclaim(r: number): void {
    this.#work.reclaim(r, (epoch, samples) => this.#reports.discard(epoch, r, samples));
    for (const s of this.#sources.values()) if (!s.isComplete()) s.forfeit(r);
  }

  /** Every alive rank met its window quota or has nothing more to do (gate). */
  #shouldReduce(): boolean {
    if (this.#reducing) return false;
    const alive = this.#alive();
    if (!alive.some((c) => this.#work.window(c.rank) > 0)) return false;
    const barrier = this.#cfg.policy !== "async";
    const counts = this.#counts();
    return alive.every((c) => {
      const r = c.rank;
      if (barrier && this.#work.flight(r)) return false;
      if (this.#work.window(r) >= Math.max(1, counts[r])) return true;
      return this.#quiesced(r);
    });
  }

  /**
   * Nothing in flight for r and nothing it can take now: the end of the epochs it may work
   * on, or the source told it to hold for this window (a final-window plan without a share
   * for it). Held ranks are woken after the reduce.
   */
  #quiesced(r: number): boolean {
    if (this.#work.flight(r)) return false;
    if (this.#halt.shutdown || this.#held.has(r)) return true;
    const last = this.#cfg.numEpochs - 1, f = this.#clock.frontier;
    const epochs = this.#cfg.policy === "async" ? [f, f + 1] : [f];
    return epochs.every((e) => e > last || this.#source(e).exhaustedFor(r));
  }

  /**
   * Nothing is left to train after the window now in flight: its reduce makes the final
   * consensus, so it ships f32 frames even on a bf16 wire (the TrainedState and
   * the final bundle are exact).
   */
  #lastWork(): boolean {
    if (this.#halt.shutdown) return true;
    for (let e = this.#clock.frontier; e < this.#cfg.numEpochs; e++) {
      const s = this.#sources.get(e);
      if (!s || !s.isTrained()) return false;
    }
    return true;
  }

  /** Run to the end; resolves with the consensus. */
  async run(): Promise<TrainedState> {
    const stall = stallCeilingMs(this.#cfg.heartbeatTimeoutSecs);
    for (;;) {
      this.#wake.pending = false;
      if (this.#halt.stop) await this.#abort(this.#halt.stop.reason, this.#halt.stop.cause);
      if (this.#halt.failure) throw this.#halt.failure;
      this.#dispatch();
      if (this.#shouldReduce()) {
        await this.#reduce(this.#lastWork(), stall);
        continue;
      }
      if (await this.#epochBoundary()) continue;
      const idle = this.#work.idle;
      if (idle && (this.#halt.shutdown || this.#clock.frontier >= this.#cfg.numEpochs)) break;
      if (idle && !this.#wake.pending) {
        // Nothing runs, nothing was dispatched, no reduce is due, and nothing is on its way
        // (no completion can come): sleeping here would be forever. Stop, say what is left.
        this.#halt.stop ??= {
          reason: "reduce_stall",
          cause: new Error(`no rank can take the remaining batches of epoch ${this.#clock.frontier + 1}: ${this.#waitReport(0)}`),
        };
        continue;
      }
      // A completion that landed while this pass awaited (an epoch boundary) poked no one:
      // look again instead of sleeping through it.
      if (!this.#wake.pending) await this.#idle(stall);
    }
    if (this.#alive().some((c) => this.#work.window(c.rank) > 0) || this.#consensus.params === null) await this.#reduce(true, stall);
    if (this.#halt.stop) await this.#abort(this.#halt.stop.reason, this.#halt.stop.cause);
    if (this.#halt.failure) throw this.#halt.failure;
    await this.#role.evaluate(this.#cfg.numEpochs);
    if (this.#halt.stop) await this.#abort(this.#halt.stop.reason, this.#halt.stop.cause);
    if (this.#checkpoints.writer) await this.#save(this.#halt.shutdown ? "graceful_shutdown" : "checkpoint");
    return trainedState(this.#layout, this.#consensus.params!, this.#consensus.buffers!);
  }

  /**
   * Sleep until poked (wake.ts); every `WAIT_REPORT_MS` without one, say on stderr what is
   * awaited. A window that makes no progress for `stallMs` (ranks alive and beating, their
   * chunks never ending) stops the run as a stalled reduce would (`reduce_stall`).
   */
  #idle(stallMs: number): Promise<void> {
    return this.#wake.sleep(stallMs - (performance.now() - this.#lastProgress), (ms) => this.#waitReport(ms), () => {
      const secs = (stallMs / 1000).toFixed(0);
      this.#halt.stop ??= { reason: "reduce_stall", cause: new Error(`the window made no progress for ${secs} s: ${this.#waitReport(stallMs)}`) };
    });
  }

  /** What the coordinator waits for now, per rank (diagnostics, the fake-rank harness). */
  waitReport(): string {
    return this.#waitReport(performance.now() - this.#lastProgress);
  }

  /** One line: what the coordinator waits for, per rank. */
  #waitReport(waitedMs: number): string {
    const now = performance.now(), counts = this.#counts();
    const ranks = this.#ranks.map((c) => {
      const f = this.#work.flight(c.rank);
      const state = c.standby
        ? (this.#membership.joins.has(c.rank) ? "waiting to join" : "vacant")
        : !c.alive
        ? "lost"
        : f
        ? `training epoch ${f.chunk.epoch + 1} samples ${f.chunk.offset}+${f.chunk.size} for ${((now - f.since) / 1000).toFixed(0)} s`
        : "idle";
      const compiling = c.alive && c.compiling && c.compilingWhat
        ? `compiling GPU pipelines for ${((now - c.compilingWhat.since) / 1000).toFixed(0)} s (now ${c.compilingWhat.what}), `
        : "";
      return `rank ${c.rank} ${compiling}${state}, ${this.#work.window(c.rank)}/${Math.max(1, counts[c.rank])} batches of the window`;
    });
    // A rank compiling is busy, not stuck: say so first (a compile blocks its thread for
    // seconds on a software adapter, and its first steps compile many).
    const compiling = this.#ranks.filter((c) => c.alive && c.compiling).map((c) => c.rank);
    const head = compiling.length
      ? `coordinator: waiting ${(waitedMs / 1000).toFixed(0)} s for rank${compiling.length > 1 ? "s" : ""} ${compiling.join(", ")} to compile GPU pipelines`
      : `coordinator: nothing happened for ${(waitedMs / 1000).toFixed(0)} s`;
    return `${head} (epoch ${this.#clock.frontier + 1}/${this.#cfg.numEpochs}, reduce due: ${this.#shouldReduce() ? "yes" : "no"}): ${ranks.join("; ")}`;
  }

  /** A rank was lost (worker died, device lost, silent): continue on the survivors. */
  #rankLost(r: number, err: Error): void {
    this.#membership.dead++;
    this.#cadence.dead(r);
    // Mid-reduce, its frame may yet be folded (it answered its snapshot before it was lost).
    if (this.#reducing) this.#membership.lostInReduce.add(r);
    else this.#reclaim(r);
    this.#work.reset(r);
    this.#role.lost(r);
    const reason = err.message;
    console.warn(`flodl-webgpu: ${reason}; continuing on ${this.#alive().length} rank(s)`);
    this.#events?.rankLost(r, this.#clock.frontier, reason);
    this.#observer.rankLost?.(r, reason);
    const why = unrecoverableReason(this.#membership.dead, this.#membership.members, "cpu", this.#cfg.maxFailure);
    if (why) this.#halt.stop ??= { reason: why, cause: err };
    this.#poke();
    if (!this.#halt.stop) this.onRankLost?.(r);
  }

  /** Unrecoverable: write the bundle with the reason (when savePath is set) and stop with a clear error. */
  async #abort(reason: SaveReason, cause: Error): Promise<never> {
    const where = await this.#checkpoints.onAbort(reason, this.#consensus.params ? () => this.#bundleSource() : null, this.#observer);
    const alive = this.#alive().length;
    const err = new Error(
      `Training stopped (${reason}): ${this.#membership.dead} of ${this.#membership.members} rank(s) lost, ${alive} alive` +
        `${this.#cfg.maxFailure ? ` (maxFailure limit ${this.#cfg.maxFailure.limit(this.#membership.members)})` : ""}; last: ${cause.message}${where}`,
      { cause },
    );
    (err as Error & { saveReason?: string }).saveReason = reason;
    this.#halt.failure = err;
    throw err;
  }

  /** What a bundle is made of now: the consensus of the last reduce and the state at its trigger. */
  #bundleSource(): BundleSource {
    const holder = this.#alive()[0];
    const trend = this.#cadence.guard.trendHistory();
    return {
      consensus: this.#consensus.params!,
      buffers: this.#consensus.buffers!,
      layout: this.#layout,
      optim: () => holder ? this.#bounded(holder, "optimizer state", (api) => api.optimizerState()).catch(() => undefined) : Promise.resolve(undefined),
      outer: this.#outer ? this.#outer.optimizer.state() : undefined,
      elche: this.#cfg.policy !== "sync" ? { ...this.#cadence.elche.exportState(), ...(trend.length ? { trend_history: trend } : {}) } : undefined,
      epoch: this.#consensus.epoch,
      globalStep: this.#clock.globalStep,
      round: this.#clock.round,
      world: this.W,
      coverage: this.#consensus.coverage,
    };
  }

  #save(reason: SaveReason): Promise<void> {
    return this.#checkpoints.save(reason, () => this.#bundleSource(), this.#observer);
  }

  /** Coverage of every epoch in progress (the reduce's trigger snapshot). */
  #coverage(): EpochCoverage[] {
    const out: EpochCoverage[] = [];
    for (const [epoch, s] of [...this.#sources].sort((a, b) => a[0] - b[0])) {
      if (epoch >= this.#clock.frontier) out.push(s.coverage());
    }
    return out;
  }

  /** Close the frontier epoch when its work is complete (and, barrier-paced, reduced). */
  async #epochBoundary(): Promise<boolean> {
    const e = this.#clock.frontier;
    if (e >= this.#cfg.numEpochs) return false;
    const source = this.#sources.get(e);
    if (!source || !source.isComplete()) return false;
    if (this.#cfg.policy !== "async" && this.#alive().some((c) => this.#work.window(c.rank) > 0)) return false;
    this.#clock.frontier++;
    const run = this.#reports.close(e, this.#cadence.elche.anchor, this.#cadence.elche.batchCounts);
    this.#sink.metrics(run);
    this.#events?.epochEnd(run);
    await quietly("metricsFn", () => this.#state.metricsFn?.(run));
    const k = e + 1;
    if (k < this.#cfg.numEpochs) {
      if (EvalCadence.due(this.#cfg.evalEvery, k)) await this.#role.evaluate(k);
      const every = this.#cfg.checkpointEvery;
      if (every && this.#state.spec.checkpointFn && k % every === 0) await this.#role.checkpointFn(k);
      await this.#admit(k);
    }
    return true;
  }

  /**
   * Admit the ranks waiting to join, at the boundary before epoch `epoch`: each
   * loads the consensus (parameters and buffers, f32; its optimizer is fresh from its
   * factory, as a rank's at the start), becomes a member, and ElChe sizes it as an
   * uncalibrated rank until its own windows report. The next epoch's work is planned over
   * the new membership when its source is made (under Async an epoch already streaming
   * keeps its members; the new rank starts with the one after). With no consensus yet
   * (Async before its first reduce) the joins wait for the next boundary.
   */
  async #admit(epoch: number): Promise<void> {
    if (this.#membership.joins.size === 0 || this.#halt.shutdown || this.#halt.stop || this.#halt.failure || this.#consensus.params === null) return;
    for (const [r, place] of [...this.#membership.joins]) {
      this.#membership.joins.delete(r);
      const client = this.#ranks[r];
      const frame: Frame = {
        rank: r,
        round: this.#clock.round,
        batches: 0,
        dtype: "f32",
        params: this.#consensus.params.slice(),
        buffers: this.#consensus.buffers!.slice(),
      };
      const ceiling = stallCeilingMs(this.#cfg.heartbeatTimeoutSecs);
      const loaded = await boundedCall(client, "load", (api) => api.load(frame), ceiling, (err) => {
        client.fail(new RankLostError(r, `rank ${r} did not load the consensus to join: ${err.message}`), false);
      }).then(() => true, () => false); // a failed join ends the slot (onStandbyDown said why)
      if (!loaded || !client.admit()) continue;
      // A lost rank back in its own slot is alive again; any other joiner is a new member.
      if (this.#rejoining.delete(r)) this.#membership.dead--;
      else this.#membership.members++;
      this.#work.reset(r);
      this.#cadence.joined(r);
      this.#events?.rankJoined(r, epoch, place);
      this.#observer.rankJoined?.(r, epoch, place);
    }
    this.#poke();
  }

  /** A rank call bounded by the stall ceiling (callbacks.ts); a stall stops the run with `reduce_stall`. */
  #bounded<T>(client: RankClient, what: string, fn: (api: RankView) => Promise<T>): Promise<T> {
    return boundedCall(client, what, fn, stallCeilingMs(this.#cfg.heartbeatTimeoutSecs), (err) => {
      this.#halt.stop ??= { reason: "reduce_stall", cause: err };
    });
  }

  /** Run one reduce cycle (reduce_cycle.ts) and fold it into the schedule. `exact`: f32 frames (the final consensus). */
  async #reduce(exact: boolean, stallMs: number): Promise<void> {
    this.#reducing = true;
    const t0 = performance.now();
    const round = ++this.#clock.round;
    const coverageEpoch = this.#clock.frontier;
    try {
      const input: ReduceInput = {
        round,
        exact,
        stallMs,
        ranks: this.#ranks,
        layout: this.#layout,
        gamma: this.#cfg.elche.gamma,
        bf16Wire: this.#cfg.elche.bf16Wire,
        easgdAlpha: this.#cfg.easgdAlpha,
        outer: this.#outer,
        version: this.#clock.version + 1,
        globalStep: this.#clock.globalStep,
        observer: this.#observer,
        averaged: (c) => {
          this.#consensus.params = c.params;
          this.#consensus.buffers = c.buffers;
        },
      };
      // nccl-*: the ranks reduce among themselves through shared memory (reduce_nccl.ts).
      const out = this.#cfg.backend === "nccl"
        ? await reduceNccl({ ...input, steps: this.#work.windows(), group: this.#nccl, outerSeed: this.#outerSeed })
        : await reduceCycle(input);
      if (out.consensus) {
        this.#outerSeed = undefined; // the replicas exist now
        this.#work.fold(out.steps, (epoch, r, offset, samples) => this.#observer.chunk?.(epoch, r, offset, samples));
      }
      const ms = performance.now() - t0;
      this.#finishCycle(out.steps, out.acks, ms, out.consensus === null, { round, ...out });
      if (out.consensus) {
        // What the consensus holds, by construction: the folded batches.
        this.#consensus.coverage = this.#coverage();
        this.#consensus.epoch = coverageEpoch;
        if (!exact) {
          await this.#checkpoints.afterReduce(this.#clock.frontier, Math.max(this.#clock.frontier, ...this.#started), () => this.#bundleSource(), this.#observer);
        }
      }
    } catch (e) {
      if (!(e instanceof Error) || !/made no progress/.test(e.message)) throw e;
      this.#halt.stop ??= { reason: "reduce_stall", cause: e };
    } finally {
      this.#reducing = false;
      for (const r of this.#membership.lostInReduce) this.#reclaim(r);
      this.#membership.lostInReduce.clear();
      this.#lastProgress = performance.now();
    }
  }

  /** The backend-independent head of a cycle: ElChe timing, guard, meta, counters. */
  #finishCycle(
    steps: number[],
    acks: readonly SyncAck[],
    ms: number,
    zeroMass: boolean,
    io: { round: number; bytesUp: number; bytesDown: number; averageMs: number },
  ): void {
    const { verdict, report, anchorBefore, telemetry } = this.#cadence.cycle(steps, acks, ms, zeroMass);
    const kUsed = steps.reduce((a, b) => a + b, 0);
    if (!zeroMass) {
      this.#clock.version++;
      this.#clock.globalStep += kUsed;
    }
    this.#work.windowDone(steps);
    for (const s of this.#sources.values()) s.beginWindow();
    const epoch = Math.min(this.#clock.frontier, this.#cfg.numEpochs - 1);
    this.#reports.reduced(epoch, io.bytesUp + io.bytesDown, ms);
    const event: ReduceEvent = {
      round: io.round,
      epoch,
      steps,
      ms,
      averageMs: io.averageMs,
      bytesUp: io.bytesUp,
      bytesDown: io.bytesDown,
      anchor: this.#cadence.elche.anchor,
      counts: this.#counts(),
      divergence: [...report.deltas],
      verdict: verdict.kind,
      zeroMass,
    };
    this.#observer.reduce?.(event);
    this.#events?.reduce(event, {
      stepsPerEpoch: Math.floor(this.#pickSpace / this.#batchSize),
      anchorBefore,
      telemetry,
      globalStep: this.#clock.globalStep,
    });
  }

}
