/**
 * The remote-rank test's accuracy bar (test/gpu/distributed/remote_deno_test.ts): the test
 * accuracy of its program (test/fixtures/programs/mnist_remote.ts, `remoteProgram(40)` by default)
 * with all 3 ranks local workers, `runs` times. Ranks race (cpu-cadence), so runs differ;
 * the test's bar sits below the lowest. Results and the command: bench/README.md.
 *
 *   deno run -A --no-check bench/remote_band.ts [runs=12] [ranks=3] [batch=40]
 *
 * bench/fault_soak.ts's band is 2 ranks with batches of 16.
 */
import { remoteProgram } from "../test/fixtures/programs/mnist_remote.ts";

const [runs = 12, ranks = 3, batch = 40] = Deno.args.map(Number);
const accs: number[] = [];
for (let i = 0; i < runs; i++) {
  const h = await remoteProgram(batch).cluster({ ranks: Array.from({ length: ranks }, () => ({})) }).run();
  await h.join();
  const acc = h.evals.filter((e) => e.value !== undefined).at(-1)?.value;
  if (acc === undefined) throw new Error(`run ${i + 1}: no eval`);
  accs.push(acc);
  console.log(`run ${i + 1}/${runs}: test accuracy ${acc.toFixed(3)}`);
}
const sorted = [...accs].sort((a, b) => a - b);
console.log(`${ranks} local ranks, batches of ${batch}, ${runs} runs: ${sorted.map((a) => a.toFixed(3)).join(", ")} — lowest ${sorted[0].toFixed(3)}, median ${sorted[Math.floor(runs / 2)].toFixed(3)}`);
