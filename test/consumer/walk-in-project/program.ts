// Your own model on your own data: the module every rank runs, walk-ins included.
// A walk-in may not read files: it takes the coordinator's data from walkInData().
import { ArrayDataSet, type BatchDataSet, crossEntropy, Linear, ReLU, Sequential, SGD, Trainer, Variable, walkInData } from "flodl-webgpu";
import { accuracy } from "flodl-webgpu/zoo";

/** Two Gaussian blobs in 4-D, centred at ±1: label 1 for the blob at +1. */
function blobs(n: number, seed: number): ArrayDataSet {
  let s = seed;
  const uniform = () => ((s = (s * 1664525 + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  const x = new Float32Array(n * 4), y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    y[i] = i % 2;
    for (let j = 0; j < 4; j++) {
      const gauss = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
      x[i * 4 + j] = (y[i] ? 1 : -1) + gauss;
    }
  }
  return new ArrayDataSet([{ data: x, shape: [n, 4] }, { data: y, shape: [n] }]);
}

const packs = walkInData();
export const train: BatchDataSet = packs?.train ?? blobs(1536, 7);
export const test: BatchDataSet = packs?.test ?? blobs(256, 9);

export const builder = Trainer.builder(
  (device) => new Sequential(new Linear(4, 16, { device }), new ReLU(), new Linear(16, 2, { device })),
  (params) => new SGD(params, { lr: 0.1 }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(train).evalDataset(test).evalFn(accuracy);
