// The program every rank re-enters, as a plain ES module: no bundler, no build step. Served by
// any static server from the project folder; ranks import this file again by its URL.
import {
  ArrayDataSet,
  crossEntropy,
  Linear,
  Sequential,
  SGD,
  Sigmoid,
  Trainer,
  Variable,
} from "./node_modules/flodl-webgpu/lib/index.js";

/** Points in the square [-1, 1]²: label 1 above the line y = x / 2. */
function halfPlane(n) {
  const x = new Float32Array(n * 2), y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const a = Math.sin(i * 91.3458) * 47453.5453, b = Math.sin(i * 31.113) * 23421.631;
    x[2 * i] = 2 * (a - Math.floor(a)) - 1;
    x[2 * i + 1] = 2 * (b - Math.floor(b)) - 1;
    y[i] = x[2 * i + 1] > x[2 * i] / 2 ? 1 : 0;
  }
  return new ArrayDataSet([{ data: x, shape: [n, 2] }, { data: y, shape: [n] }]);
}

export const builder = Trainer.builder(
  (device) => new Sequential(new Linear(2, 8, { device }), new Sigmoid(), new Linear(8, 2, { device })),
  (params) => new SGD(params, { lr: 0.5 }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(halfPlane(1024)).batchSize(32).numEpochs(4).cluster({ ranks: [{}, {}] });
