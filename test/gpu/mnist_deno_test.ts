/**
 * Accuracy on the full MNIST test set (60,000 train / 10,000 test, 3 epochs, batch 64,
 * Adam 1e-3, the 784-256-10 MLP): the engine alone (examples/mnist_mlp.ts) and the
 * data-parallel trainer with 2 ranks, cpu-cadence and the bf16 wire (the default
 * `npm start`) both reach ≥ 97.5%. Both standardize pixels as torchvision's MNIST examples do:
 * PyTorch itself (this model and optimizer, 2-rank local SGD with bf16 averaging simulated, 3
 * seeds) averages 97.3% / 97.4% on raw [0, 1] pixels and 97.6% / 97.6% standardized.
 */
import { assert } from "../util/assert.ts";
import { gpuTest } from "../util/gpu.ts";

async function run(args: string[]): Promise<string> {
  const res = await new Deno.Command("sh", { args, stdout: "piped", stderr: "piped" }).output();
  const out = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
  assert(res.code === 0, `${args.join(" ")} exited ${res.code}:\n${out.slice(-3000)}`);
  return out;
}

function lastAccuracy(out: string): number {
  const all = [...out.matchAll(/(?:test accuracy|test acc) (\d+\.\d+)%/g)];
  assert(all.length > 0, `no accuracy in the output:\n${out}`);
  return Number(all[all.length - 1][1]) / 100;
}

gpuTest("examples/mnist_mlp.ts (the engine, one device) reaches >= 97.5% test accuracy in 3 epochs", async () => {
  const out = await run(["-c", ". scripts/env.sh && deno run -A --no-check examples/mnist_mlp.ts --epochs 3 --target 0.975"]);
  const acc = lastAccuracy(out);
  assert(acc >= 0.975, `test accuracy ${acc}`);
});

gpuTest("npm start defaults (MLP, 2 ranks, cpu-cadence, bf16 wire, 3 epochs) reach >= 97.5% test accuracy", async () => {
  const dir = await Deno.makeTempDir({ prefix: "flodl-mnist-" });
  try {
    const out = await run(["scripts/start.sh", "--out", dir]);
    const acc = lastAccuracy(out);
    assert(acc >= 0.975, `test accuracy ${acc}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
