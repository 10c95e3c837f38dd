/**
 * The one place every reconnect window of a run with remote ranks comes from
 * (`.reconnectGraceSecs()`, issue 27): how long a remote rank may be away (its link lost, its
 * tab frozen, its process stopped) and still come back as if nothing happened.
 *
 * - the coordinator's own NATS connection may be away this long, plus {@link LINK_GRACE_SLACK_MS}
 *   (`openCoordinator`'s `graceMs`): the ranks' holds end first, so a connection away too long
 *   loses each rank naming its silence and this knob, not the link;
 * - a remote rank silent this long is held, not lost: for remote ranks the grace takes the
 *   place of `heartbeatTimeoutSecs` (a remote rank's silence is its link's as often as its
 *   thread's, and a frozen tab keeps its socket: the server still sees it). Local workers keep
 *   `heartbeatTimeoutSecs`, and the stall ceiling (a rank compiling pipelines) stays
 *   `max(10 × heartbeatTimeoutSecs, 300 s)`, at least the grace;
 * - the rank holds its state as long (its `beaconLossMs`, sent in its join token): both sides
 *   give up at the same time, so a rank never waits for a slot already dropped, and the
 *   coordinator never holds a slot whose rank gave up.
 */
import { stallCeilingMs } from "./max_failure.ts";

/** Default `reconnectGraceSecs`: a Wi-Fi blink, a NATS restart, a tab frozen for 30 s. */
export const DEFAULT_RECONNECT_GRACE_SECS = 60;

/** How much longer than a rank's hold the coordinator's own connection may be away, ms. */
export const LINK_GRACE_SLACK_MS = 5_000;

/** The windows {@link graceWindows} derives, in ms. */
export interface GraceWindows {
  /** How long the coordinator's own NATS connection may be away before every link is down (the hold + slack). */
  linkGraceMs: number;
  /** How long a remote rank may be silent (or disconnected) before it is declared lost. */
  remoteHoldMs: number;
  /** The same window while the rank compiles pipelines: the stall ceiling, at least the hold. */
  remoteCompileMs: number;
  /** How long the rank waits for the coordinator's beacons before it stops (its `beaconLossMs`). */
  beaconLossMs: number;
}

/**
 * Every reconnect window from the run's two knobs.
 * @example
 * ```ts
 * import { graceWindows } from "./grace.ts";
 * graceWindows({ reconnectGraceSecs: 60, heartbeatTimeoutSecs: 30 }).beaconLossMs; // 60000
 * ```
 */
export function graceWindows(cfg: { reconnectGraceSecs: number; heartbeatTimeoutSecs: number }): GraceWindows {
  const ms = cfg.reconnectGraceSecs * 1000;
  return { linkGraceMs: ms + LINK_GRACE_SLACK_MS, remoteHoldMs: ms, remoteCompileMs: Math.max(stallCeilingMs(cfg.heartbeatTimeoutSecs), ms), beaconLossMs: ms };
}
