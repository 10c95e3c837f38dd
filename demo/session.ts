/**
 * One training run of the page: the program module (imported on demand: its top level is
 * what rank workers re-run), the coordinator-side knobs from the controls, the observer
 * feeding the live dashboard, the recorder behind the downloadable one and the drift view.
 */
import {
  type BatchEvent,
  type DdpBuilder,
  type DdpHandle,
  type Device,
  ElCheConfig,
  type EpochMetrics,
  type Module,
  observe,
  type RankSpecification,
  type TrainedState,
} from "../src/index.ts";
import { DashboardView } from "../src/monitor/dashboard_live.ts";
import { DashboardRecorder } from "../src/monitor/mod.ts";
import type { DriftView } from "./drift_view.ts";
import type { ProgramData } from "./programs/common.ts";
import { type ProgramName, type Settings } from "./settings.ts";

/** The dashboard's title: data, model, mode, ranks ("MNIST mlp · cpu-cadence · 2 ranks"). */
export function runTitle(s: Settings): string {
  return `${s.program === "gpt-nano" ? "Brown" : "MNIST"} ${s.program} · ${s.mode} · ${s.ranks} rank${s.ranks === 1 ? "" : "s"}`;
}

/** What a program module exports. */
export interface Program {
  builder: DdpBuilder<Module>;
  makeModel: (device: Device) => Module;
  data: ProgramData;
}

/**
 * The program modules, imported on demand. Each is its own chunk in a production build
 * (src/vite_plugin.ts), so a rank worker can import it without this page's DOM code.
 */
export const PROGRAMS: Record<ProgramName, () => Promise<Program>> = {
  logistic: () => import("./programs/logistic.ts"),
  mlp: () => import("./programs/mlp.ts"),
  lenet: () => import("./programs/lenet.ts"),
  "gpt-nano": () => import("./programs/gpt_nano.ts"),
};

/** What a session tells the page as it goes. */
export interface SessionEvents {
  epoch(m: EpochMetrics, session: Session): void;
  eval(epoch: number, value: number, session: Session): void;
  reduce(round: number, session: Session): void;
  /** A rank's batch (many per second: keep it cheap). */
  batch(e: BatchEvent, session: Session): void;
}

/** A run: start it with {@link Session.start}; `result` settles when it ends. */
export class Session {
  readonly settings: Settings;
  readonly program: Program;
  readonly recorder: DashboardRecorder;
  readonly view: DashboardView;
  readonly title: string;
  handle?: DdpHandle;
  devices: string[] = [];
  epochs = 0;
  reduces = 0;
  readonly evals: { epoch: number; value: number }[] = [];
  startedAt = 0;
  /** The consensus of the latest reduce (only for text programs, which sample from it). */
  consensus?: Float32Array;
  #following: Promise<void> = Promise.resolve();

  constructor(
    settings: Settings,
    program: Program,
    dashboard: HTMLElement,
    readonly drift: DriftView | undefined,
    readonly events: SessionEvents,
  ) {
    this.settings = settings;
    this.program = program;
    this.title = runTitle(settings);
    const config = this.#config();
    // A slowed-down rank's batches end in a sleep: the rank lanes show it as throttle.
    const slowdown = Array.from({ length: settings.ranks }, (_, r) => (r === settings.slowRank ? settings.slowFactor : 1));
    this.recorder = new DashboardRecorder({
      worldSize: settings.ranks,
      title: this.title,
      config,
      evalLabel: this.#evalLabel(),
      slowdown,
    });
    this.view = new DashboardView(dashboard, { theme: "auto", title: this.title });
    this.view.setData({ title: this.title, worldSize: settings.ranks, epochs: [], config, evalLabel: this.#evalLabel(), slowdown });
  }

  #evalLabel(): string {
    return this.program.data.kind === "text" ? "validation CE" : "accuracy";
  }

  #config(): Record<string, string | number | boolean> {
    const s = this.settings;
    return {
      model: s.program,
      ranks: s.ranks,
      mode: s.mode,
      epochs: s.epochs,
      batchSize: s.batch,
      anchor: s.anchor,
      bf16Wire: s.bf16,
      slowdown: s.slowRank < 0 ? "none" : `rank ${s.slowRank} × ${s.slowFactor}`,
      trainSamples: this.program.data.train.len(),
      testSamples: this.program.data.test.len(),
    };
  }

  /** Set the knobs, attach the observer and launch; resolves once the ranks are up. */
  async start(): Promise<DdpHandle> {
    const s = this.settings;
    const elche = ElCheConfig.defaultFor(s.mode);
    const ranks: RankSpecification[] = Array.from(
      { length: s.ranks },
      (_, r) => (r === s.slowRank ? { slowdown: s.slowFactor } : {}),
    );
    const b = this.program.builder
      .batchSize(s.batch)
      .numEpochs(s.epochs)
      .elche(elche)
      .bf16Wire(s.bf16)
      .anchor(s.anchor)
      .cluster({ ranks })
      .evalResultFn((epoch, value) => {
        this.evals.push({ epoch, value });
        this.view.appendEval(epoch, value);
        this.recorder.eval(epoch, value);
        this.events.eval(epoch, value, this);
      });
    this.drift?.reset(s.ranks, s.mode === "cpu-async" ? elche.easgdAlpha ?? 1 : 1);
    observe(b, {
      batch: (e) => {
        this.view.appendBatch(e);
        this.recorder.batch(e);
        this.events.batch(e, this);
      },
      reduce: (e) => {
        this.reduces++;
        this.view.appendReduce(e);
        this.recorder.reduce(e);
        this.events.reduce(e.round, this);
      },
      frames: (round, perRank, consensus) => {
        this.drift?.addFrames(round, perRank, consensus);
        if (this.program.data.kind === "text") this.consensus = consensus.slice();
      },
      wantsFrames: this.drift !== undefined || this.program.data.kind === "text",
      // Membership in the live view's rank table and events (a worker that died; a joined rank).
      rankLost: (rank, reason) => this.view.appendMembership({ ts: Date.now(), rank, kind: "lost", epoch: this.epochs, reason }),
      rankJoined: (rank, epoch, place) => this.view.appendMembership({ ts: Date.now(), rank, kind: "joined", epoch, ...place }),
    });
    this.startedAt = performance.now();
    const handle = await b.run();
    this.handle = handle;
    this.devices = handle.devices();
    this.view.setData({ ...this.view.data, devices: this.devices });
    this.#following = this.#follow(handle);
    return handle;
  }

  async #follow(handle: DdpHandle): Promise<void> {
    for await (const m of handle) {
      this.epochs++;
      this.view.appendEpoch(m);
      this.recorder.epoch(m);
      this.events.epoch(m, this);
    }
  }

  /** The consensus at the end (rejects with the error that stopped the run). */
  async result(): Promise<TrainedState> {
    if (!this.handle) throw new Error("Session.result: the run has not started");
    try {
      const state = await this.handle.join();
      await this.#following; // every epoch's metrics shown and recorded
      return state;
    } finally {
      this.recorder.finish();
    }
  }

  /** The self-contained dashboard of this run, as it stands. */
  dashboardData() {
    return this.recorder.data({ devices: this.devices });
  }

  /** Remove this run's live dashboard from the page. */
  destroy(): void {
    this.view.destroy();
  }
}
