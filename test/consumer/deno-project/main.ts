// Your own model on your own data, trained data-parallel by 2 worker ranks (Deno).
import { ArrayDataSet, crossEntropy, isRank, Linear, ReLU, Sequential, SGD, Trainer, Variable } from "flodl-webgpu";

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

// At top level: every rank worker re-runs this module to rebuild these closures.
const builder = Trainer.builder(
  (device) => new Sequential(new Linear(4, 16, { device }), new ReLU(), new Linear(16, 2, { device })),
  (params) => new SGD(params, { lr: 0.1 }),
  (model, [x, y]) => crossEntropy(model.forward(new Variable(x)), y),
).dataset(blobs(1024, 7)).batchSize(32).numEpochs(4).cluster({ ranks: [{}, {}] });

if (!isRank()) {
  const handle = await builder.run();
  for await (const m of handle) {
    console.log(JSON.stringify({ epoch: m.epoch, loss: m.avgLoss, samplesPerRank: m.perRankSamples }));
  }
  const { params } = await handle.join();
  console.log(JSON.stringify({ trained: [...params.keys()] }));
}
