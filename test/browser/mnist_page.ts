/**
 * MNIST in Chromium, for test/browser/mnist.spec.ts: `?mode=engine` trains the MLP with a
 * plain loop on this page's device; `?mode=trainer&ranks=2` runs the data-parallel
 * trainer (ranks are Web Workers re-entering test/fixtures/programs/mnist.ts). Both train
 * on the first `train` images and report accuracy on `test` held-out images in
 * `window.__mnist` = { done, accuracy, error, samplesPerSec }.
 */
import { Adam, Device, ElCheConfig, loadMnist, manualSeed, permutation, setProgramArgs } from "../../src/index.ts";
import { accuracy, mlp, trainEpoch } from "../../src/zoo/mod.ts";

const q = new URLSearchParams(location.search);
const mode = q.get("mode") ?? "engine";
const train = Number(q.get("train") ?? 5000), test = Number(q.get("test") ?? 1000), epochs = Number(q.get("epochs") ?? 3);
const state: { done: boolean; accuracy?: number; error?: string; samplesPerSec?: number; adapter?: string } = { done: false };
(globalThis as unknown as { __mnist: typeof state }).__mnist = state;
const log = document.getElementById("log")!;
const say = (s: string): void => {
  log.textContent += `\n${s}`;
};

async function engine(): Promise<void> {
  const device = await Device.request();
  state.adapter = device.info.architecture || device.info.description;
  manualSeed(3);
  const data = await loadMnist({ split: "train", limit: train, baseUrl: "/mnist/", normalize: true });
  const held = await loadMnist({ split: "test", limit: test, baseUrl: "/mnist/", normalize: true });
  const model = mlp(device);
  const opt = new Adam(model.parameters(), { lr: 1e-3 });
  const B = 64;
  let samples = 0;
  const t0 = performance.now();
  for (let e = 0; e < epochs; e++) {
    samples += (await trainEpoch(model, opt, data, permutation(11, e, data.len()), B)).steps * B;
    say(`epoch ${e + 1}: ${(await accuracy(model, held) * 100).toFixed(1)}%`);
  }
  state.samplesPerSec = samples / ((performance.now() - t0) / 1000);
  state.accuracy = await accuracy(model, held);
}

async function trainer(): Promise<void> {
  const ranks = Number(q.get("ranks") ?? 2);
  setProgramArgs({ train, test, baseUrl: "/mnist/" });
  const { mnist } = await import("../fixtures/programs/mnist.ts");
  const t0 = performance.now();
  const h = await mnist.clone().elche(ElCheConfig.cpuCadence()).bf16Wire(true).batchSize(64).numEpochs(epochs)
    .cluster({ ranks: Array.from({ length: ranks }, () => ({})) })
    .evalResultFn((e, acc) => say(`eval ${e}: ${(acc * 100).toFixed(1)}%`))
    .run();
  state.adapter = h.devices().join(", ");
  await h.join();
  const samples = h.history.reduce((a, m) => a + m.perRankSamples.reduce((x, y) => x + y, 0), 0);
  state.samplesPerSec = samples / ((performance.now() - t0) / 1000);
  state.accuracy = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
}

(mode === "trainer" ? trainer() : engine()).then(
  () => {
    say(`accuracy ${state.accuracy}`);
    state.done = true;
  },
  (e) => {
    state.error = String((e as Error)?.stack ?? e);
    say(state.error);
    state.done = true;
  },
);
