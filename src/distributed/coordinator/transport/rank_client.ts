/**
 * The coordinator's handle on one rank, above the transport seam (protocol/transport.ts):
 * its calls (through a `RankTransport`: a worker, or the rank object in process), its
 * liveness, and calls that carry the rank and the cause when they fail. Nothing here knows
 * how messages travel.
 */
import { collectGarbage } from "../../../gpu/mod.ts";
import { describeError, RankLostError } from "../../protocol/errors.ts";
import type { BatchEvent, CoordinatorSink, RankApi } from "../../protocol/messages.ts";
import type { FrameRelay } from "../../protocol/relay.ts";
import { type RankEvent, type RankTransport, type RankView, viewOf } from "../../protocol/transport.ts";
import { LocalTransport } from "./transport_local.ts";
import { WorkerTransport } from "./transport_worker.ts";

/**
 * Messages from worker ranks (batch events, heartbeats, call replies) the coordinator's
 * isolate receives between two major collections. Deno frees what a received message
 * holds natively only when V8 collects it, and the coordinator's JS heap (~10 MiB) is too
 * small for V8 to run major collections on its own: without them a 2-rank MNIST run grew
 * about twice as fast (bench/README.md "Memory"). Two ranks send about one message a step
 * each, so this is a collection (a few ms) every ~500 steps; a no-op in browsers.
 */
export const MESSAGES_PER_COLLECT = 1000;
let messages = 0, collections = 0;

/** Count one message from a worker rank; collect every {@link MESSAGES_PER_COLLECT}. */
function received(client: RankClient): void {
  if (client.transport.messages && ++messages % MESSAGES_PER_COLLECT === 0 && collectGarbage()) collections++;
}

/** Major collections this isolate ran for rank messages (the memory bench prints it). */
export function messageCollections(): number {
  return collections;
}

/** A lost device (destroyed, driver reset, unrecoverable out-of-memory) as a rank reports it. */
function deviceLost(e: unknown): boolean {
  const name = (e as Error)?.name ?? "";
  const message = (e as Error)?.message ?? "";
  return name === "DeviceLostError" || (name === "GpuError" && /out of memory|lost|destroyed/i.test(message));
}

/** True for a transport; false for a bare rank object (`RankApi`). */
function isTransport(x: RankTransport | RankApi): x is RankTransport {
  return typeof (x as RankTransport).request === "function";
}

/** Recent steps whose delivered time sets a rank's silence allowance. */
export const STEP_WINDOW = 4;
/** A rank may be silent this many times its slowest recent step (see `overdueMs`). */
export const STEP_GRACE = 3;

/**
 * How long a rank whose transport carries one (a remote rank) is held while silent, in place
 * of the run's heartbeat timeout: from `reconnectGraceSecs` (control/grace.ts).
 */
export interface RankHold {
  /** Silence allowed, ms. */
  silentMs: number;
  /** Silence allowed while the rank compiles pipelines, ms. */
  compileMs: number;
  /** The knob that sets it, as a loss names it (`reconnectGraceSecs 60`). */
  knob: string;
}

export class RankClient {
  readonly rank: number;
  /** How calls and events travel (protocol/transport.ts). */
  readonly transport: RankTransport;
  /** The rank's calls, by name, over the transport. */
  readonly api: RankView;
  alive = true;
  /**
   * A spare slot of an elastic run: not a member yet. Its calls go through
   * (the join's `init` and `load`), but the coordinator counts it in nothing until it is
   * admitted at an epoch boundary ({@link admit}); a failure meanwhile ends the slot
   * without a death (`onStandbyDown`).
   */
  standby = false;
  /** A standby slot went down before it was admitted (its join ended; the run never counted it). */
  onStandbyDown?: (err: RankLostError) => void;
  /** performance.now() of the last message from the rank. */
  lastSeen = performance.now();
  /** Set when the rank said it compiles pipelines (blocked, silent); cleared by its next message or reply. */
  compiling = false;
  /** While {@link compiling}: the pipeline it named (at most 120 characters: a remote rank's words), and since when. */
  compilingWhat?: { what: string; since: number };
  /**
   * A remote rank's own silence allowance (its transport's {@link RankHold}: the run's
   * `reconnectGraceSecs`), in place of the heartbeat timeout; none for a worker.
   */
  readonly hold?: RankHold;
  /** The relay this rank's reduce frames go through (a remote rank behind one), else none. */
  relay?: FrameRelay;
  /** Batch events, forwarded by the coordinator. */
  onBatch?: (e: BatchEvent) => void;
  /**
   * The rank went down. `fatal`: it threw (user code, a shader bug) — the run must stop
   * and say so; otherwise it was lost (worker died, device lost, silent) — survivable.
   */
  onDown?: (err: RankLostError, fatal: boolean) => void;
  /**
   * The rejecters of the calls in flight, which `fail` rejects. One short-lived promise per
   * call, not one shared promise raced by every call: a promise that never settles keeps
   * every `Promise.race` over it, and through it that call's result (a frame's
   * ArrayBuffers, a report), alive for the whole run (bench/README.md "Memory").
   */
  #inFlight = new Set<(e: Error) => void>();
  #cause?: Error;
  /** Delivered ms of the rank's recent steps (the last {@link STEP_WINDOW}). */
  #steps: number[] = [];

  /**
   * @param link The rank's transport. A bare rank object is wrapped: in a
   *   {@link WorkerTransport} over `worker` when one is given (its comlink remote), else in a
   *   {@link LocalTransport} (in process).
   */
  constructor(rank: number, link: RankTransport | RankApi, worker?: Worker) {
    this.rank = rank;
    this.transport = isTransport(link) ? link : worker ? new WorkerTransport(rank, worker, link) : new LocalTransport(link);
    this.api = viewOf(this.transport);
    this.hold = (this.transport as { hold?: RankHold }).hold;
    this.transport.listen({
      event: (e) => this.#event(e),
      down: (reason) => this.fail(new RankLostError(rank, reason), false),
    });
  }

  /** A spare slot of an elastic run over `link`: standby, not alive, until {@link admit}. */
  static spare(rank: number, link: RankTransport | RankApi): RankClient {
    const c = new RankClient(rank, link);
    c.alive = false;
    c.standby = true;
    return c;
  }

  /** Something arrived from the rank unasked: it is alive. */
  #event(e: RankEvent): void {
    received(this);
    this.lastSeen = performance.now();
    this.compiling = e.kind === "compiling";
    if (e.kind !== "compiling") this.compilingWhat = undefined;
    else {
      const what = typeof e.what === "string" ? e.what.slice(0, 120) : this.compilingWhat?.what ?? "GPU pipelines";
      this.compilingWhat = { what, since: this.compilingWhat?.since ?? this.lastSeen };
    }
    if (e.kind === "batch") {
      this.#steps.push(e.batch.ms);
      if (this.#steps.length > STEP_WINDOW) this.#steps.shift();
      this.onBatch?.(e.batch);
    }
  }

  /** The client's event route as a sink (what an in-process rank reports through). */
  sink(): CoordinatorSink {
    return {
      batch: (batch) => this.#event({ kind: "batch", batch }),
      heartbeat: () => this.#event({ kind: "heartbeat" }),
      compiling: (_rank, what) => this.#event({ kind: "compiling", what }),
    };
  }

  /**
   * How long the rank has been silent past what it may be: `heartbeatMs`, or `compileMs` (the
   * stall ceiling) while it compiles pipelines, or {@link STEP_GRACE} × its slowest recent
   * step when that is longer (up to `compileMs`). A rank cannot heartbeat while its thread
   * waits on the GPU: on a software adapter a readback blocks the worker until the step's
   * work is done (Deno polls the device with a blocking wait), and a char-rnn step there
   * takes 4–40 s. A rank with a {@link hold} (a remote rank) is allowed its hold's windows
   * instead of `heartbeatMs` and `compileMs`. 0 while it is within bounds.
   */
  overdueMs(now: number, heartbeatMs: number, compileMs: number): number {
    if (this.hold) [heartbeatMs, compileMs] = [this.hold.silentMs, this.hold.compileMs];
    const silent = now - this.lastSeen;
    const stepMs = this.#steps.length ? Math.max(...this.#steps) : 0;
    const limit = this.compiling ? compileMs : Math.max(heartbeatMs, Math.min(compileMs, STEP_GRACE * stepMs));
    return silent > limit ? silent : 0;
  }

  /** Why the rank was declared lost, if it was. */
  get cause(): Error | undefined {
    return this.#cause;
  }

  /**
   * Make a standby slot a member (the coordinator, at an epoch boundary). False when the
   * slot is not standby or went down meanwhile.
   */
  admit(): boolean {
    if (!this.standby || this.#cause) return false;
    this.standby = false;
    this.alive = true;
    this.lastSeen = performance.now();
    return true;
  }

  /** Declare the rank down: every pending and later call rejects with `err`. */
  fail(err: RankLostError, fatal: boolean): void {
    if (this.standby) {
      if (this.#cause) return;
      this.#cause = err;
      for (const reject of this.#inFlight) reject(err);
      this.#inFlight.clear();
      this.onStandbyDown?.(err);
      return;
    }
    if (!this.alive) return;
    this.alive = false;
    this.#cause = err;
    for (const reject of this.#inFlight) reject(err);
    this.#inFlight.clear();
    this.onDown?.(err, fatal);
  }

  /** Call the rank; a failure names the rank, the call and the cause; a lost rank rejects at once. */
  async call<T>(what: string, fn: (api: RankView) => Promise<T>): Promise<T> {
    if (!this.alive && !(this.standby && !this.#cause)) throw this.#cause ?? new RankLostError(this.rank, `rank ${this.rank} is lost`);
    let reject!: (e: Error) => void;
    const failed = new Promise<never>((_, r) => this.#inFlight.add(reject = r));
    try {
      const out = await Promise.race([fn(this.api), failed]);
      received(this);
      this.lastSeen = performance.now();
      // A rank that answers is not blocked in a compile: judge its silence from here by the
      // heartbeat again. (Left set, a rank lost right after answering was waited for up to the
      // compile ceiling, which is also the reduce's stall ceiling: the run stopped instead.)
      this.compiling = false;
      this.compilingWhat = undefined;
      return out;
    } catch (e) {
      if (e instanceof RankLostError) {
        this.fail(e, false);
        throw e;
      }
      const lost = deviceLost(e);
      const err = new RankLostError(
        this.rank,
        lost ? `rank ${this.rank} lost its GPU device in ${what}: ${describeError(e)}` : `rank ${this.rank} failed in ${what}: ${describeError(e)}`,
        { cause: e },
      );
      this.fail(err, !lost);
      throw err;
    } finally {
      this.#inFlight.delete(reject);
    }
  }

  /** Stop the rank (bounded wait) and close its transport. */
  async close(): Promise<void> {
    if (this.alive || (this.standby && !this.#cause)) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.transport.request("stop").catch(() => {}),
        new Promise<void>((r) => (timer = setTimeout(r, 2000))),
      ]);
      clearTimeout(timer);
    }
    this.alive = false;
    this.standby = false;
    await this.transport.close();
  }
}
