/**
 * The run's disk-stage folder (`diskStage`, `diskStageDir`): made by the
 * coordinator before any rank starts (an unusable `diskStageDir` fails `run()` naming it),
 * holding one stage file per rank, and removed when the run ends however it ends (a rank
 * that dies never deletes its own file). A fresh folder per run, inside `diskStageDir`
 * when given, so removing it never touches the user's files.
 *
 * Deno: a directory (default under the system temp dir). Browser: a folder of the origin's
 * private file system (OPFS), the ranks' workers open their files with sync access handles.
 */
import type { DdpRunConfig } from "../coordinator/control/config.ts";

/** A run's stage folder. */
export interface DiskStage {
  /** Where the ranks put `rank<k>.stage`; undefined when `diskStage` is 0. */
  readonly dir?: string;
  /** Delete the folder and everything in it (idempotent, never throws). */
  remove(): Promise<void>;
}

interface DenoFs {
  makeTempDir(o: { prefix: string; dir?: string }): Promise<string>;
  mkdir(path: string, o: { recursive: true }): Promise<void>;
  remove(path: string, o: { recursive: true }): Promise<void>;
}

const NONE: DiskStage = { remove: () => Promise.resolve() };

/**
 * Make the run's stage folder when `diskStageGb` > 0.
 * @throws {Error} When the folder cannot be made, naming `diskStageDir` and the path.
 */
export async function prepareDiskStage(cfg: Pick<DdpRunConfig, "diskStageGb" | "diskStageDir">): Promise<DiskStage> {
  if (!(cfg.diskStageGb > 0)) return NONE;
  const deno = (globalThis as { Deno?: DenoFs }).Deno;
  const base = cfg.diskStageDir;
  if (deno) {
    let dir: string;
    try {
      if (base !== undefined) await deno.mkdir(base, { recursive: true });
      dir = await deno.makeTempDir({ prefix: "flodl-stage-", ...(base !== undefined ? { dir: base } : {}) });
    } catch (e) {
      throw new Error(
        `Trainer.run: diskStageDir ${JSON.stringify(base ?? "(the system temp dir)")} is not usable: ${(e as Error).message}`,
        { cause: e },
      );
    }
    let removed = false;
    return {
      dir,
      async remove() {
        if (removed) return;
        removed = true;
        await deno.remove(dir, { recursive: true }).catch(() => {});
      },
    };
  }
  return await opfsStage(base);
}

async function opfsStage(base: string | undefined): Promise<DiskStage> {
  const storage = (globalThis.navigator as { storage?: { getDirectory?: () => Promise<FileSystemDirectoryHandle> } } | undefined)
    ?.storage;
  if (!storage?.getDirectory) {
    throw new Error(`Trainer.run: diskStage needs the origin private file system (navigator.storage.getDirectory), which this page lacks`);
  }
  const parts = (base ?? "").split("/").filter((p) => p !== "" && p !== ".");
  const name = `flodl-stage-${crypto.randomUUID().slice(0, 8)}`;
  let parent = await storage.getDirectory();
  try {
    for (const p of parts) parent = await parent.getDirectoryHandle(p, { create: true });
    await parent.getDirectoryHandle(name, { create: true });
  } catch (e) {
    throw new Error(`Trainer.run: diskStageDir ${JSON.stringify(base ?? "")} is not usable in OPFS: ${(e as Error).message}`, { cause: e });
  }
  const folder = parent;
  let removed = false;
  return {
    dir: [...parts, name].join("/"),
    async remove() {
      if (removed) return;
      removed = true;
      await folder.removeEntry(name, { recursive: true }).catch(() => {});
    },
  };
}
