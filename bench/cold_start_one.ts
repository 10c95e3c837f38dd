/**
 * One cold start in this (fresh) process (bench/cold_start_run.ts), written to <result.json>;
 * the process ends at once after it. bench/cold_start.ts starts one per model and rank count.
 *
 *   deno run -A --no-check bench/cold_start_one.ts <model> <ranks> <result.json> [steps=4]
 */
import { exitNow } from "../examples/exit.ts";
import { MODELS, type ModelName } from "../src/zoo/mod.ts";
import { coldStart } from "./cold_start_run.ts";

const [model, ranksArg, out, stepsArg = "4"] = Deno.args;
if (!MODELS.includes(model as ModelName)) throw new RangeError(`cold_start_one.ts: model must be one of ${MODELS.join(", ")}, got ${JSON.stringify(model)}`);
const ranks = Number(ranksArg);
if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError(`cold_start_one.ts: ranks must be an integer >= 1, got ${JSON.stringify(ranksArg)}`);
if (!out) throw new RangeError("cold_start_one.ts: expects <model> <ranks> <result.json> [steps]");
const steps = Number(stepsArg);
if (!Number.isInteger(steps) || steps < 1) throw new RangeError(`cold_start_one.ts: steps must be an integer >= 1, got ${JSON.stringify(stepsArg)}`);

const result = await coldStart(model as ModelName, ranks, steps);
await Deno.writeTextFile(out, JSON.stringify(result) + "\n");
exitNow(0); // measured: the rest of the run and its teardown are not
