/**
 * The scheduler of a multi-rank run: dispatches chunks under the
 * policy's pacing, decides when a reduce is due and when an epoch ends, runs ElChe, the
 * guards and the meta-controller through `Cadence`, schedules eval and callbacks, and
 * stops the run when it cannot go on. What happens inside a reduce is
 * `reduce_cycle.ts`'s; bundles are `checkpoints.ts`'s; the epoch ledger is
 * `epoch_report.ts`'s; the callbacks' rank is `epoch_role.ts`'s. It runs on the main
 * thread, reaches ranks only through `RankClient` (protocol/transport.ts), and never
 * touches a GPU.
 *
 * Over ~400 lines on purpose: dispatch, the reduce gate, epoch boundaries, rank loss and
 * the stop reasons are one state machine over one set of fields (flight, window counts,
 * frontier, version); what does not read them has been moved out (see above).
 */
import type { Module } from "../../nn/mod.ts";
import type { BatchEvent, ChunkReport, Frame, LayoutTable, SyncAck } from "../protocol/messages.ts";
import { RankLostError } from "../protocol/errors.ts";
import type { RankView } from "../protocol/transport.ts";
import { boundedCall, quietly } from "./transport/callbacks.ts";
import { Cadence } from "./control/cadence.ts";
import { type BundleSource, Checkpoints } from "./persistence/checkpoints.ts";
import type { Chunk, EpochCoverage, NextChunkContext } from "./schedule/chunk_pool.ts";
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

interface Flight {
  chunk: Chunk;
  source: WorkSource;
  /** performance.now() when the chunk was sent. */
  since: number;
}

/**
 * A chunk a rank holds work on that no reduce has wholly folded into the consensus. A rank
 * trains its chunks in the order they were sent and each frame counts the batches since
 * the last one folded, so a reduce's `steps[r]` folds the next that many batches of this
 * list, across chunks and epochs (a sample counts once the consensus holds it).
 */
interface Unfolded {
  chunk: Chunk;
  source: WorkSource;
  /** Batches the rank reported trained (its reply); undefined while in flight. */
  trained?: number;
  /** Leading batches a reduce folded. */
  folded: number;
}

export class Coordinator<M extends Module> {
  readonly W: number;
  #cfg: ResolvedRunConfig;
  #state: RunDefinition;
  #ranks: RankClient[];
  #layout: LayoutTable;
  #sink: RunSink;
  #observer: RunObserver;
  #cadence: Cadence;
  #outer?: OuterStepper;
  /** Restored outer momentum the nccl-* ranks' replicas still need (their first collective). */
  #outerSeed?: Float32Array;
  #P: number;
  #B: number;
  #sources = new Map<number, WorkSource>();
  #reports: EpochReports;
  #flight: (Flight | null)[];
  #n: number[];
  /**
   * NOTE: batch events and chunk replies reach this thread on different message channels
   * (a worker's sink is a comlink proxy of its own port), so a chunk's reply may land
   * before its last batch events. Counting only events, a barrier-paced dispatch then saw a
   * rank short of its window quota and gave it a second chunk in the same window, a timing
   * dependent schedule. So a reply completes the chunk's count: `#seen` counts the events of
   * the chunk in flight, the reply adds what is missing to `#n` and owes it (`#owed`), and
   * the late events pay the debt instead of counting twice.
   */
  #seen: number[];
  #owed: number[];
  /** Per rank, its chunks not yet wholly in the consensus, oldest first. */
  #unfolded: Unfolded[][];
  /** Ranks lost while a reduce was running: their work is given back once it settles (it may fold some of it). */
  #lostInReduce = new Set<number>();
  #frontier = 0;
  #round = 0;
  #version = 0;
  #globalStep = 0;
  #reducing = false;
  #stop = false;
  #failure?: Error;
  #wake = new Wake();
  /** performance.now() of the last batch, chunk or reduce: what the stall ceiling measures from. */
  #lastProgress = performance.now();
  #role: EpochRole;
  #consensus: Float32Array | null = null;
  #events?: RunEvents;
  #started = new Set<number>();
  #resume?: ResumeSeed;
  #checkpoints: Checkpoints;
  /** Coverage the current consensus holds: what the reduce that made it had folded. */
  #ckptCoverage: EpochCoverage[] = [];
  #ckptEpoch = 0;
  #stopReason?: { reason: SaveReason; cause: Error };
  #dead = 0;
  /** Ranks that were members at some point: the start's, then each one admitted (maxFailure's W). */
  #members = 0;
  /** Standby slots whose join passed its checks and init, waiting for the next epoch boundary. */
  #joins = new Map<number, RankPlace>();
  /** Ranks the last dispatch pass offered work and the source told to hold (nothing for them this window). */
  #held = new Set<number>();
  #consensusBuffers: Float32Array | null = null;
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
    this.#B = cfg.batchSize;
    this.#P = (state.spec.dataset?.len() ?? 0) * cfg.augment;
    const resume = persistence.resume;
    this.#cadence = new Cadence(state, cfg, this.W, this.#P, resume);
    if (resume) {
      this.#frontier = resume.startEpoch;
      this.#ckptEpoch = resume.startEpoch;
      this.#globalStep = resume.globalStep;
      this.#round = resume.round;
    }
    this.#role = new EpochRole({
      ranks,
      cfg,
      state,
      elche: this.#cadence.elche,
      sink,
      events,
      bounded: (client, what, fn) => this.#bounded(client, what, fn),
      stopping: () => this.#stopReason !== undefined,
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
    this.#flight = new Array(this.W).fill(null);
    this.#n = new Array(this.W).fill(0);
    this.#seen = new Array(this.W).fill(0);
    this.#owed = new Array(this.W).fill(0);
    this.#unfolded = Array.from({ length: this.W }, () => []);
    for (const r of ranks) {
      r.onBatch = (ev) => this.#onBatch(ev);
      r.onDown = (err, fatal) => (fatal ? this.#fail(err) : this.#rankLost(r.rank, err));
      if (r.standby) {
        // A spare slot (elastic membership): out of ElChe and every plan until admitted.
        this.#cadence.dead(r.rank);
        r.onStandbyDown = (err) => {
          if (this.#joins.delete(r.rank)) console.warn(`flodl-webgpu: ${err.message} (it was waiting to join; the run goes on)`);
        };
      } else this.#members++;
    }
  }

  /**
   * A standby slot's rank is ready (its join was checked and its `init` answered): admit it
   * at the next epoch boundary, where it gets the consensus and trains from the
   * next epoch on. Ignored for a slot that is not standby.
   */
  requestJoin(rank: number, place: RankPlace): void {
    const c = this.#ranks[rank];
    if (!c?.standby || c.cause) return;
    this.#joins.set(rank, place);
    this.#observer.rankWaiting?.(rank, place);
  }

  /** Ranks waiting for the next epoch boundary to join. */
  get pendingJoins(): number[] {
    return [...this.#joins.keys()];
  }

  /** Cooperative cancel: no new chunks; in-flight ones finish; a final reduce; then done. */
  shutdown(): void {
    this.#stop = true;
    this.#poke();
  }

  #poke(): void {
    this.#wake.poke();
  }

  #fail(e: Error): void {
    this.#failure ??= e;
    this.#poke();
  }

  #alive(): RankClient[] {
    return this.#ranks.filter((r) => r.alive);
  }

  #onBatch(ev: BatchEvent): void {
    this.#lastProgress = performance.now();
    const r = ev.rank;
    if (this.#owed[r] > 0) this.#owed[r]--; // counted when its chunk's reply came first
    else {
      this.#n[r]++;
      this.#seen[r]++;
    }
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
        pickSpace: this.#P,
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
      pickSpace: this.#P,
      batchSize: this.#B,
      stepsSinceAvg: this.#n[rank],
      maxOvershoot: this.#cfg.policy === "async" ? this.#cadence.elche.maxOvershoot : 0,
    };
  }

  #dispatch(): void {
    this.#held.clear();
    if (this.#stop) return;
    const barrier = this.#cfg.policy !== "async";
    const last = this.#cfg.numEpochs - 1;
    const counts = this.#counts();
    for (const client of this.#alive()) {
      const r = client.rank;
      if (this.#flight[r]) continue;
      // Barrier-paced: a rank that met its window quota waits for the reduce.
      if (barrier && (this.#reducing || this.#n[r] >= Math.max(1, counts[r]))) continue;
      // Barrier-paced: only the frontier epoch. Async: may stream one epoch ahead.
      const epochs = barrier ? [this.#frontier] : [this.#frontier, this.#frontier + 1];
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
    this.#flight[r] = { chunk, source, since: performance.now() };
    this.#unfolded[r].push({ chunk, source, folded: 0 });
    const epochFn = this.#role.epochFn(chunk.epoch, r);
    client.call("train", (api) =>
      api.train({
        epoch: chunk.epoch,
        ranges: [[chunk.offset, chunk.size]],
        globalStep: this.#globalStep,
        version: this.#version,
        epochFn,
      })).then(
        (report) => this.#completed(r, chunk, source, report),
        () => this.#poke(), // the rank is down: onDown decided what that means
      );
  }

  #completed(r: number, chunk: Chunk, source: WorkSource, report: ChunkReport): void {
    if (!this.#ranks[r].alive) return;
    this.#lastProgress = performance.now();
    this.#flight[r] = null;
    const missing = Math.max(0, report.batches - this.#seen[r]);
    this.#n[r] += missing;
    this.#owed[r] += missing;
    this.#seen[r] = 0;
    const trained = Math.min(chunk.batches, Math.max(0, report.batches));
    source.complete(r, chunk.id, trained);
    const open = this.#unfolded[r].find((u) => u.chunk === chunk);
    if (open) {
      open.trained = Math.max(trained, open.folded);
      if (open.folded === open.trained) this.#unfolded[r].splice(this.#unfolded[r].indexOf(open), 1);
    }
    this.#reports.chunk(chunk.epoch, report);
    this.#poke();
  }

  /**
   * A reduce put `steps[r]` more batches of each rank's work into the consensus: the next
   * that many of its unfolded chunks' batches, oldest first. Only now do they count as
   * trained (the sources' coverage, the observer's ledger).
   */
  #fold(steps: readonly number[]): void {
    const B = this.#B;
    steps.forEach((k, r) => {
      const q = this.#unfolded[r];
      while (k > 0 && q.length > 0) {
        const u = q[0];
        const t = Math.min(k, (u.trained ?? u.chunk.batches) - u.folded);
        if (t <= 0) break; // a count beyond what was sent: nothing of ours to fold
        u.source.fold(r, u.chunk.id, t);
        this.#observer.chunk?.(u.chunk.epoch, r, u.chunk.offset + u.folded * B, t * B);
        u.folded += t;
        k -= t;
        if (u.folded === (u.trained ?? u.chunk.batches)) {
          if (u.trained !== undefined) q.shift();
          else break; // in flight, every batch folded: its reply settles it
        }
      }
    });
  }

  /**
   * A lost rank's work goes back: whatever it trained that no reduce folded, and what it
   * had in flight, is served first to the survivors of every epoch not yet covered; what it
   * trained for nothing is accounted as discarded in its epoch's metrics.
   */
  #reclaim(r: number): void {
    for (const u of this.#unfolded[r]) {
      const wasted = (u.trained ?? 0) - u.folded;
      if (wasted > 0) this.#reports.discard(u.chunk.epoch, r, wasted * this.#B);
    }
    this.#unfolded[r] = [];
    for (const s of this.#sources.values()) if (!s.isComplete()) s.forfeit(r);
  }

  /** Every alive rank met its window quota or has nothing more to do (gate). */
  #shouldReduce(): boolean {
    if (this.#reducing) return false;
    const alive = this.#alive();
    if (!alive.some((c) => this.#n[c.rank] > 0)) return false;
    const barrier = this.#cfg.policy !== "async";
    const counts = this.#counts();
    return alive.every((c) => {
      const r = c.rank;
      if (barrier && this.#flight[r]) return false;
      if (this.#n[r] >= Math.max(1, counts[r])) return true;
      return this.#quiesced(r);
    });
  }

  /**
   * Nothing in flight for r and nothing it can take now: the end of the epochs it may work
   * on, or the source told it to hold for this window (a final-window plan without a share
   * for it). Held ranks are woken after the reduce.
   */
  #quiesced(r: number): boolean {
    if (this.#flight[r]) return false;
    if (this.#stop || this.#held.has(r)) return true;
    const last = this.#cfg.numEpochs - 1;
    const epochs = this.#cfg.policy === "async" ? [this.#frontier, this.#frontier + 1] : [this.#frontier];
    return epochs.every((e) => e > last || this.#source(e).exhaustedFor(r));
  }

  /**
   * Nothing is left to train after the window now in flight: its reduce makes the final
   * consensus, so it ships f32 frames even on a bf16 wire (the TrainedState and
   * the final bundle are exact).
   */
  #lastWork(): boolean {
    if (this.#stop) return true;
    for (let e = this.#frontier; e < this.#cfg.numEpochs; e++) {
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
      if (this.#stopReason) await this.#abort(this.#stopReason.reason, this.#stopReason.cause);
      if (this.#failure) throw this.#failure;
      this.#dispatch();
      if (this.#shouldReduce()) {
        await this.#reduce(this.#lastWork(), stall);
        continue;
      }
      if (await this.#epochBoundary()) continue;
      const idle = this.#flight.every((f) => f === null);
      if (idle && (this.#stop || this.#frontier >= this.#cfg.numEpochs)) break;
      if (idle && !this.#wake.pending) {
        // Nothing runs, nothing was dispatched, no reduce is due, and nothing is on its way
        // (no completion can come): sleeping here would be forever. Stop, say what is left.
        this.#stopReason ??= {
          reason: "reduce_stall",
          cause: new Error(`no rank can take the remaining batches of epoch ${this.#frontier + 1}: ${this.#waitReport(0)}`),
        };
        continue;
      }
      // A completion that landed while this pass awaited (an epoch boundary) poked no one:
      // look again instead of sleeping through it.
      if (!this.#wake.pending) await this.#idle(stall);
    }
    if (this.#alive().some((c) => this.#n[c.rank] > 0) || this.#consensus === null) await this.#reduce(true, stall);
    if (this.#stopReason) await this.#abort(this.#stopReason.reason, this.#stopReason.cause);
    if (this.#failure) throw this.#failure;
    await this.#role.evaluate(this.#cfg.numEpochs);
    if (this.#stopReason) await this.#abort(this.#stopReason.reason, this.#stopReason.cause);
    if (this.#checkpoints.writer) await this.#save(this.#stop ? "graceful_shutdown" : "checkpoint");
    return trainedState(this.#layout, this.#consensus!, this.#consensusBuffers!);
  }

  /**
   * Sleep until poked (wake.ts); every `WAIT_REPORT_MS` without one, say on stderr what is
   * awaited. A window that makes no progress for `stallMs` (ranks alive and beating, their
   * chunks never ending) stops the run as a stalled reduce would (`reduce_stall`).
   */
  #idle(stallMs: number): Promise<void> {
    return this.#wake.sleep(stallMs - (performance.now() - this.#lastProgress), (ms) => this.#waitReport(ms), () => {
      const secs = (stallMs / 1000).toFixed(0);
      this.#stopReason ??= { reason: "reduce_stall", cause: new Error(`the window made no progress for ${secs} s: ${this.#waitReport(stallMs)}`) };
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
      const f = this.#flight[c.rank];
      const state = c.standby
        ? (this.#joins.has(c.rank) ? "waiting to join" : "vacant")
        : !c.alive
        ? "lost"
        : f
        ? `training epoch ${f.chunk.epoch + 1} samples ${f.chunk.offset}+${f.chunk.size} for ${((now - f.since) / 1000).toFixed(0)} s`
        : "idle";
      const compiling = c.alive && c.compiling && c.compilingWhat
        ? `compiling GPU pipelines for ${((now - c.compilingWhat.since) / 1000).toFixed(0)} s (now ${c.compilingWhat.what}), `
        : "";
      return `rank ${c.rank} ${compiling}${state}, ${this.#n[c.rank]}/${Math.max(1, counts[c.rank])} batches of the window`;
    });
    // A rank compiling is busy, not stuck: say so first (a compile blocks its thread for
    // seconds on a software adapter, and its first steps compile many).
    const compiling = this.#ranks.filter((c) => c.alive && c.compiling).map((c) => c.rank);
    const head = compiling.length
      ? `coordinator: waiting ${(waitedMs / 1000).toFixed(0)} s for rank${compiling.length > 1 ? "s" : ""} ${compiling.join(", ")} to compile GPU pipelines`
      : `coordinator: nothing happened for ${(waitedMs / 1000).toFixed(0)} s`;
    return `${head} (epoch ${this.#frontier + 1}/${this.#cfg.numEpochs}, reduce due: ${this.#shouldReduce() ? "yes" : "no"}): ${ranks.join("; ")}`;
  }

  /** A rank was lost (worker died, device lost, silent): continue on the survivors. */
  #rankLost(r: number, err: Error): void {
    this.#dead++;
    this.#cadence.dead(r);
    // Mid-reduce, its frame may yet be folded (it answered its snapshot before it was lost).
    if (this.#reducing) this.#lostInReduce.add(r);
    else this.#reclaim(r);
    this.#flight[r] = null;
    this.#n[r] = 0;
    this.#seen[r] = 0;
    this.#owed[r] = 0;
    this.#role.lost(r);
    const reason = err.message;
    console.warn(`flodl-webgpu: ${reason}; continuing on ${this.#alive().length} rank(s)`);
    this.#events?.rankLost(r, this.#frontier, reason);
    this.#observer.rankLost?.(r, reason);
    const why = unrecoverableReason(this.#dead, this.#members, "cpu", this.#cfg.maxFailure);
    if (why) this.#stopReason ??= { reason: why, cause: err };
    this.#poke();
  }

  /** Unrecoverable: write the bundle with the reason (when savePath is set) and stop with a clear error. */
  async #abort(reason: SaveReason, cause: Error): Promise<never> {
    const where = await this.#checkpoints.onAbort(reason, this.#consensus ? () => this.#bundleSource() : null, this.#observer);
    const alive = this.#alive().length;
    const err = new Error(
      `Training stopped (${reason}): ${this.#dead} of ${this.#members} rank(s) lost, ${alive} alive` +
        `${this.#cfg.maxFailure ? ` (maxFailure limit ${this.#cfg.maxFailure.limit(this.#members)})` : ""}; last: ${cause.message}${where}`,
      { cause },
    );
    (err as Error & { saveReason?: string }).saveReason = reason;
    this.#failure = err;
    throw err;
  }

  /** What a bundle is made of now: the consensus of the last reduce and the state at its trigger. */
  #bundleSource(): BundleSource {
    const holder = this.#alive()[0];
    const trend = this.#cadence.guard.trendHistory();
    return {
      consensus: this.#consensus!,
      buffers: this.#consensusBuffers!,
      layout: this.#layout,
      optim: () => holder ? this.#bounded(holder, "optimizer state", (api) => api.optimizerState()).catch(() => undefined) : Promise.resolve(undefined),
      outer: this.#outer ? this.#outer.optimizer.state() : undefined,
      elche: this.#cfg.policy !== "sync" ? { ...this.#cadence.elche.exportState(), ...(trend.length ? { trend_history: trend } : {}) } : undefined,
      epoch: this.#ckptEpoch,
      globalStep: this.#globalStep,
      round: this.#round,
      world: this.W,
      coverage: this.#ckptCoverage,
    };
  }

  #save(reason: SaveReason): Promise<void> {
    return this.#checkpoints.save(reason, () => this.#bundleSource(), this.#observer);
  }

  /** Coverage of every epoch in progress (the reduce's trigger snapshot). */
  #coverage(): EpochCoverage[] {
    const out: EpochCoverage[] = [];
    for (const [epoch, s] of [...this.#sources].sort((a, b) => a[0] - b[0])) {
      if (epoch >= this.#frontier) out.push(s.coverage());
    }
    return out;
  }

  /** Close the frontier epoch when its work is complete (and, barrier-paced, reduced). */
  async #epochBoundary(): Promise<boolean> {
    const e = this.#frontier;
    if (e >= this.#cfg.numEpochs) return false;
    const source = this.#sources.get(e);
    if (!source || !source.isComplete()) return false;
    if (this.#cfg.policy !== "async" && this.#alive().some((c) => this.#n[c.rank] > 0)) return false;
    this.#frontier++;
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
    if (this.#joins.size === 0 || this.#stop || this.#stopReason || this.#failure || this.#consensus === null) return;
    for (const [r, place] of [...this.#joins]) {
      this.#joins.delete(r);
      const client = this.#ranks[r];
      const frame: Frame = {
        rank: r,
        round: this.#round,
        batches: 0,
        dtype: "f32",
        params: this.#consensus.slice(),
        buffers: this.#consensusBuffers!.slice(),
      };
      const ceiling = stallCeilingMs(this.#cfg.heartbeatTimeoutSecs);
      const loaded = await boundedCall(client, "load", (api) => api.load(frame), ceiling, (err) => {
        client.fail(new RankLostError(r, `rank ${r} did not load the consensus to join: ${err.message}`), false);
      }).then(() => true, () => false); // a failed join ends the slot (onStandbyDown said why)
      if (!loaded || !client.admit()) continue;
      this.#members++;
      this.#n[r] = 0;
      this.#flight[r] = null;
      this.#cadence.joined(r);
      this.#events?.rankJoined(r, epoch, place);
      this.#observer.rankJoined?.(r, epoch, place);
    }
    this.#poke();
  }

  /** A rank call bounded by the stall ceiling (callbacks.ts); a stall stops the run with `reduce_stall`. */
  #bounded<T>(client: RankClient, what: string, fn: (api: RankView) => Promise<T>): Promise<T> {
    return boundedCall(client, what, fn, stallCeilingMs(this.#cfg.heartbeatTimeoutSecs), (err) => {
      this.#stopReason ??= { reason: "reduce_stall", cause: err };
    });
  }

  /** Run one reduce cycle (reduce_cycle.ts) and fold it into the schedule. `exact`: f32 frames (the final consensus). */
  async #reduce(exact: boolean, stallMs: number): Promise<void> {
    this.#reducing = true;
    const t0 = performance.now();
    const round = ++this.#round;
    const coverageEpoch = this.#frontier;
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
        version: this.#version + 1,
        globalStep: this.#globalStep,
        observer: this.#observer,
        averaged: (c) => {
          this.#consensus = c.params;
          this.#consensusBuffers = c.buffers;
        },
      };
      // nccl-*: the ranks reduce among themselves through shared memory (reduce_nccl.ts).
      const out = this.#cfg.backend === "nccl"
        ? await reduceNccl({ ...input, steps: [...this.#n], group: this.#nccl, outerSeed: this.#outerSeed })
        : await reduceCycle(input);
      if (out.consensus) {
        this.#outerSeed = undefined; // the replicas exist now
        this.#fold(out.steps);
      }
      const ms = performance.now() - t0;
      this.#finishCycle(out.steps, out.acks, ms, out.consensus === null, { round, ...out });
      if (out.consensus) {
        // What the consensus holds, by construction: the folded batches.
        this.#ckptCoverage = this.#coverage();
        this.#ckptEpoch = coverageEpoch;
        if (!exact) {
          await this.#checkpoints.afterReduce(this.#frontier, Math.max(this.#frontier, ...this.#started), () => this.#bundleSource(), this.#observer);
        }
      }
    } catch (e) {
      if (!(e instanceof Error) || !/made no progress/.test(e.message)) throw e;
      this.#stopReason ??= { reason: "reduce_stall", cause: e };
    } finally {
      this.#reducing = false;
      for (const r of this.#lostInReduce) this.#reclaim(r);
      this.#lostInReduce.clear();
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
      this.#version++;
      this.#globalStep += kUsed;
    }
    for (let r = 0; r < this.W; r++) this.#n[r] = Math.max(0, this.#n[r] - steps[r]);
    for (const s of this.#sources.values()) s.beginWindow();
    const epoch = Math.min(this.#frontier, this.#cfg.numEpochs - 1);
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
      stepsPerEpoch: Math.floor(this.#P / this.#B),
      anchorBefore,
      telemetry,
      globalStep: this.#globalStep,
    });
  }

}
