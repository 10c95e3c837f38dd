/**
 * The cold-start page (bench/cold_start.html): `globalThis.coldStart.run(model, ranks, steps)`
 * times one cold start in this page (bench/cold_start_run.ts), ranks as Web Workers.
 * bench/cold_start.spec.ts opens it in a fresh browser per run.
 */
import { CHAR_MODELS, MODELS, type ModelName } from "../src/zoo/mod.ts";
import { type ColdStart, coldStart } from "./cold_start_run.ts";

/** What bench/cold_start.spec.ts calls in this page. */
export interface ColdStartPage {
  /** The ddp-bench models (the spec's default list). */
  models: readonly ModelName[];
  run(model: ModelName, ranks: number, steps: number): Promise<ColdStart>;
}

(globalThis as unknown as { coldStart: ColdStartPage }).coldStart = {
  models: MODELS,
  // The data from the project's Vite middlewares (vite.config.ts).
  run: (model, ranks, steps) => {
    if (!MODELS.includes(model)) throw new RangeError(`BENCH_MODELS: ${JSON.stringify(model)} is not one of ${MODELS.join(", ")}`);
    return coldStart(model, ranks, steps, CHAR_MODELS.includes(model) ? "/brown/" : "/mnist/");
  },
};
document.getElementById("status")!.textContent = "ready";
