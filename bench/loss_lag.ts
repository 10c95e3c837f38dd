/**
 * Reading the loss every step without waiting on it: our W2 step (bench/ours.ts's MLP, one
 * submit per step) with the loss read (a) once at the end, (b) every step, awaited before the
 * next step (bench/engine.ts's "every step"), (c) every step, the read of step k awaited at
 * step k + LAG (2 or 3 steps in flight), so Deno's ≥ 10 ms readback wait
 * (bench/submit_floor.ts) overlaps the next steps' recording and GPU work. Same losses in all
 * modes (checked: the last loss of each mode must match (a)'s).
 *
 *   deno run -A bench/loss_lag.ts [--steps 50] [--rounds 3]
 */
import { Device } from "../src/index.ts";
import { oursMlpLagged } from "./ours.ts";
import { median } from "./workloads.ts";

const arg = (name: string, dflt: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : dflt;
};
const steps = arg("steps", 50), rounds = arg("rounds", 3);
const device = await Device.request({ label: "loss_lag" });
Device.setDefault(device);

const modes: [string, number][] = [["at end", -1], ["every step, awaited", 0], ["every step, step k read at k + 2", 2], [
  "every step, step k read at k + 3",
  3,
]];
const results = new Map<string, number[]>(modes.map(([l]) => [l, []]));
let ref = NaN;
for (let r = 0; r < rounds; r++) {
  for (const [label, lag] of modes) {
    const { sps, last } = await oursMlpLagged(device, steps, lag);
    if (Number.isNaN(ref)) ref = last;
    if (last !== ref) throw new Error(`bench/loss_lag: ${label} ended at loss ${last}, the at-end run at ${ref}`);
    results.get(label)!.push(sps);
  }
}
console.log(`bench/loss_lag: deno ${Deno.version.deno}, ${steps} steps × ${rounds} rounds (interleaved), load ${Deno.loadavg()[0].toFixed(2)}, last loss ${ref.toFixed(4)}`);
console.log("\n| loss read | samples/s (median) | runs |\n|---|---|---|");
const base = median(results.get("at end")!);
for (const [label] of modes) {
  const xs = results.get(label)!;
  console.log(`| ${label} | ${Math.round(median(xs))} (${(median(xs) / base).toFixed(2)}× at end) | ${xs.map(Math.round).join(", ")} |`);
}
