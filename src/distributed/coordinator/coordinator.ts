/**
 * The controller of a multi-rank run (spec §1.1, §2.5): dispatches chunks under the
 * policy's pacing, triggers reduces, averages frames on the CPU (f32 accumulation of
 * bf16 or f32 frames), runs guards, ElChe and the meta-controller, schedules eval and
 * callbacks, aggregates epoch metrics. It never touches a GPU.
 */
import { packBf16 } from "../../tensor/mod.ts";
import type { Chunk, NextChunkContext } from "./chunk_pool.ts";
import { EvalCadence } from "./config.ts";
import { average } from "./averaging.ts";
import { Cadence } from "./cadence.ts";
import { describeError } from "../protocol/errors.ts";
import type { ReduceEvent, RunEvents, RunObserver, RunSink, TrainedState } from "./observer.ts";

export type { ReduceEvent, RunObserver };
import { EpochAggregator, type RunEpochMetrics } from "./metrics.ts";
import { OuterStepper } from "./outer.ts";
import type { BatchEvent, Frame, LayoutTable, SyncAck } from "../protocol/messages.ts";
import type { RankView } from "../protocol/transport.ts";
import type { RankClient } from "./rank_client.ts";
import type { ResolvedRunConfig } from "./config.ts";
import { frameToFlat } from "../protocol/frame_codec.ts";
import type { EpochCoverage } from "./chunk_pool.ts";
import { type SaveReason, stallCeilingMs, unrecoverableReason } from "./max_failure.ts";
import type { BundleWriter, ResumeSeed } from "./persistence.ts";
import type { BundleParts } from "./bundle.ts";
import { PartitionSource, PoolSource, type WorkSource } from "./work_source.ts";
import type { RunDefinition } from "./run_definition.ts";
import type { Module } from "../../nn/mod.ts";
import type { ChunkReport } from "../protocol/messages.ts";

interface Flight {
  chunk: Chunk;
  source: WorkSource;
  /** performance.now() when the chunk was sent. */
  since: number;
}

/** With nothing happening for this long, the coordinator says what it is waiting for (stderr). */
const WAIT_REPORT_MS = 60_000;

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
  #P: number;
  #B: number;
  #sources = new Map<number, WorkSource>();
  #aggs = new Map<number, EpochAggregator>();
  #flight: (Flight | null)[];
  #n: number[];
  #frontier = 0;
  #round = 0;
  #version = 0;
  #globalStep = 0;
  #reducing = false;
  #stop = false;
  #failure?: Error;
  #wake?: () => void;
  /** Something happened since the loop last looked (a poke that found no waiter is not lost). */
  #pending = false;
  /** performance.now() of the last batch, chunk or reduce: what the stall ceiling measures from. */
  #lastProgress = performance.now();
  #role: number | null = null;
  #epochFnFired = new Set<number>();
  #epochStats = new Map<number, { reduces: number; bytes: number; ms: number }>();
  #consensus: Float32Array | null = null;
  #events?: RunEvents;
  #started = new Set<number>();
  #resume?: ResumeSeed;
  #writer?: BundleWriter;
  /** Coverage at the trigger of the reduce that made the current consensus (spec §8.2). */
  #ckptCoverage: EpochCoverage[] = [];
  #ckptEpoch = 0;
  #stopReason?: { reason: SaveReason; cause: Error };
  #lastMultiple = 0;
  #atEpochDone = false;
  #dead = 0;
  /** Ranks the last dispatch pass offered work and the source told to hold (nothing for them this window). */
  #held = new Set<number>();
  #consensusBuffers: Float32Array | null = null;

  constructor(
    state: RunDefinition,
    cfg: ResolvedRunConfig,
    ranks: RankClient[],
    layout: LayoutTable,
    sink: RunSink,
    observer: RunObserver = {},
    events?: RunEvents,
    persistence: { resume?: ResumeSeed; writer?: BundleWriter } = {},
  ) {
    this.#events = events;
    this.#resume = persistence.resume;
    this.#writer = persistence.writer;
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
      this.#lastMultiple = cfg.checkpointEvery ? Math.floor(resume.startEpoch / cfg.checkpointEvery) : 0;
      this.#atEpochDone = cfg.checkpointAtEpoch !== undefined && resume.startEpoch >= cfg.checkpointAtEpoch;
    }
    if (state.outerFactory) this.#outer = new OuterStepper(state.outerFactory());
    this.#flight = new Array(this.W).fill(null);
    this.#n = new Array(this.W).fill(0);
    for (const r of ranks) {
      r.onBatch = (ev) => this.#onBatch(ev);
      r.onDown = (err, fatal) => (fatal ? this.#fail(err) : this.#rankLost(r.rank, err));
    }
  }

  /** Cooperative cancel: no new chunks; in-flight ones finish; a final reduce; then done. */
  shutdown(): void {
    this.#stop = true;
    this.#poke();
  }

  #poke(): void {
    this.#pending = true;
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
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
    this.#n[r]++;
    this.#cadence.batch(ev);
    this.#observer.batch?.(ev);
    this.#events?.batch(ev);
    if (this.#cfg.policy === "async") this.#poke();
  }

  #source(epoch: number): WorkSource {
    let s = this.#sources.get(epoch);
    if (!s) {
      const alive = this.#ranks.map((r) => r.alive);
      const cov = this.#resume?.coverage.get(epoch);
      if (cov) {
        s = this.#cfg.progressive
          ? PoolSource.resumed(cov, this.#B, this.W, alive)
          : PartitionSource.resumed(cov, this.#B, this.W, alive);
      } else {
        s = this.#cfg.progressive
          ? PoolSource.fresh(epoch, this.#P, this.#B, this.W, this.#cadence.elche.batchCounts, alive)
          : PartitionSource.plan(
            epoch,
            this.#P,
            this.#B,
            this.#cfg.policy,
            this.W,
            alive,
            this.#cfg.elche.partitionRatios,
            this.#cadence.elche.calibrated ? this.#cadence.elche.smoothedMsPerBatch : undefined,
          );
      }
      this.#sources.set(epoch, s);
      this.#aggs.set(epoch, new EpochAggregator(epoch, this.W));
      this.#epochStats.set(epoch, { reduces: 0, bytes: 0, ms: 0 });
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

  /** The rank holding the epoch-callback role (spec §7.1), sticky while alive. */
  #roleRank(): number {
    const p = this.#cfg.epochCallbackPolicy;
    if (p.kind === "rank" && this.#ranks[p.rank]?.alive) return p.rank;
    if (this.#role !== null && this.#ranks[this.#role].alive) return this.#role;
    this.#role = this.#cadence.elche.fastestRank() ?? this.#alive()[0].rank;
    return this.#role;
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
    const epochFn = this.#state.spec.epochFn !== undefined && !this.#epochFnFired.has(chunk.epoch) && r === this.#roleRank();
    if (epochFn) this.#epochFnFired.add(chunk.epoch);
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
    this.#observer.chunk?.(chunk.epoch, r, chunk.offset, chunk.size);
    source.complete(r, chunk.id);
    this.#aggs.get(chunk.epoch)!.add(report);
    this.#poke();
  }

  /** Every alive rank met its window quota or has nothing more to do (spec §2.5 gate). */
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
   * for it). Held ranks are woken after the reduce (spec §3.10).
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
   * consensus, so it ships f32 frames even on a bf16 wire (spec §4.5: the TrainedState and
   * the final bundle are exact).
   */
  #lastWork(): boolean {
    if (this.#stop) return true;
    for (let e = this.#frontier; e < this.#cfg.numEpochs; e++) {
      const s = this.#sources.get(e);
      if (!s || !s.isComplete()) return false;
    }
    return true;
  }

  /** Run to the end; resolves with the consensus. */
  async run(): Promise<TrainedState> {
    const stall = stallCeilingMs(this.#cfg.heartbeatTimeoutSecs);
    for (;;) {
      this.#pending = false;
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
      if (idle && !this.#pending) {
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
      if (!this.#pending) await this.#idle(stall);
    }
    if (this.#alive().some((c) => this.#n[c.rank] > 0) || this.#consensus === null) await this.#reduce(true, stall);
    if (this.#stopReason) await this.#abort(this.#stopReason.reason, this.#stopReason.cause);
    if (this.#failure) throw this.#failure;
    await this.#finalEval();
    if (this.#stopReason) await this.#abort(this.#stopReason.reason, this.#stopReason.cause);
    if (this.#writer) await this.#save(this.#stop ? "graceful_shutdown" : "checkpoint");
    return this.#trainedState();
  }

  /**
   * Sleep until poked; every {@link WAIT_REPORT_MS} without one, say on stderr what is
   * awaited. A window that makes no progress for `stallMs` (ranks alive and beating, their
   * chunks never ending) stops the run as a stalled reduce would (`reduce_stall`, spec §8.4).
   */
  async #idle(stallMs: number): Promise<void> {
    const t0 = performance.now();
    let report: ReturnType<typeof setInterval> | undefined;
    let stall: ReturnType<typeof setTimeout> | undefined;
    try {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        report = setInterval(() => console.warn(this.#waitReport(performance.now() - t0)), WAIT_REPORT_MS);
        stall = setTimeout(() => {
          const secs = (stallMs / 1000).toFixed(0);
          this.#stopReason ??= { reason: "reduce_stall", cause: new Error(`the window made no progress for ${secs} s: ${this.#waitReport(stallMs)}`) };
          this.#poke();
        }, Math.max(0, stallMs - (performance.now() - this.#lastProgress)));
      });
    } finally {
      clearInterval(report);
      clearTimeout(stall);
    }
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
      const state = !c.alive
        ? "lost"
        : f
        ? `training epoch ${f.chunk.epoch + 1} samples ${f.chunk.offset}+${f.chunk.size} for ${((now - f.since) / 1000).toFixed(0)} s`
        : "idle";
      return `rank ${c.rank} ${state}, ${this.#n[c.rank]}/${Math.max(1, counts[c.rank])} batches of the window`;
    });
    return `coordinator: nothing happened for ${(waitedMs / 1000).toFixed(0)} s (epoch ${this.#frontier + 1}/` +
      `${this.#cfg.numEpochs}, reduce due: ${this.#shouldReduce() ? "yes" : "no"}): ${ranks.join("; ")}`;
  }

  /** A rank was lost (worker died, device lost, silent): continue on the survivors (spec §8.4). */
  #rankLost(r: number, err: Error): void {
    this.#dead++;
    this.#cadence.dead(r);
    for (const s of this.#sources.values()) if (!s.isComplete()) s.forfeit(r);
    this.#flight[r] = null;
    this.#n[r] = 0;
    if (this.#role === r) this.#role = null;
    const reason = err.message;
    console.warn(`flodl-webgpu: ${reason}; continuing on ${this.#alive().length} rank(s)`);
    this.#events?.rankLost(r, this.#frontier, reason);
    this.#observer.rankLost?.(r, reason);
    const why = unrecoverableReason(this.#dead, this.W, "cpu", this.#cfg.maxFailure);
    if (why) this.#stopReason ??= { reason: why, cause: err };
    this.#poke();
  }

  /** Unrecoverable: write the bundle with the reason (when savePath is set) and stop with a clear error. */
  async #abort(reason: SaveReason, cause: Error): Promise<never> {
    let where = "";
    if (this.#writer && this.#consensus) {
      try {
        await this.#save(reason);
        where = `; the checkpoint bundle is at "${this.#writer.where}" (continue with .resumeFrom("${this.#writer.where}"))`;
      } catch (e) {
        where = `; writing the checkpoint bundle to "${this.#writer.where}" failed: ${describeError(e)}`;
      }
    } else if (!this.#writer) where = "; no bundle was written (set .savePath() to keep one)";
    const alive = this.#alive().length;
    const err = new Error(
      `Training stopped (${reason}): ${this.#dead} of ${this.W} rank(s) lost, ${alive} alive` +
        `${this.#cfg.maxFailure ? ` (maxFailure limit ${this.#cfg.maxFailure.limit(this.W)})` : ""}; last: ${cause.message}${where}`,
      { cause },
    );
    (err as Error & { saveReason?: string }).saveReason = reason;
    this.#failure = err;
    throw err;
  }

  /** Everything a bundle holds, from the current consensus (spec §8.1). */
  async #bundleParts(reason: SaveReason): Promise<BundleParts> {
    const c = this.#consensus!, b = this.#consensusBuffers!;
    const model = {
      params: this.#layout.params.map((e) => ({ name: e.name, shape: e.shape, data: c.slice(e.offset, e.offset + e.numel) })),
      buffers: this.#layout.buffers.map((e) => ({ name: e.name, shape: e.shape, data: b.slice(e.offset, e.offset + e.numel) })),
    };
    const holder = this.#alive()[0];
    const optim = holder
      ? await this.#bounded(holder, "optimizer state", (api) => api.optimizerState()).catch(() => undefined)
      : undefined;
    const outer = this.#outer ? this.#outer.optimizer.state() : undefined;
    const trend = this.#cadence.guard.trendHistory();
    return {
      model,
      optim,
      outer,
      meta: {
        epoch: this.#ckptEpoch,
        global_step: this.#globalStep,
        sync_round: this.#round,
        world_size_at_save: this.W,
        save_reason: reason,
        ...(this.#cfg.policy !== "sync"
          ? { elche_state: { ...this.#cadence.elche.exportState(), ...(trend.length ? { trend_history: trend } : {}) } }
          : {}),
        coverage: { seed: this.#cfg.seed, epoch_splits: this.#cfg.epochSplits, batch_size: this.#B, per_epoch: this.#ckptCoverage },
        seed: this.#cfg.seed,
        batch_size: this.#B,
      },
    };
  }

  async #save(reason: SaveReason): Promise<void> {
    await this.#writer!.save(() => this.#bundleParts(reason));
    this.#observer.saved?.(reason, this.#writer!.where);
  }

  /** Coverage of every epoch in progress (the reduce's trigger snapshot, spec §8.2). */
  #coverage(): EpochCoverage[] {
    const out: EpochCoverage[] = [];
    for (const [epoch, s] of [...this.#sources].sort((a, b) => a[0] - b[0])) {
      if (epoch >= this.#frontier) out.push(s.coverage());
    }
    return out;
  }

  /** Checkpoint triggers after a reduce (spec §8.2): every n epochs crossed, once at an epoch. */
  async #maybeCheckpoint(): Promise<void> {
    if (!this.#writer) return;
    const every = this.#cfg.checkpointEvery;
    const reached = Math.max(this.#frontier, ...this.#started);
    if (every && Math.floor(this.#frontier / every) > this.#lastMultiple) {
      this.#lastMultiple = Math.floor(this.#frontier / every);
      await this.#save("checkpoint");
    } else if (this.#cfg.checkpointAtEpoch !== undefined && !this.#atEpochDone && reached >= this.#cfg.checkpointAtEpoch) {
      this.#atEpochDone = true;
      await this.#save("checkpoint");
    }
  }

  /** Close the frontier epoch when its work is complete (and, barrier-paced, reduced). */
  async #epochBoundary(): Promise<boolean> {
    const e = this.#frontier;
    if (e >= this.#cfg.numEpochs) return false;
    const source = this.#sources.get(e);
    if (!source || !source.isComplete()) return false;
    if (this.#cfg.policy !== "async" && this.#alive().some((c) => this.#n[c.rank] > 0)) return false;
    this.#frontier++;
    const m = this.#aggs.get(e)!.finish();
    const st = this.#epochStats.get(e)!;
    const run: RunEpochMetrics = {
      ...m,
      reduces: st.reduces,
      wireBytesPerReduce: st.reduces ? st.bytes / st.reduces : 0,
      reduceMs: st.reduces ? st.ms / st.reduces : 0,
      anchor: this.#cadence.elche.anchor,
      batchCounts: this.#cadence.elche.batchCounts,
    };
    this.#sink.metrics(run);
    this.#events?.epochEnd(run);
    await this.#callback("metricsFn", () => this.#state.metricsFn?.(run));
    const k = e + 1;
    if (k < this.#cfg.numEpochs) {
      if (EvalCadence.due(this.#cfg.evalEvery, k)) await this.#evaluate(k);
      const every = this.#cfg.checkpointEvery;
      if (every && this.#state.spec.checkpointFn && k % every === 0) {
        const role = this.#ranks[this.#roleRank()];
        await this.#bounded(role, `checkpointFn (epoch ${k})`, (api) => api.checkpoint(k)).catch((err) => {
          console.warn(`checkpointFn failed on rank ${role.rank} at epoch ${k}: ${describeError(err)}`);
        });
      }
    }
    return true;
  }

  /**
   * A rank call that must return within the stall ceiling (eval, checkpointFn, optimizer
   * state): past it the run stops with `reduce_stall`, naming the rank and the call,
   * instead of waiting forever on a rank that beats but never answers.
   */
  async #bounded<T>(client: RankClient, what: string, fn: (api: RankView) => Promise<T>): Promise<T> {
    const ms = stallCeilingMs(this.#cfg.heartbeatTimeoutSecs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new Error(`rank ${client.rank}'s ${what} did not return within ${Math.round(ms / 100) / 10} s`);
        this.#stopReason ??= { reason: "reduce_stall", cause: err };
        reject(err);
      }, ms);
    });
    try {
      return await Promise.race([client.call(what, fn), stalled]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #callback(name: string, fn: () => unknown): Promise<void> {
    try {
      await fn();
    } catch (e) {
      console.warn(`${name} failed: ${describeError(e)} (training continues)`);
    }
  }

  async #evaluate(epoch: number): Promise<void> {
    if (!this.#state.spec.evalFn || !this.#state.spec.evalDataset) return;
    const role = this.#ranks[this.#roleRank()];
    const out = await this.#bounded(role, `evalFn (epoch ${epoch})`, (api) => api.evaluate(epoch)).catch((e) => {
      if (this.#stopReason || !role.alive) return null; // stalled, or the rank was lost: said elsewhere
      throw e;
    });
    if (!out) return;
    this.#sink.evaluated({ ...out, rank: role.rank });
    if (out.error !== undefined) console.warn(`evalFn failed on rank ${role.rank} at epoch ${epoch}: ${out.error}`);
    else {
      this.#events?.evaluated(epoch, out.value!);
      await this.#callback("evalResultFn", () => this.#state.evalResultFn?.(epoch, out.value!));
    }
  }

  async #finalEval(): Promise<void> {
    await this.#evaluate(this.#cfg.numEpochs);
  }

  /** One reduce cycle (spec §2.5), CPU backend. `exact`: f32 frames (the final consensus). */
  async #reduce(exact: boolean, stallMs: number): Promise<void> {
    this.#reducing = true;
    const t0 = performance.now();
    const round = ++this.#round;
    const coverage = this.#coverage();
    const coverageEpoch = this.#frontier;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`reduce ${round} made no progress for ${(stallMs / 1000).toFixed(0)} s`)), stallMs);
    });
    stalled.catch(() => {});
    // Survivors only: a rank lost mid-reduce drops out of this round (its call rejects).
    const settled = async <T>(calls: Promise<T>[]): Promise<T[]> => {
      const out = await Promise.race([Promise.allSettled(calls), stalled]);
      return out.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    };
    try {
      const frames = (await settled(this.#alive().map((c) => c.call("snapshot", (api) => api.snapshot(round, exact)))))
        .filter((f) => this.#ranks[f.rank].alive);
      const steps = new Array(this.W).fill(0);
      for (const f of frames) steps[f.rank] = f.batches;
      const ta = performance.now();
      const avg = average(frames, steps, this.#cfg.elche.gamma, this.#layout);
      let bytesUp = 0;
      for (const f of frames) bytesUp += f.params.byteLength + f.buffers.byteLength;
      let bytesDown = 0;
      let averageMs = 0;
      let acks: SyncAck[] = [];
      if (avg) {
        const buf = avg.buffers;
        const global = this.#outer ? this.#outer.apply(avg.params)! : avg.params;
        if (this.#observer.wantsFrames && this.#observer.frames) {
          const per = new Array<Float32Array | null>(this.W).fill(null);
          for (const f of frames) per[f.rank] = frameToFlat(f, this.#layout).params;
          this.#observer.frames(round, per, global);
        }
        this.#consensus = global;
        this.#consensusBuffers = buf;
        averageMs = performance.now() - ta;
        const bf16 = this.#cfg.elche.bf16Wire && !exact;
        const globalStep = this.#globalStep + steps.reduce((a, b) => a + b, 0);
        acks = await settled(this.#alive().filter((c) => frames.some((f) => f.rank === c.rank)).map((c) => {
          const params = bf16 ? packBf16(global) : new Float32Array(global);
          const buffers = new Float32Array(buf);
          bytesDown += params.byteLength + buffers.byteLength;
          const consensus: Frame = { rank: -1, round, batches: 0, dtype: bf16 ? "bf16" : "f32", params, buffers };
          return c.call("adopt", (api) =>
            api.adopt({
              round,
              version: this.#version + 1,
              consensus,
              easgdAlpha: this.#cfg.easgdAlpha,
              resetInner: this.#outer?.optimizer.resetsInner ?? false,
              globalStep,
              withBuffers: avg.movers > 0,
            }));
        }));
      }
      const ms = performance.now() - t0;
      this.#finishCycle(steps, acks, ms, avg === null, { round, bytesUp, bytesDown, averageMs });
      if (avg) {
        this.#ckptCoverage = coverage;
        this.#ckptEpoch = coverageEpoch;
        if (!exact) await this.#maybeCheckpoint();
      }
    } catch (e) {
      if (!(e instanceof Error) || !/made no progress/.test(e.message)) throw e;
      this.#stopReason ??= { reason: "reduce_stall", cause: e };
    } finally {
      clearTimeout(timer);
      this.#reducing = false;
      this.#lastProgress = performance.now();
    }
  }

  /** The backend-independent head of a cycle: ElChe timing, guard, meta, counters. */
  #finishCycle(
    steps: number[],
    acks: SyncAck[],
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
    const st = this.#epochStats.get(epoch) ?? { reduces: 0, bytes: 0, ms: 0 };
    st.reduces++;
    st.bytes += io.bytesUp + io.bytesDown;
    st.ms += ms;
    this.#epochStats.set(epoch, st);
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

  #trainedState(): TrainedState {
    const params = new Map<string, { shape: number[]; data: Float32Array<ArrayBuffer> }>();
    const buffers = new Map<string, { shape: number[]; data: Float32Array<ArrayBuffer> }>();
    const c = this.#consensus!, b = this.#consensusBuffers!;
    for (const e of this.#layout.params) params.set(e.name, { shape: e.shape, data: c.slice(e.offset, e.offset + e.numel) });
    for (const e of this.#layout.buffers) buffers.set(e.name, { shape: e.shape, data: b.slice(e.offset, e.offset + e.numel) });
    return { params, buffers };
  }
}
