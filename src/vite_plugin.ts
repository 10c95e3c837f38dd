/**
 * Vite plugin for production builds of pages that train (DESIGN.md "Production builds"):
 * every module that calls `Trainer.builder(` becomes its own chunk, so a rank worker can
 * re-enter it without pulling in the page's DOM code.
 *
 * @example
 * ```ts ignore
 * // vite.config.ts
 * import { trainerProgramChunks } from "flodl-webgpu/vite";
 * export default { plugins: [trainerProgramChunks()] };
 * ```
 */
export interface VitePluginLike {
  name: string;
  apply: "build";
  transform(this: { emitFile(file: { type: "chunk"; id: string; preserveSignature: "strict" }): string }, code: string, id: string): void;
}

const BUILDER_CALL = /\bTrainer\.builder\s*\(/;

export function trainerProgramChunks(): VitePluginLike {
  return {
    name: "flodl-trainer-program-chunks",
    apply: "build",
    transform(code, id) {
      if (id.includes("node_modules") || id.includes("?") || id.includes("/src/distributed/")) return;
      if (BUILDER_CALL.test(code)) this.emitFile({ type: "chunk", id, preserveSignature: "strict" });
    },
  };
}
