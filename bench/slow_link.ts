/**
 * The trainer over a slow link (issue 10, "Performance"): the coordinator and rank 0 (a
 * worker) on this side, ranks 1..W-1 as Deno processes (bench/net_rank.ts) in a network
 * namespace behind a veth pair rate-limited by tbf (bench/netns.ts), reaching the
 * coordinator's nats-server through a userspace delay proxy (bench/delay_proxy.ts; the
 * kernel here has no netem). Default link: 20 ms RTT, 100 Mbit/s each way. The link is
 * measured first (bench/link_probe.ts), then cpu-sync, cpu-cadence and cpu-async train the
 * trainer bench's MNIST MLP (784-256-10, 203,530 parameters: 814 KB f32 / 407 KB bf16 a
 * frame) with f32 and bf16 frames, interleaved.
 *
 *   sudo deno run -A --no-check bench/slow_link.ts [--rtt 20] [--mbit 100] [--ranks 2]
 *       [--modes cpu-sync,cpu-cadence,cpu-async] [--wire f32,bf16] [--subset 2560] [--epochs 3] [--reps 1] [--nice -10] [--tag t]
 *
 * `--probe-only` measures the link and stops. Needs root (refuses otherwise, before touching anything); removes its namespace and veth
 * pair by name when it ends, fails, or gets SIGINT/SIGTERM (`deno run -A bench/netns.ts`
 * removes what a SIGKILLed run left). Writes bench/results/<date>-slow-link[-<tag>].json.
 */
import { type ElCheMode, setProgramArgs } from "../src/index.ts";
import { exitNow } from "../examples/exit.ts";
import { BATCH } from "./ddp_measure.ts";
import { spawnDelayProxy } from "./delay_proxy.ts";
import { startProbeServer } from "./link_probe.ts";
import { createSlowLink, requireRoot, type SlowLink } from "./netns.ts";
import { killLive, livePids, type RemoteRun, runRemote, steadyShare } from "./remote_runs.ts";
import { round } from "./workloads.ts";

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1] : fallback;
}
function numFlag(name: string, fallback: number, ok: (v: number) => boolean, want: string): number {
  const v = Number(flag(name, String(fallback)));
  if (!ok(v)) throw new RangeError(`bench/slow_link.ts: --${name} must be ${want}, got ${flag(name, "")}`);
  return v;
}

try {
  requireRoot("bench/slow_link.ts");
} catch (e) {
  console.error((e as Error).message);
  Deno.exit(2);
}
const RTT = numFlag("rtt", 20, (v) => Number.isFinite(v) && v >= 0 && v <= 2000, "a number of ms in [0, 2000]");
const MBIT = numFlag(
  "mbit",
  100,
  (v) => Number.isFinite(v) && v > 0 && v <= 10_000,
  "a number of Mbit/s in (0, 10000]",
);
const RANKS = numFlag(
  "ranks",
  2,
  (v) => Number.isInteger(v) && v >= 2,
  "an integer >= 2 (rank 0 local, the rest behind the link)",
);
const SUBSET = numFlag("subset", 2560, (v) => Number.isInteger(v) && v >= 256, "an integer >= 256");
const EPOCHS = numFlag("epochs", 3, (v) => Number.isInteger(v) && v >= 2, "an integer >= 2");
/** The delay proxy's niceness: ahead of the training processes, as a network card would be. */
const NICE = numFlag("nice", -10, (v) => Number.isInteger(v) && v >= -20 && v <= 19, "an integer in [-20, 19]");
const REPS = numFlag("reps", 1, (v) => Number.isInteger(v) && v >= 1, "an integer >= 1");
const MODES = flag("modes", "cpu-sync,cpu-cadence,cpu-async").split(",") as ElCheMode[];
const KNOWN = ["cpu-sync", "cpu-cadence", "cpu-async"];
if (!MODES.every((m) => KNOWN.includes(m))) {
  throw new RangeError(`bench/slow_link.ts: --modes must be among ${KNOWN.join(",")}, got ${flag("modes", "")}`);
}
const WIRES = flag("wire", "f32,bf16").split(",");
if (!WIRES.every((w) => w === "f32" || w === "bf16")) {
  throw new RangeError(`bench/slow_link.ts: --wire must be f32 and/or bf16, got ${flag("wire", "")}`);
}

const t0 = performance.now();
const adapter = await navigator.gpu.requestAdapter();
const adapterName = adapter ? adapter.info.description || adapter.info.architecture : "none";
const loadBefore = Deno.loadavg();
console.log(
  `bench/slow_link: MNIST MLP 784-256-10, ${SUBSET} samples, batch ${BATCH}, ${EPOCHS} epochs (all but the first measured), ` +
    `rank 0 local, ranks 1..${RANKS - 1} behind ${RTT} ms RTT / ${MBIT} Mbit/s, adapter ${adapterName}, load ${
      loadBefore.map((x) => x.toFixed(2)).join(" ")
    }`,
);

function fmtSteady(s: { share: number; reduces: number } | null): string {
  return s ? `${(s.share * 100).toFixed(1)}% (${s.reduces} reduces)` : "— (< 2 reduces there)";
}

/** [1, 1, 1, 4, 8] as "1×3,4,8": ElChe's anchors per reduce, short. */
function runs(xs: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length;) {
    let j = i;
    while (j < xs.length && xs[j] === xs[i]) j++;
    out.push(j - i > 1 ? `${xs[i]}×${j - i}` : `${xs[i]}`);
    i = j;
  }
  return out.join(",");
}

/** `--probe-only`: measure the link, clean up, stop. */
class ProbeOnly extends Error {}

type Row = RemoteRun & {
  rep: number;
  linkBytes: { toRanks: number; fromRanks: number };
  /** The link probed right after the run (1 MiB each way, 20 pings). */
  linkAfter: { rttMedianMs: number; upMbit: number; downMbit: number };
};
const rows: Row[] = [];
let link: SlowLink | undefined;
let code = 0;
try {
  link = await createSlowLink(MBIT, (l) => console.log(`netns: ${l}`), killLive);
  const netns = ["ip", "netns", "exec", link.ns];

  // What the link does, measured from the ranks' side through the same proxy: before the
  // runs (4 MiB) and after each (1 MiB), as the machine's load changes what it delivers.
  const measureLink = async (mib: number, label: string) => {
    const server = startProbeServer();
    const pp = await spawnDelayProxy({
      listen: { hostname: link!.hostIp },
      target: { hostname: "127.0.0.1", port: server.port },
      oneWayMs: RTT / 2,
      nice: NICE,
    }, livePids);
    const script = new URL("./link_probe.ts", import.meta.url).pathname;
    const probeOut = await new Deno.Command(netns[0], {
      args: [
        ...netns.slice(1),
        Deno.execPath(),
        "run",
        "-A",
        "--no-check",
        script,
        link!.hostIp,
        String(pp.port),
        String(mib),
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    await pp.close();
    server.close();
    const dec = new TextDecoder();
    if (!probeOut.success) throw new Error(`link probe failed: ${dec.decode(probeOut.stderr)}`);
    const p = JSON.parse(dec.decode(probeOut.stdout).trim().split("\n").at(-1)!);
    console.log(
      `${label}: RTT median ${p.rttMedianMs} ms (min ${Math.min(...p.rttMs)}, max ${Math.max(...p.rttMs)}), ` +
        `${mib} MiB up ${p.upMs} ms = ${p.upMbit} Mbit/s, down ${p.downMs} ms = ${p.downMbit} Mbit/s`,
    );
    return p as { rttMedianMs: number; upMbit: number; downMbit: number; rttMs: number[] };
  };
  const probe = await measureLink(4, "link");

  if (Deno.args.includes("--probe-only")) throw new ProbeOnly();
  setProgramArgs({ subset: SUBSET });
  const { builder } = await import("./ddp_program.ts");
  for (let rep = 0; rep < REPS; rep++) {
    for (const wire of WIRES) {
      const modes = rep % 2 === 0 ? MODES : [...MODES].reverse();
      for (const mode of modes) {
        let b = { toTarget: 0, toClient: 0 };
        const r = await runRemote(
          builder,
          { ranks: RANKS, mode, bf16: wire === "bf16", remote: RANKS - 1 },
          EPOCHS,
          async (wsUrl) => {
            const port = Number(new URL(wsUrl).port);
            const proxy = await spawnDelayProxy({
              listen: { hostname: link!.hostIp },
              target: { hostname: "127.0.0.1", port },
              oneWayMs: RTT / 2,
              nice: NICE,
            }, livePids);
            return {
              joinUrl: `ws://${link!.hostIp}:${proxy.port}`,
              prefix: netns,
              close: async () => void (b = await proxy.close()),
            };
          },
        );
        const after = await measureLink(1, "    link after the run");
        const row: Row = {
          ...r,
          rep,
          linkBytes: { toRanks: b.toClient, fromRanks: b.toTarget },
          linkAfter: { rttMedianMs: after.rttMedianMs, upMbit: after.upMbit, downMbit: after.downMbit },
        };
        rows.push(row);
        console.log(
          `  ${mode.padEnd(11)} ${wire.padEnd(4)} epochs 2..${EPOCHS} ${(r.epochWallMs / 1e3).toFixed(2)} s (all ${
            (r.trainWallMs / 1e3).toFixed(2)
          } s)  ` +
            `reduces ${r.reduces}  ${r.reduceMs.toFixed(1)} ms/reduce (median ${r.reduceMsMedian}, avg ${
              r.averageMs.toFixed(2)
            })  ` +
            `compute ${(r.computeMs / 1e3).toFixed(2)} s  (avg+wire)/compute ${(r.overheadShare * 100).toFixed(1)}%  ` +
            `at the last anchor ${fmtSteady(steadyShare(r, BATCH))}  ` +
            `anchors ${runs(r.anchors)}  NATS in ${r.natsInBytesPerReduce} B/reduce  link ${
              (b.toClient / 1e6).toFixed(1)
            } MB down ${(b.toTarget / 1e6).toFixed(1)} MB up  loss ${r.finalLoss}` +
            (r.lost.length ? `  LOST ${r.lost.join("; ")}` : ""),
        );
      }
    }
  }

  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const pick = (mode: string, wire: string) => rows.filter((r) => r.mode === mode && r.bf16 === (wire === "bf16"));
  const lines = [
    "| mode | wire | measured wall s | × cpu-sync | reduces | ms/reduce mean | median | averaging ms | compute s | (avg+wire)/compute | at the last anchor | NATS in bytes/reduce | link MB down / up (run) | link after: RTT ms, Mbit/s up/down | loss |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  const targets: string[] = [];
  for (const wire of WIRES) {
    // A run that lost a rank trained on fewer ranks: not a comparison (its row says so).
    const sync = pick("cpu-sync", wire).filter((r) => !r.lost.length);
    const syncWall = sync.length ? mean(sync.map((r) => r.epochWallMs)) : NaN;
    for (const mode of MODES) {
      for (const r of pick(mode, wire)) {
        lines.push(
          `| ${mode} | ${wire} | ${(r.epochWallMs / 1e3).toFixed(2)} | ${
            (r.epochWallMs / syncWall).toFixed(2)
          }× | ${r.reduces} | ${r.reduceMs.toFixed(1)} | ` +
            `${r.reduceMsMedian ?? "—"} | ${r.averageMs.toFixed(2)} | ${(r.computeMs / 1e3).toFixed(2)} | ${
              (r.overheadShare * 100).toFixed(1)
            }% | ${fmtSteady(steadyShare(r, BATCH))} | ` +
            `${r.natsInBytesPerReduce ?? "—"} | ${(r.linkBytes.toRanks / 1e6).toFixed(1)} / ${
              (r.linkBytes.fromRanks / 1e6).toFixed(1)
            } | ${r.linkAfter.rttMedianMs}, ${r.linkAfter.upMbit}/${r.linkAfter.downMbit} | ${r.finalLoss}${
              r.lost.length ? " (rank lost)" : ""
            } |`,
        );
      }
    }
    const cad = pick("cpu-cadence", wire).filter((r) => !r.lost.length);
    if (sync.length && cad.length) {
      const ratio = mean(cad.map((r) => r.epochWallMs)) / syncWall;
      const share = mean(cad.map((r) => r.overheadShare));
      const steady = cad.map((r) => fmtSteady(steadyShare(r, BATCH))).join(", ");
      targets.push(
        `${wire}: cadence wall ${ratio.toFixed(2)}× sync (target <= 0.5: ${ratio <= 0.5 ? "met" : "NOT met"}); ` +
          `cadence (avg+wire)/compute ${(share * 100).toFixed(1)}% (target <= 10%: ${
            share <= 0.1 ? "met" : "NOT met"
          }; at ElChe's last anchor: ${steady})`,
      );
    }
  }
  console.log("\n" + lines.join("\n") + "\n\n" + targets.join("\n"));
  const out = {
    runtime: `deno ${Deno.version.deno}`,
    adapter: adapterName,
    date: new Date().toISOString(),
    link: { rttMs: RTT, mbit: MBIT, probe },
    subset: SUBSET,
    batch: BATCH,
    epochs: EPOCHS,
    load: { before: loadBefore, after: Deno.loadavg() },
    totalS: round((performance.now() - t0) / 1e3, 1),
    runs: rows,
    targets,
  };
  console.log(`load after ${out.load.after.map((x) => x.toFixed(2)).join(" ")}, ${out.totalS} s`);
  const tag = flag("tag", "");
  const path = new URL(`./results/${out.date.slice(0, 10)}-slow-link${tag ? `-${tag}` : ""}.json`, import.meta.url);
  await Deno.mkdir(new URL("./results/", import.meta.url), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
  console.log(`wrote ${path.pathname}`);
} catch (e) {
  if (!(e instanceof ProbeOnly)) {
    console.error(`bench/slow_link.ts: ${(e as Error).stack ?? e}`);
    code = 1;
  }
} finally {
  await link?.close();
}
exitNow(code); // Deno 2.9 sometimes segfaults tearing down after many WebGPU devices (examples/exit.ts)
