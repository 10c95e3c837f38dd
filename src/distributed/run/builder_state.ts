/**
 * What a builder holds: the rank-side closures (a `RankSpec`, rebuilt in each rank by
 * re-entry), the config, and the coordinator-side pieces. Apart from `builder.ts` so that
 * `launch.ts`, `single.ts`, `coop.ts` and `run_monitor.ts` can read it without importing
 * the builder, which imports them.
 */
import type { Device } from "../../gpu/mod.ts";
import type { Timeline } from "../../monitor/mod.ts";
import type { Module } from "../../nn/mod.ts";
import type { DdpRunConfig } from "../coordinator/control/config.ts";
import type { ConvergenceGuard } from "../coordinator/control/guards.ts";
import type { EpochMetrics } from "../coordinator/report/metrics.ts";
import type { OuterOptimizer } from "../protocol/outer.ts";
import type { CoopBridge } from "../rank/coop_bridge.ts";
import type { RankRuntime, RankSpec } from "../rank/rank_runtime.ts";
import type { CallSite } from "./reentry.ts";
import type { RunCredentials } from "../nats/mod.ts";
import type { RemoteHello } from "../protocol/remote_hello.ts";

/** One local rank of `.cluster(...)`. */
export interface RankSpecification {
  /** Adapter preference for this rank's device. */
  powerPreference?: GPUPowerPreference;
  /**
   * Relative speed hint (higher = faster), seeding ElChe's batch counts before the first
   * measurement (flodl's `with_speed_ratio`); corrected by measurements.
   */
  speedHint?: number;
  /**
   * Make this rank's steps take `slowdown` times as long (>= 1): how a homogeneous machine
   * simulates a slow GPU in tests and benchmarks. Default 1.
   */
  slowdown?: number;
  /**
   * Declared device memory of this rank, bytes: `vramMaxUsage` is a share of it (WebGPU
   * cannot report free memory). Default: the adapter's `maxBufferSize`.
   */
  vramBytes?: number;
  /**
   * Declared host memory for this rank, bytes: `ramMaxUsage` is a share of it. Default: the
   * host's available memory (Deno) or `navigator.deviceMemory` (browser), ÷ local ranks.
   */
  ramBytes?: number;
}

/** `.cluster(...)`: the ranks of the run (the web port's FullCluster: one host, local ranks). */
export interface ClusterSpec {
  /** One entry per local rank, rank 0 first. */
  ranks: RankSpecification[];
}

/**
 * `.remoteRanks(...)`: rank slots that processes on other machines fill over NATS
 * (run/join.ts), after the local ranks of `.cluster(...)`: local ranks are 0..L-1, remote
 * ones L..L+slots-1.
 */
export interface RemoteRanksSpec {
  /** How many remote ranks the run waits for before it trains (>= 1; >= 0 with `maxSlots`). */
  slots: number;
  /**
   * Elastic membership: remote slots in all, `slots` of them awaited before the
   * run starts, the rest spare: a rank may join a spare slot while the run goes, and is
   * admitted at the next epoch boundary with the consensus parameters (and a fresh
   * optimizer). Default `slots` (no spare). Credentials need a slot per rank: L + maxSlots.
   */
  maxSlots?: number;
  /**
   * The NATS WebSocket URL the coordinator connects to (`ws://127.0.0.1:port` for a server it runs),
   * or every node's of a cluster (the coordinator fails over among them).
   */
  url: string | readonly string[];
  /**
   * The run's credentials (`createRunCredentials(L + slots)`, slot k = rank k); the server
   * must hold their `serverAuthorization(...)` block.
   */
  credentials: RunCredentials;
  /** The URL(s) put in join tokens, as remote machines reach the server or cluster (default `url`). */
  joinUrl?: string | readonly string[];
  /** Each slot's join token, once the slot is open: print the join command here. */
  onJoinToken?: (rank: number, token: string) => void;
  /**
   * Each remote rank that joined and passed the checks, with its hello (a spare slot's: when
   * its hello passed; it trains from the next epoch boundary on).
   */
  onJoined?: (rank: number, hello: RemoteHello) => void;
  /** Seconds to wait for every slot to join (default 600). */
  joinTimeoutSecs?: number;
  /**
   * Each relay's token once its slot is open (a relay sums the frames of the
   * ranks on its host; run it there, `deno run -A scripts/relay.ts <token>`). Relays are
   * the credentials' slots made relays with `assignRelay` (after every rank slot); the run
   * waits for them as for its ranks.
   */
  onRelayToken?: (slot: number, token: string, ranks: number[]) => void;
}

/** Coordinator-side pieces of a builder (the rank side is a {@link RankSpec}). */
export interface BuilderState<M extends Module> {
  spec: RankSpec<M>;
  config: DdpRunConfig;
  /** Knobs the user set explicitly (builder methods by name). */
  explicit: Set<string>;
  metricsFn?: (m: EpochMetrics) => void | Promise<void>;
  evalResultFn?: (epoch: number, metric: number) => void | Promise<void>;
  outerFactory?: () => OuterOptimizer;
  guard?: ConvergenceGuard;
  cluster?: ClusterSpec;
  remote?: RemoteRanksSpec;
  entry?: string;
  entryTimeoutSecs: number;
  site: CallSite;
  /** Timeline to inject events into. */
  timeline?: Timeline;
  /** Cooperative tier: the user-driven loop that serves this builder's plans. */
  coop?: CoopBridge<M>;
  /** A rank runtime over this builder's closures, from this copy of the library. */
  createRuntime(device?: Device): RankRuntime<M>;
}
