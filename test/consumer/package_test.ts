/**
 * The packed package, installed as a user installs it, in projects outside the repository
 * (test/consumer/project.ts): what the tarball holds, a Deno project that trains its own
 * model with 2 worker ranks and passes `deno check` with Deno's default libraries, and
 * TypeScript's strict `tsc` over a Vite app's sources. The same app in Chromium, from the
 * dev server and from a production build, is test/browser/consumer.spec.ts.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { consumerProject, packedTarball, pinned, removeProject, repoRoot, run } from "./project.ts";
import { assert, assertEquals } from "../util/assert.ts";

const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));

/** The tarball unpacked into a temporary folder (its files under `package/`). */
function unpacked(): string {
  const dir = mkdtempSync(join(tmpdir(), "flodl-unpacked-"));
  execFileSync("tar", ["xzf", packedTarball(), "-C", dir]);
  return join(dir, "package");
}

function* files(dir: string, prefix = ""): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path, `${prefix}${name}/`);
    else yield `${prefix}${name}`;
  }
}

/** Every file an `exports` entry names (conditions flattened). */
function exportTargets(exports: unknown): string[] {
  if (typeof exports === "string") return [exports];
  return Object.values(exports as Record<string, unknown>).flatMap(exportTargets);
}

Deno.test("the tarball holds built modules, declarations and every file its exports name", () => {
  const root = unpacked();
  try {
    const all = [...files(root)];
    const stray = all.filter((f) => !f.startsWith("lib/") && !["package.json", "README.md"].includes(f));
    assertEquals(stray, [], "files outside lib/");
    const sources = all.filter((f) => /\.(ts|wgsl)$/.test(f) && !f.endsWith(".d.ts"));
    assertEquals(sources, [], "sources (shaders are inlined in the JavaScript)");
    const missing = exportTargets(pkg.exports).map((t) => t.replace(/^\.\//, "")).filter((t) => !all.includes(t));
    assertEquals(missing, [], "exports targets missing from the tarball");
    const bytes = statSync(packedTarball()).size;
    console.log(`tarball ${(bytes / 1024).toFixed(0)} KiB, ${all.length} files`);
  } finally {
    removeProject(join(root, ".."));
  }
});

Deno.test("the built modules import nothing by bare name: the dependencies are inside", () => {
  const root = unpacked();
  try {
    const bare = [...files(join(root, "lib"))].filter((f) => f.endsWith(".js")).flatMap((f) => {
      const text = readFileSync(join(root, "lib", f), "utf8");
      const specs = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*["']([^"']+)["']/gm)].map((m) => m[1]);
      return specs.filter((s) => !s.startsWith("./") && !s.startsWith("../")).map((s) => `${f}: ${s}`);
    });
    assertEquals(bare, []);
  } finally {
    removeProject(join(root, ".."));
  }
});

Deno.test("a Deno project installs the package and trains its own model on 2 worker ranks", () => {
  const dir = consumerProject("deno-project");
  try {
    const deno = Deno.execPath();
    run(deno, ["check", "main.ts"], dir); // Deno's default libraries: deno.json sets none
    // No permission beyond reading files: nothing written, fetched or spawned but workers.
    const out = run(deno, ["run", "--no-prompt", "--allow-read", "main.ts"], dir);
    const lines = out.trim().split("\n").map((l) => JSON.parse(l));
    const epochs = lines.filter((l) => "epoch" in l) as { epoch: number; loss: number; samplesPerRank: number[] }[];
    assertEquals(epochs.map((e) => e.epoch), [0, 1, 2, 3], "epochs");
    for (const e of epochs) assertEquals(e.samplesPerRank.reduce((a, b) => a + b), 1024, `epoch ${e.epoch} samples`);
    const perRank = [0, 1].map((r) => epochs.reduce((s, e) => s + e.samplesPerRank[r], 0));
    assert(perRank.every((n) => n > 0), `both ranks trained: ${perRank}`);
    assert(epochs[3].loss < epochs[0].loss / 2, `the loss falls: ${epochs.map((e) => e.loss.toFixed(3))}`);
    assertEquals(lines.at(-1).trained, ["0.weight", "0.bias", "2.weight", "2.bias"], "trained parameters");
  } finally {
    removeProject(dir);
  }
});

Deno.test("strict tsc over a consumer's sources finds the package's types, and their errors", () => {
  const dir = consumerProject("vite-app", [pinned("typescript")]);
  try {
    const tsc = join(dir, "node_modules", ".bin", "tsc");
    run(tsc, ["-p", "."], dir); // program.ts, main.ts and vite.config.ts, skipLibCheck off
    // Types that were `any` would let these through.
    writeFileSync(
      join(dir, "wrong.ts"),
      [
        `import { Linear, Trainer } from "flodl-webgpu";`,
        `import { RECIPES } from "flodl-webgpu/zoo";`,
        `export const a = new Linear("4", 2);`,
        `export const b: string = RECIPES.mlp.lr;`,
        `export const c = Trainer.builder(1, 2, 3);`,
        `export { ops } from "flodl-webgpu";`, // the engine's, not the user entry's
        `export { ops as engineOps } from "flodl-webgpu/engine";`,
        "",
      ].join("\n"),
    );
    const failed = (() => {
      try {
        run(tsc, ["-p", "."], dir);
        return "";
      } catch (e) {
        return (e as Error).message;
      }
    })();
    const errors = [...failed.matchAll(/^wrong\.ts\((\d+),\d+\): error (TS\d+)/gm)].map((m) => `${m[1]}:${m[2]}`);
    assertEquals(errors.map((e) => e.split(":")[0]), ["3", "4", "5", "6"], `one error per wrong line:\n${failed}`);
  } finally {
    removeProject(dir);
  }
});

Deno.test("the README's Deno program and Vite config are the ones these tests run", () => {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const fixture = (path: string) => readFileSync(join(repoRoot, "test", "consumer", path), "utf8");
  assert(
    readme.includes("```ts\n" + fixture("deno-project/main.ts") + "```"),
    "README lacks deno-project/main.ts verbatim",
  );
  assert(
    readme.includes("```ts\n// vite.config.ts\n" + fixture("vite-app/vite.config.ts") + "```"),
    "README lacks vite-app/vite.config.ts verbatim",
  );
});
