/**
 * Imports in src/ point down only and cross folders only through
 * mod.ts; inside distributed/, the rooms (docs/ARCHITECTURE.md) import one way only; and
 * no import cycle exists anywhere in src/, same-folder edges and type-only imports
 * included. Each test fails naming the file and the offending edge, or the cycle.
 */
import { assert } from "../util/assert.ts";

const ALLOWED: Record<string, string[]> = {
  gpu: [],
  io: [],
  monitor: ["io"],
  tensor: ["gpu"],
  data: ["tensor", "gpu", "io"],
  autograd: ["tensor", "gpu"],
  optim: ["autograd", "tensor", "gpu", "io"],
  nn: ["autograd", "tensor", "gpu", "io"],
  distributed: ["nn", "optim", "data", "monitor", "autograd", "tensor", "gpu", "io"],
};

/**
 * The rooms of distributed/, named after where their code runs. `protocol` is what both
 * sides of the coordinator–rank seam share; `rank` runs in a rank worker (or in process on
 * a single device); `coordinator` on the main thread; `run` is the public API that starts
 * one or the other; `nats` is the NATS link both sides of a remote rank use (a transport
 * beside the seam, it knows no trainer code). `distributed/mod.ts` sits on top and may
 * import any room.
 */
const ROOMS: Record<string, string[]> = {
  protocol: [],
  nats: ["protocol"],
  rank: ["protocol", "nats"],
  coordinator: ["protocol", "nats"],
  run: ["coordinator", "rank", "protocol", "nats"],
  serve: ["run", "nats", "protocol"],
};

/**
 * The rooms of distributed/coordinator/, named after what they do, and the rooms each may
 * import. `coordinator.ts` at the top composes them and may import any.
 * - `control`: the knobs (the run's configuration) and what turns them into decisions:
 *   ElChe, the cadence of a reduce, the convergence guards, the meta-controller, max failure.
 * - `transport`: reaching a rank: the rank client and the worker, local and NATS transports.
 * - `report`: what the coordinator is given (RunDefinition) and tells (observers, metrics).
 * - `schedule`: which samples go where: chunks, partitions, the work source, epoch roles.
 * - `persistence`: bundles and checkpoints.
 * - `reduce`: one averaging cycle (CPU or nccl), consensus and relay clients.
 */
const COORDINATOR_ROOMS: Record<string, string[]> = {
  control: [],
  transport: [],
  report: ["control"],
  schedule: ["control", "report", "transport"],
  persistence: ["control", "report", "schedule"],
  reduce: ["report", "transport"],
};

const src = new URL("../../src/", import.meta.url);

function* walk(dir: URL, rel = ""): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    if (e.isDirectory) yield* walk(new URL(`${e.name}/`, dir), `${rel}${e.name}/`);
    else if (e.name.endsWith(".ts")) yield `${rel}${e.name}`;
  }
}

/**
 * Every relative import and re-export of a file (type-only ones included), as paths under
 * src/. Only statements that start a line count: `import` lines inside doc examples
 * (` * import ...`) are not edges.
 */
function importsOf(file: string): string[] {
  const text = Deno.readTextFileSync(new URL(file, src));
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"/gm)) {
    out.push(new URL(m[1], new URL(file, src)).href.slice(src.href.length));
  }
  return out;
}

const folder = (path: string, depth: number) => path.split("/").length > depth + 1 ? path.split("/")[depth] : undefined;

Deno.test("src/ imports point down the layers and cross folders only through mod.ts", () => {
  const problems: string[] = [];
  for (const file of walk(src)) {
    const layer = folder(file, 0);
    for (const target of importsOf(file)) {
      if (target.startsWith("..")) continue;
      const to = folder(target, 0);
      if (!layer || !to || to === layer) continue; // top-level files (index.ts) may import anything
      if (!(ALLOWED[layer] ?? []).includes(to)) problems.push(`${file} imports ${target} (${layer} -> ${to} points up)`);
      else if (!target.endsWith("/mod.ts")) problems.push(`${file} imports ${target}, not ${to}/mod.ts`);
    }
  }
  assert(problems.length === 0, problems.join("\n"));
});

Deno.test("distributed/ rooms import one way: run -> coordinator | rank -> protocol", () => {
  const problems: string[] = [];
  for (const file of walk(new URL("distributed/", src), "distributed/")) {
    const room = folder(file, 1);
    if (room && !(room in ROOMS)) problems.push(`${file} is in distributed/${room}/, which is not a room of ROOMS`);
    for (const target of importsOf(file)) {
      const to = target.startsWith("distributed/") ? folder(target, 1) : undefined;
      if (!room || !to || to === room) continue; // distributed/mod.ts may import any room
      if (!(ROOMS[room] ?? []).includes(to)) problems.push(`${file} imports ${target} (distributed/${room} -> ${to} is not an allowed edge)`);
    }
  }
  assert(problems.length === 0, problems.join("\n"));
});

Deno.test("coordinator/ rooms import one way: coordinator.ts -> persistence | reduce | schedule -> report -> control", () => {
  const problems: string[] = [];
  const base = "distributed/coordinator/";
  for (const file of walk(new URL(base, src), base)) {
    const room = folder(file, 2);
    if (!room) continue; // coordinator.ts composes the rooms
    if (!(room in COORDINATOR_ROOMS)) {
      problems.push(`${file} is in ${base}${room}/, which is not a room of COORDINATOR_ROOMS`);
      continue;
    }
    for (const target of importsOf(file)) {
      if (!target.startsWith(base)) continue;
      const to = folder(target, 2);
      if (to === room) continue;
      if (!to) problems.push(`${file} imports ${target}: a room never imports coordinator.ts`);
      else if (!COORDINATOR_ROOMS[room].includes(to)) problems.push(`${file} imports ${target} (coordinator/${room} -> ${to} is not an allowed edge)`);
    }
  }
  assert(problems.length === 0, problems.join("\n"));
});

/** The import cycles of a graph: one path per strongly connected component (Tarjan), closed on its first file. */
export function importCycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], on = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    for (let w = ""; w !== v;) {
      w = stack.pop()!;
      on.delete(w);
      scc.push(w);
    }
    if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(pathThrough(graph, new Set(scc), v));
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

/** A shortest cycle from `start` back to it inside one strongly connected component (breadth first). */
function pathThrough(graph: Map<string, string[]>, scc: Set<string>, start: string): string[] {
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!scc.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let u = v; u !== start; u = prev.get(u)!) path.splice(1, 0, u);
        return [...path, start];
      }
      if (!prev.has(w)) {
        prev.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

Deno.test("importCycles finds a cycle and names its files in order", () => {
  const g = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a", "d"]], ["d", []], ["e", ["e"]]]);
  const got = importCycles(g).map((c) => c.join(" -> ")).sort();
  assert(got.length === 2 && got[0] === "a -> b -> c -> a" && got[1] === "e -> e", `got ${JSON.stringify(got)}`);
  assert(importCycles(new Map([["a", ["b"]], ["b", []]])).length === 0, "a DAG has no cycle");
});

Deno.test("src/ has no import cycle (same-folder and type-only imports included)", () => {
  const graph = new Map<string, string[]>();
  for (const file of walk(src)) graph.set(file, importsOf(file).filter((t) => !t.startsWith("..")));
  const cycles = importCycles(graph);
  assert(cycles.length === 0, `${cycles.length} import cycle(s):\n${cycles.map((c) => c.join(" -> ")).join("\n")}`);
});
