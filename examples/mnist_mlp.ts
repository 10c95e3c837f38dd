/**
 * Train the MNIST MLP on one device with a plain loop over the engine (no trainer):
 * Flatten → Linear(784,256) → ReLU → Linear(256,10), Adam 1e-3, batch 64.
 *
 *   npx deno run -A examples/mnist_mlp.ts [--epochs 3] [--limit N]
 *
 * Prints loss and test accuracy per epoch; exits non-zero below --target (default 0.968
 * for the full 3 epochs: below the lowest of PyTorch's 10 seeds on this job, 97.03%;
 * bench/README.md "Accuracy").
 */
import { Adam, Device, loadMnist, manualSeed, permutation } from "../src/index.ts";
import { accuracy, mlp, trainEpoch } from "../src/zoo/mod.ts";

function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(Deno.args[i + 1]);
  if (!Number.isFinite(v)) throw new RangeError(`--${name} must be a number, got ${Deno.args[i + 1]}`);
  return v;
}

const epochs = flag("epochs", 3);
const limit = flag("limit", 0) || undefined;
const target = flag("target", 0.968);
const B = 64;

const device = await Device.request();
console.log(`adapter: ${device.info.description || device.info.architecture}`);
manualSeed(1);
// Pixels standardized with MNIST's mean and std, as torchvision's MNIST examples.
const train = await loadMnist({ split: "train", limit, normalize: true });
const test = await loadMnist({ split: "test", normalize: true });
const model = mlp(device);
const opt = new Adam(model.parameters(), { lr: 1e-3 });

let acc = 0;
for (let epoch = 0; epoch < epochs; epoch++) {
  const t0 = performance.now();
  const { steps, meanLoss } = await trainEpoch(model, opt, train, permutation(7, epoch, train.len()), B);
  acc = await accuracy(model, test);
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `epoch ${epoch + 1}/${epochs}  loss ${meanLoss.toFixed(4)}  test accuracy ${(acc * 100).toFixed(2)}%  ` +
      `${(steps * B / secs).toFixed(0)} samples/s`,
  );
}
if (acc < target) {
  console.error(`test accuracy ${(acc * 100).toFixed(2)}% is below the target ${(target * 100).toFixed(2)}%`);
  Deno.exit(1);
}
