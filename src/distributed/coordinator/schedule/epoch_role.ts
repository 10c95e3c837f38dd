/**
 * The epoch-callback role: the one rank that runs `epochFn`, `evalFn` and
 * `checkpointFn`, and running the last two between epochs. The role is the policy's rank
 * while it is alive, else the fastest rank by ElChe's measurements, and sticks to its
 * holder while that rank lives.
 */
import { describeError } from "../../protocol/errors.ts";
import type { RankView } from "../../protocol/transport.ts";
import { quietly } from "../transport/callbacks.ts";
import type { ResolvedRunConfig } from "../control/config.ts";
import type { ElChe } from "../control/elche.ts";
import type { RunEvents, RunSink } from "../report/observer.ts";
import type { RankClient } from "../transport/rank_client.ts";
import type { RunDefinition } from "../report/run_definition.ts";

/** What the role needs of the coordinator. */
export interface RoleContext {
  ranks: readonly RankClient[];
  cfg: ResolvedRunConfig;
  state: RunDefinition;
  elche: ElChe;
  sink: RunSink;
  events?: RunEvents;
  /** A rank call bounded by the stall ceiling (a stall stops the run). */
  bounded<T>(client: RankClient, what: string, fn: (api: RankView) => Promise<T>): Promise<T>;
  /** The run is stopping (a stall was declared): a failed call was already reported. */
  stopping(): boolean;
}

export class EpochRole {
  #holder: number | null = null;
  #epochFnFired = new Set<number>();

  constructor(readonly ctx: RoleContext) {}

  /** The rank holding the role now. */
  rank(): number {
    const { ranks, cfg, elche } = this.ctx;
    const p = cfg.epochCallbackPolicy;
    if (p.kind === "rank" && ranks[p.rank]?.alive) return p.rank;
    if (this.#holder !== null && ranks[this.#holder].alive) return this.#holder;
    this.#holder = elche.fastestRank() ?? ranks.find((c) => c.alive)!.rank;
    return this.#holder;
  }

  /** A rank was lost: the role moves on at its next use. */
  lost(r: number): void {
    if (this.#holder === r) this.#holder = null;
  }

  /** Whether the chunk rank `r` gets now fires `epochFn` first (once per epoch, on the role). */
  epochFn(epoch: number, r: number): boolean {
    const fire = this.ctx.state.spec.epochFn !== undefined && !this.#epochFnFired.has(epoch) && r === this.rank();
    if (fire) this.#epochFnFired.add(epoch);
    return fire;
  }

  /** Run `evalFn` on the role (when there is one and an eval dataset), report it, call `evalResultFn`. */
  async evaluate(epoch: number): Promise<void> {
    const { ranks, state, sink, events } = this.ctx;
    if (!state.spec.evalFn || !state.spec.evalDataset) return;
    const role = ranks[this.rank()];
    const out = await this.ctx.bounded(role, `evalFn (epoch ${epoch})`, (api) => api.evaluate(epoch)).catch((e) => {
      if (this.ctx.stopping() || !role.alive) return null; // stalled, or the rank was lost: said elsewhere
      throw e;
    });
    if (!out) return;
    sink.evaluated({ ...out, rank: role.rank });
    if (out.error !== undefined) console.warn(`evalFn failed on rank ${role.rank} at epoch ${epoch}: ${out.error}`);
    else {
      events?.evaluated(epoch, out.value!);
      await quietly("evalResultFn", () => state.evalResultFn?.(epoch, out.value!));
    }
  }

  /** Run `checkpointFn` on the role; a failure is a warning (training continues). */
  async checkpointFn(k: number): Promise<void> {
    const role = this.ctx.ranks[this.rank()];
    await this.ctx.bounded(role, `checkpointFn (epoch ${k})`, (api) => api.checkpoint(k)).catch((err) => {
      console.warn(`checkpointFn failed on rank ${role.rank} at epoch ${k}: ${describeError(err)}`);
    });
  }
}
