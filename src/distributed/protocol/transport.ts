/**
 * The transport seam: the one interface through which the coordinator talks to a rank.
 * Everything above it (`coordinator/transport/rank_client.ts`: liveness, `lastSeen`, `overdueMs`,
 * `fail`, naming the rank and the call in errors) is transport independent; everything
 * below it is one file per transport:
 *
 * - `coordinator/transport/transport_worker.ts`: a rank in a Web Worker of this page or process (comlink);
 * - `coordinator/transport/transport_local.ts`: a rank object in this thread (tests' fake ranks, tools).
 *
 * Writing a transport (e.g. ranks on other machines over NATS) is writing one class that
 * implements {@link RankTransport}, and on the rank's side one loop that turns incoming
 * requests into calls of a {@link RankApi} (a `RankRuntime`) and the runtime's sink calls
 * into {@link RankEvent}s ({@link sinkOf} does the second half). It is message based:
 *
 * 1. Requests are calls by name ({@link RankCallName}; their properties in `rank_calls.ts`)
 *    with the arguments and result of {@link RankCalls}: structured-cloneable data only
 *    (numbers, strings, plain objects, typed arrays for frames). No function, proxy or
 *    class instance crosses the seam.
 *    The caller never touches the typed arrays it passed again, so a transport may
 *    transfer their buffers instead of copying.
 * 2. A request resolves with the rank's result or rejects with the rank's error, keeping
 *    its `name` and `message` (the client tells a lost device from a user error by them).
 * 3. The rank also speaks unasked: {@link RankEvent}s (a batch ended, a heartbeat, it is
 *    about to compile pipelines and block), delivered in order to the listener.
 * 4. When the transport itself fails (worker died, connection dropped, a message could
 *    not be decoded) it calls `down(reason)` once; the client then rejects every request
 *    in flight. A transport never decides that a *silent* rank is dead: the client's
 *    watchdog does, from the events and replies it saw.
 */
import type { BatchEvent, CoordinatorSink, RankApi, RankSetup } from "./messages.ts";
import { RANK_CALLS } from "./rank_calls.ts";

/**
 * Every call a coordinator makes on a rank, by name: its arguments and its result. Derived
 * from {@link RankApi}, the rank's side; `init` drops the sink (events travel as
 * {@link RankEvent}s instead).
 */
export type RankCalls = {
  [K in keyof RankApi]: {
    args: K extends "init" ? [setup: RankSetup] : Parameters<RankApi[K]>;
    result: Awaited<ReturnType<RankApi[K]>>;
  };
};

/** The name of a call: "init", "train", "snapshot", "adopt", ... */
export type RankCallName = keyof RankCalls;

/** What a rank sends without being asked. Each one also says the rank is alive. */
export type RankEvent =
  | { kind: "batch"; batch: BatchEvent }
  | { kind: "heartbeat" }
  /** The rank is about to compile GPU pipelines and may be silent for a while (up to the stall ceiling). */
  | { kind: "compiling"; what?: string };

/** Where a transport delivers what it receives unasked. */
export interface RankListener {
  event(e: RankEvent): void;
  /** The transport failed; `reason` names the rank and what happened ("rank 1: its worker died: ..."). */
  down(reason: string): void;
}

/** The coordinator's connection to one rank (see the module comment for the contract). */
export interface RankTransport {
  /**
   * True when every reply and event arrives as a message from another isolate, whose
   * native memory Deno frees only at a major collection: the client then counts them and
   * collects every `MESSAGES_PER_COLLECT` (coordinator/transport/rank_client.ts). False in process.
   */
  readonly messages: boolean;
  /** Attach the listener. Called once, before the first request (events before it may be dropped). */
  listen(listener: RankListener): void;
  /** Call the rank by name; resolves with its result, rejects with its error. */
  request<K extends RankCallName>(name: K, ...args: RankCalls[K]["args"]): Promise<RankCalls[K]["result"]>;
  /** Release the connection (the client asked the rank to `stop` first, when it could). Idempotent. */
  close(): Promise<void>;
  /**
   * Whether the rank's end is still there, asked while it is silent: false only when it is
   * certainly gone (a remote rank whose connection the server dropped), true when alive or
   * unknown. Absent where silence is the only sign (a worker's thread).
   */
  present?(): Promise<boolean>;
}

/** The calls of a rank as methods over a transport: `view.snapshot(round, dtype)` is `request("snapshot", round, dtype)`. */
export type RankView = { [K in RankCallName]: (...args: RankCalls[K]["args"]) => Promise<RankCalls[K]["result"]> };

/** A {@link RankView} over a transport. */
export function viewOf(transport: RankTransport): RankView {
  const view: Record<string, unknown> = {};
  for (const name of RANK_CALLS) view[name] = (...args: never[]) => (transport.request as (n: string, ...a: unknown[]) => unknown)(name, ...args);
  return view as RankView;
}

/** Rank side: the sink a `RankRuntime` reports through, as events for a listener. */
export function sinkOf(listener: () => RankListener | undefined): CoordinatorSink {
  return {
    batch: (batch) => listener()?.event({ kind: "batch", batch }),
    heartbeat: () => listener()?.event({ kind: "heartbeat" }),
    compiling: (_rank, what) => listener()?.event({ kind: "compiling", what }),
  };
}

/** Rank side: run one request on a rank object; `sink` serves `init`. */
export function dispatch<K extends RankCallName>(
  api: RankApi,
  sink: CoordinatorSink,
  name: K,
  args: RankCalls[K]["args"],
): Promise<RankCalls[K]["result"]> {
  if (name === "init") return api.init((args as RankCalls["init"]["args"])[0], sink) as Promise<RankCalls[K]["result"]>;
  const fn = api[name] as (...a: unknown[]) => Promise<RankCalls[K]["result"]>;
  return fn.apply(api, args as unknown[]);
}
