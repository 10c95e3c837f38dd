/**
 * The Chromium bench page (bench/engine.html): exposes `globalThis.bench.run(options)`,
 * which runs the suite of bench/suite.ts in this page and resolves with its result.
 * bench/bench.spec.ts drives it; opened by hand it also shows the log.
 */
import { type FirstStep, firstStep, runSuite, type SuiteOptions, type SuiteResult } from "./suite.ts";
import type { Contender } from "./contenders.ts";
import { type FirstUse, firstUse } from "./tiling_first_use.ts";

const logEl = document.getElementById("log")!;
const log = (line: string) => {
  console.log(line);
  logEl.textContent += line + "\n";
};

/** What bench/bench.spec.ts calls in this page. */
export interface BenchPage {
  run(o?: SuiteOptions): Promise<SuiteResult>;
  firstUse(t?: string[]): Promise<FirstUse[]>;
  firstStep(who: Contender): Promise<FirstStep>;
}

(globalThis as unknown as { bench: BenchPage }).bench = {
  run: (options = {}) => runSuite({ ...options, log }),
  firstUse: (tilings) => firstUse(tilings, log),
  firstStep,
};
document.getElementById("status")!.textContent = "ready";
