/**
 * Demo program: LeNet-5 with BatchNorm: two Conv-BN-ReLU-MaxPool blocks, then 256-120-84-10.
 *
 * The page imports this module, sets the coordinator-side knobs on `builder` and calls
 * `run()`; every rank worker re-runs this module's top level (SPMD re-entry), so the
 * builder is created here, at top level, with the rank-side pieces attached.
 */
import { Trainer } from "../../src/index.ts";
import { lenet } from "../../src/zoo/mod.ts";
import { adam, attach, classify, loadData } from "./common.ts";

/** Builds the model on a device (the page rebuilds it to try the trained weights). */
export const makeModel = lenet;

/** The MNIST subsets the program arguments name (the page also draws sample digits from them). */
export const data = await loadData();

export const builder = attach(Trainer.builder(lenet, adam, classify), data);
