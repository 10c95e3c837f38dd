/**
 * The Vite plugin (`flodl-webgpu/vite`): the one line a Vite app that trains needs.
 *
 * @example
 * ```ts ignore
 * // vite.config.ts
 * import { flodl } from "flodl-webgpu/vite";
 * export default { plugins: [flodl()] };
 * ```
 *
 * What it sets, and why:
 * - Dev server: flodl-webgpu is left out of dependency pre-bundling. Pre-bundling moves the
 *   package's modules into `node_modules/.vite/deps/`, away from the rank worker they start
 *   by a URL relative to themselves.
 * - Dev server and `vite preview`: the two cross-origin isolation headers. Without them a
 *   page has no `SharedArrayBuffer`, which the nccl-* modes' collective needs; the other
 *   modes run either way (`flodl({ crossOriginIsolation: false })` leaves the headers out).
 *   A host serving the production build must send the same headers: the build writes them
 *   to `_headers` (the format of Netlify, Cloudflare Pages and others).
 * - Production build: every module that calls `Trainer.builder(` becomes a chunk of its own,
 *   so a rank worker re-enters it without the page's DOM code around it.
 * - Workers are built as ES modules (a rank imports its program with `import()`).
 *
 * Typed structurally, so this module needs no `vite` import: the objects fit Vite's `Plugin`.
 *
 * Also here, for a coordinator that serves walk-in ranks its own program: `buildWalkIn`
 * (src/walk_in_build.ts), which runs Vite's build (imported when it is called).
 * @module
 */
export { buildWalkIn, buildWalkInLoaders, type WalkInBuild, type WalkInBuildOptions } from "./walk_in_build.ts";

/** The headers that make a page cross-origin isolated (COOP + COEP). */
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

/** Options of {@link flodl}. */
export interface FlodlPluginOptions {
  /** Send {@link ISOLATION_HEADERS} from the dev server and `vite preview`, and write `_headers` (default true). */
  crossOriginIsolation?: boolean;
}

/** The part of a Vite plugin this package's plugins use. */
export interface VitePluginLike {
  /** Plugin name, shown in Vite's warnings and errors (`flodl-webgpu:...`). */
  name: string;
  /** Run only in `vite build` or only in the dev server; absent: both. */
  apply?: "build" | "serve";
  /** Config to merge into the user's (Vite's `config` hook). */
  config?(): Record<string, unknown>;
  /** Vite's `transform` hook: sees each module's `code` and `id`; here it only emits chunks. */
  transform?(this: { emitFile(file: EmittedChunk): string }, code: string, id: string): void;
  /** Rollup's `generateBundle` hook: adds files to the output (`environment` is Vite 6's). */
  generateBundle?(this: { emitFile(file: EmittedAsset): string; environment?: { name: string } }): void;
}

/** A chunk a plugin adds to the build. */
export interface EmittedChunk {
  /** Always "chunk" (Rollup's `EmittedChunk`). */
  type: "chunk";
  /** Module id to make an entry chunk of. */
  id: string;
  /** Keep every export of the module, as it has them. */
  preserveSignature: "strict";
}

/** A file a plugin adds to the build's output. */
export interface EmittedAsset {
  /** Always "asset" (Rollup's `EmittedAsset`). */
  type: "asset";
  /** Output path, relative to the build's output folder (`_headers`). */
  fileName: string;
  /** The file's text. */
  source: string;
}

/** The package's name as a consumer's `node_modules` holds it. */
const PACKAGE = "flodl-webgpu";

const BUILDER_CALL = /\bTrainer\.builder\s*\(/;

/** Everything a Vite app that trains needs (see the module's description). */
export function flodl(options: FlodlPluginOptions = {}): VitePluginLike[] {
  const isolate = options.crossOriginIsolation !== false;
  const headers = isolate ? { ...ISOLATION_HEADERS } : {};
  return [
    {
      name: "flodl-webgpu",
      config: () => ({
        optimizeDeps: { exclude: [PACKAGE] },
        worker: { format: "es" },
        server: { headers },
        preview: { headers },
      }),
    },
    trainerProgramChunks(),
    ...(isolate ? [isolationHeadersFile()] : []),
  ];
}

/** Production builds: `_headers`, for hosts that read their response headers from it. */
function isolationHeadersFile(): VitePluginLike {
  return {
    name: "flodl-webgpu:headers-file",
    apply: "build",
    generateBundle() {
      if (this.environment?.name && this.environment.name !== "client") return;
      const lines = Object.entries(ISOLATION_HEADERS).map(([k, v]) => `  ${k}: ${v}`);
      this.emitFile({ type: "asset", fileName: "_headers", source: ["/*", ...lines, ""].join("\n") });
    },
  };
}

/**
 * Production builds only: a chunk for every module that calls `Trainer.builder(`, so a rank
 * worker can import that module alone. Part of {@link flodl}; exported for configs that set
 * the rest themselves.
 */
export function trainerProgramChunks(): VitePluginLike {
  return {
    name: "flodl-webgpu:program-chunks",
    apply: "build",
    transform(code, id) {
      if (id.includes("node_modules") || id.includes("?") || id.includes("/src/distributed/")) return;
      if (BUILDER_CALL.test(code)) this.emitFile({ type: "chunk", id, preserveSignature: "strict" });
    },
  };
}
