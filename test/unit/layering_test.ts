/**
 * Imports in src/ point down only (STYLE.md practice 8) and cross folders only through
 * mod.ts. Fails naming the file and the offending edge.
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

const src = new URL("../../src/", import.meta.url);

function* walk(dir: URL, rel = ""): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    if (e.isDirectory) yield* walk(new URL(`${e.name}/`, dir), `${rel}${e.name}/`);
    else if (e.name.endsWith(".ts")) yield `${rel}${e.name}`;
  }
}

Deno.test("src/ imports point down the layers and cross folders only through mod.ts", () => {
  const problems: string[] = [];
  for (const file of walk(src)) {
    const layer = file.includes("/") ? file.split("/")[0] : undefined;
    const text = Deno.readTextFileSync(new URL(file, src));
    for (const m of text.matchAll(/(?:import|export)[^;]*?from\s+"(\.[^"]+)"/g)) {
      const target = new URL(m[1], new URL(file, src)).href.slice(src.href.length);
      if (target.startsWith("..")) continue;
      const to = target.includes("/") ? target.split("/")[0] : undefined;
      if (!layer || !to || to === layer) continue; // top-level files (index.ts) may import anything
      if (!(ALLOWED[layer] ?? []).includes(to)) problems.push(`${file} imports ${target} (${layer} -> ${to} points up)`);
      else if (!target.endsWith("/mod.ts")) problems.push(`${file} imports ${target}, not ${to}/mod.ts`);
    }
  }
  assert(problems.length === 0, problems.join("\n"));
});
