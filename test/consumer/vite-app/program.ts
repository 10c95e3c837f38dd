// The program every rank re-enters: the model, its data and the builder, at top level.
import { Adam, ArrayDataSet, crossEntropy, Linear, Sequential, Tanh, Trainer, Variable } from "flodl-webgpu";

/** Points in the square [-1, 1]²: label 1 inside the disc of radius 0.6. */
function disc(n: number): ArrayDataSet {
  const x = new Float32Array(n * 2), y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const a = Math.sin(i * 12.9898) * 43758.5453, b = Math.sin(i * 78.233) * 12345.6789;
    x[2 * i] = 2 * (a - Math.floor(a)) - 1;
    x[2 * i + 1] = 2 * (b - Math.floor(b)) - 1;
    y[i] = Math.hypot(x[2 * i], x[2 * i + 1]) < 0.6 ? 1 : 0;
  }
  return new ArrayDataSet([{ data: x, shape: [n, 2] }, { data: y, shape: [n] }]);
}

export const builder = Trainer.builder(
  (device) => new Sequential(new Linear(2, 32, { device }), new Tanh(), new Linear(32, 2, { device })),
  (params) => new Adam(params, { lr: 0.05 }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(disc(1024)).batchSize(32).numEpochs(4).cluster({ ranks: [{}, {}] });
