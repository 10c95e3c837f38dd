/**
 * Demo program: the MLP: Flatten → Linear(784, 256) → ReLU → Linear(256, 10).
 *
 * The page imports this module, sets the coordinator-side knobs on `builder` and calls
 * `run()`; every rank worker re-runs this module's top level (SPMD re-entry), so the
 * builder is created here, at top level, with the rank-side pieces attached.
 */
import { Trainer } from "../../src/index.ts";
import { mlp } from "../../src/zoo/mod.ts";
import { adam, attach, classify, loadData } from "./common.ts";

/** Builds the model on a device (the page rebuilds it to try the trained weights). */
export const makeModel = mlp;

/** The MNIST subsets the program arguments name (the page also draws sample digits from them). */
export const data = await loadData();

export const builder = attach(Trainer.builder(mlp, adam, classify), data);
