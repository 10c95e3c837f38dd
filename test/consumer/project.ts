/**
 * A consumer project outside the repository, as a user makes one: the package packed the
 * way `npm pack` ships it (its `prepack` builds lib/), then a fixture folder of this
 * directory (deno-project/, vite-app/, browser-module/, walk-in-project/) copied to a fresh temporary folder and the tarball
 * installed there with npm, next to the tools the project uses (vite, typescript). Node
 * APIs only: the Deno tests and the Playwright specs both use it.
 *
 * npm runs with `--prefer-offline`: the versions pinned here are the repository's own, so
 * `npm ci` has put them in npm's cache and no registry is needed.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const repoRoot = join(import.meta.dirname!, "..", "..");
const repoPackage = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));

/** The repository's pinned version of a dev tool, as `name@version`. */
export function pinned(name: string): string {
  const v = repoPackage.devDependencies?.[name];
  if (!v) throw new Error(`test/consumer: package.json pins no "${name}"`);
  return `${name}@${v}`;
}

/** Run a command, return its stdout; on failure throw with its output (the test's own line). */
export function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  try {
    return execFileSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", stdio: "pipe" });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; status?: number | null; signal?: string | null };
    const how = err.status === null && err.signal ? `was killed by ${err.signal}` : `exited ${err.status}`;
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) ${how}:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}

let tarball: string | undefined;

/** The package as `npm pack` makes it (built once per process): the .tgz path. */
export function packedTarball(): string {
  if (tarball) return tarball;
  const dir = mkdtempSync(join(tmpdir(), "flodl-pack-"));
  run("npm", ["pack", "--silent", "--pack-destination", dir], repoRoot);
  const [name] = readdirSync(dir).filter((f) => f.endsWith(".tgz"));
  if (!name) throw new Error(`npm pack left no tarball in ${dir}`);
  return (tarball = join(dir, name));
}

/** A copy of fixture `name` in a fresh temporary folder, with the tarball and `tools` installed. */
export function consumerProject(name: "deno-project" | "vite-app" | "browser-module" | "walk-in-project", tools: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), `flodl-${name}-`));
  cpSync(join(repoRoot, "test", "consumer", name), dir, { recursive: true });
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", packedTarball(), ...tools], dir);
  return dir;
}

/** Remove a project made by {@link consumerProject}. */
export function removeProject(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
