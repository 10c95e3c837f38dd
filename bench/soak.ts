/**
 * Soak: N consecutive `npm start` runs (the default job unless flags follow `--`), each
 * in its own Deno process with a wall limit. Reports hangs (past the limit), failures,
 * wall times and final accuracies, and writes them to bench/results/soak-<stamp>.json.
 * Not part of `npm test`: it takes about a minute and a half per default run here.
 *
 *   . scripts/env.sh && deno run -A bench/soak.ts --runs 50 [--limit-secs 600] [-- npm start flags]
 */
const sep = Deno.args.indexOf("--");
const own = sep < 0 ? Deno.args : Deno.args.slice(0, sep);
const extra = sep < 0 ? [] : Deno.args.slice(sep + 1);
const flag = (name: string, fallback: string) => {
  const i = own.indexOf(`--${name}`);
  return i < 0 ? fallback : own[i + 1] ?? "";
};
const runs = Number(flag("runs", "50")), limitSecs = Number(flag("limit-secs", "600"));
if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`soak: --runs must be an integer >= 1, got ${flag("runs", "")}`);
if (!(limitSecs > 0)) throw new RangeError(`soak: --limit-secs must be > 0, got ${flag("limit-secs", "")}`);

interface Outcome {
  run: number;
  status: "ok" | "failed" | "hang";
  code: number | null;
  secs: number;
  accuracy?: number;
  tail?: string;
}

const out: Outcome[] = [];
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const file = `bench/results/soak-${stamp}.json`;
const outDir = await Deno.makeTempDir({ prefix: "flodl-soak-" });
for (let i = 1; i <= runs; i++) {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", "examples/train.ts", "--out", outDir, ...extra],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill("SIGKILL");
  }, limitSecs * 1000);
  const res = await child.output();
  clearTimeout(timer);
  const secs = (performance.now() - t0) / 1000;
  const text = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
  const acc = /final test accuracy ([\d.]+)%/.exec(text);
  const o: Outcome = {
    run: i,
    status: hung ? "hang" : res.code === 0 && acc ? "ok" : "failed",
    code: hung ? null : res.code,
    secs: Math.round(secs * 10) / 10,
    accuracy: acc ? Number(acc[1]) : undefined,
  };
  if (o.status !== "ok") o.tail = text.slice(-2000);
  out.push(o);
  console.log(`run ${i}/${runs}: ${o.status}${o.accuracy !== undefined ? ` ${o.accuracy.toFixed(2)}%` : ""} in ${o.secs} s`);
  await Deno.mkdir("bench/results", { recursive: true });
  await Deno.writeTextFile(file, JSON.stringify({ args: extra, limitSecs, runs: out }, null, 1));
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  await Deno.mkdir(outDir, { recursive: true });
}
await Deno.remove(outDir, { recursive: true }).catch(() => {});

const ok = out.filter((o) => o.status === "ok");
const accs = ok.map((o) => o.accuracy!).sort((a, b) => a - b);
const walls = ok.map((o) => o.secs).sort((a, b) => a - b);
const q = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
console.log(
  `\n${runs} runs: ${ok.length} ok, ${out.filter((o) => o.status === "hang").length} hung (> ${limitSecs} s), ` +
    `${out.filter((o) => o.status === "failed").length} failed`,
);
if (ok.length) {
  console.log(`accuracy %: min ${accs[0]} median ${q(accs, 0.5)} max ${accs[accs.length - 1]}`);
  console.log(`wall s: min ${walls[0]} median ${q(walls, 0.5)} max ${walls[walls.length - 1]}`);
}
console.log(`results: ${file}`);
