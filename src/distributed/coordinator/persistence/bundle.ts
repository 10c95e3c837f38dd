/**
 * The checkpoint bundle under a stem: `<stem>.fdl` (consensus model, f32,
 * positional keys), `<stem>.optim` (optimizer state), `<stem>.outer.fdl` (outer-optimizer
 * momentum, when stateful) and `<stem>.meta.json` (trajectory, written last). Host data
 * only: the coordinator hands in what it holds (frames, ElChe state, coverage); no GPU.
 * Also the bundle as one tar archive, for a browser's download and upload.
 */
import {
  checkPath,
  decodeModelFile,
  decodeOptimState,
  encodeModelFile,
  encodeOptimState,
  type HostModel,
  type HostOptimState,
  type HostTensor,
  NotFoundError,
  type PackOptions,
  packTar,
  type FileStore,
  unpackTar,
} from "../../../io/mod.ts";
import {
  type BundleMeta,
  type BundleMetaInput,
  MAX_META_BYTES,
  parseBundleMeta,
  serializeBundleMeta,
} from "./bundle_meta.ts";

/** The files of a bundle, by role. */
export interface BundlePaths {
  /** `<stem>.fdl`: the consensus model (f32, positional keys). */
  model: string;
  /** `<stem>.optim`: the optimizer state. */
  optim: string;
  /** `<stem>.outer.fdl`: the outer optimizer's momentum (stateful outer optimizers only). */
  outer: string;
  /** `<stem>.meta.json`: the trajectory, written last (its presence marks a complete bundle). */
  meta: string;
  /** Graph architecture sidecar (flodl graphs); carried by archives, never written here. */
  config: string;
}

const SUFFIX: Readonly<BundlePaths> = {
  model: ".fdl",
  optim: ".optim",
  outer: ".outer.fdl",
  meta: ".meta.json",
  config: ".config.json",
};

/** Side name a file is staged under before the bundle is committed. */
const STAGED = ".partial";

/**
 * The file names of the bundle under `stem`.
 * @throws {RangeError} When the stem is empty, absolute or has `.`/`..` parts.
 * @example
 * ```ts
 * import { bundlePaths } from "./bundle.ts";
 * if (bundlePaths("runs/mnist").meta !== "runs/mnist.meta.json") throw new Error("paths");
 * ```
 */
export function bundlePaths(stem: string): BundlePaths {
  checkPath(stem, "bundle stem");
  const out = {} as BundlePaths;
  for (const k of Object.keys(SUFFIX) as (keyof BundlePaths)[]) out[k] = `${stem}${SUFFIX[k]}`;
  return out;
}

/** What {@link writeBundle} writes. */
export interface BundleParts {
  /** Consensus parameters then buffers (f32), in `namedParameters` / `namedBuffers` order. */
  model: HostModel;
  /** Trajectory; `schema_version` is added (5). */
  meta: BundleMetaInput;
  /**
   * Optimizer state. Undefined: an existing `<stem>.optim` is left as it is (a periodic
   * consensus checkpoint does not carry it). Null: an existing one is removed.
   */
  optim?: HostOptimState | null;
  /**
   * Outer-optimizer momentum, flat over the parameters in order (`OuterOptimizer.state()`).
   * Undefined leaves an existing `<stem>.outer.fdl`; null (a stateless outer optimizer)
   * removes it.
   */
  outer?: Float32Array | null;
}

/** Outer momentum as read back: one tensor per parameter, and the flat vector `OuterOptimizer.loadState` takes. */
export interface BundleOuter {
  /** One momentum tensor per parameter, in parameter order, named and shaped as the parameter. */
  tensors: HostTensor[];
  /** The same values concatenated in that order. */
  flat: Float32Array;
}

/**
 * Write a bundle. Everything is encoded and validated first (a bad part throws before any
 * file changes). Then each file is written atomically under a side name, the old
 * `<stem>.meta.json` is removed, the files are moved into place, and the new meta.json is
 * moved in LAST: a present meta.json always belongs to a complete bundle. A failure while
 * staging leaves the previous bundle whole; a crash during the final moves leaves no
 * meta.json (resume then refuses) rather than a mixed bundle.
 * @param storage Where to write (FsStorage, OpfsStorage, MemoryStorage).
 * @param stem The bundle's stem (`savePath`): a relative path without extension.
 * @throws {TypeError|RangeError} For invalid parts, naming the file and the field.
 * @example
 * ```ts
 * import { MemoryStorage } from "../../../io/mod.ts";
 * import { readBundleMeta, writeBundle } from "./bundle.ts";
 * const storage = new MemoryStorage();
 * await writeBundle(storage, "runs/demo", {
 *   model: { params: [{ name: "w", shape: [2], data: new Float32Array([1, 2]) }], buffers: [] },
 *   meta: { epoch: 1, global_step: 40, sync_round: 4, world_size_at_save: 1, save_reason: "checkpoint" },
 * });
 * if ((await readBundleMeta(storage, "runs/demo")).global_step !== 40) throw new Error("round trip");
 * ```
 */
export async function writeBundle(storage: FileStore, stem: string, parts: BundleParts): Promise<void> {
  const paths = bundlePaths(stem);
  const model = encodeModelFile(parts.model, "model", paths.model);
  const optim = parts.optim ? encodeOptimState(parts.optim, paths.optim) : parts.optim;
  const outer = parts.outer
    ? encodeModelFile(outerModel(parts.outer, parts.model, paths.outer), "outer", paths.outer)
    : parts.outer;
  const meta = serializeBundleMeta(parts.meta, paths.meta);
  await commit(storage, paths.meta, meta, [[paths.model, model], [paths.optim, optim], [paths.outer, outer]]);
}

/** Split flat momentum into one tensor per parameter. */
function outerModel(flat: Float32Array, model: HostModel, source: string): HostModel {
  if (!(flat instanceof Float32Array)) {
    throw new TypeError(
      `Cannot write "${source}": outer state must be a Float32Array, got ${(flat as object)?.constructor?.name}`,
    );
  }
  const total = model.params.reduce((s, p) => s + p.data.length, 0);
  if (flat.length !== total) {
    throw new RangeError(
      `Cannot write "${source}": outer momentum has ${flat.length} values, the model's parameters have ${total}`,
    );
  }
  let at = 0;
  const params = model.params.map((p) => {
    const data = flat.subarray(at, at + p.data.length);
    at += p.data.length;
    return { name: p.name, shape: p.shape, data };
  });
  return { params, buffers: [] };
}

/**
 * Stage, then move into place with the meta last. `files` entries: bytes to write, null to
 * remove the file, undefined to leave it.
 */
async function commit(
  storage: FileStore,
  metaPath: string,
  meta: Uint8Array | string,
  files: [string, Uint8Array | null | undefined][],
): Promise<void> {
  const staged: string[] = [];
  try {
    for (const [path, bytes] of [...files, [metaPath, meta] as const]) {
      if (!bytes) continue;
      staged.push(path + STAGED); // before the write: a failed write may still leave its file
      await storage.write(path + STAGED, bytes);
    }
  } catch (e) {
    for (const s of staged) await storage.remove(s).catch(() => {});
    throw e;
  }
  await storage.remove(metaPath);
  for (const [path, bytes] of files) {
    if (bytes) await storage.rename(path + STAGED, path);
    else if (bytes === null) await storage.remove(path);
  }
  await storage.rename(metaPath + STAGED, metaPath);
}

/**
 * Read and validate `<stem>.meta.json`. Its size is checked before it is read.
 * @throws {NotFoundError} When the bundle has no meta.json (never saved, or the save did not finish).
 * @throws {RangeError} Over {@link MAX_META_BYTES}, or a newer schema version than 5.
 * @throws {TypeError} For text that is not JSON (truncated) and wrong or missing fields, all listed.
 */
export async function readBundleMeta(storage: FileStore, stem: string): Promise<BundleMeta> {
  const path = bundlePaths(stem).meta;
  const size = await storage.size(path);
  if (size === undefined) {
    const e = new NotFoundError(path, storage.where);
    e.message += `: no bundle was saved under "${stem}", or its save did not finish`;
    throw e;
  }
  if (size > MAX_META_BYTES) {
    throw new RangeError(`"${path}" is ${size} bytes, over the ${MAX_META_BYTES}-byte limit of a bundle meta file`);
  }
  return parseBundleMeta(await storage.read(path), path);
}

/**
 * Read `<stem>.fdl`: parameters and buffers with their recorded names.
 * @throws {NotFoundError} When missing.
 * @throws {RangeError|TypeError} For a corrupt file or one that is not a positional model file.
 */
export async function readBundleModel(storage: FileStore, stem: string): Promise<HostModel> {
  const path = bundlePaths(stem).model;
  return decodeModel(await storage.read(path), path);
}

function decodeModel(bytes: Uint8Array, source: string): HostModel {
  const { params, buffers, metadata } = decodeModelFile(bytes, source);
  checkKind(metadata, "model", source);
  return { params, buffers };
}

function checkKind(metadata: Record<string, string>, want: string, source: string): void {
  const kind = metadata.flodl_kind;
  if (kind !== undefined && kind !== want) {
    throw new TypeError(`"${source}" holds ${JSON.stringify(kind)} tensors, expected ${JSON.stringify(want)}`);
  }
}

/**
 * Read `<stem>.optim`, or null when the bundle has none.
 * @throws {RangeError|TypeError} For a corrupt file.
 */
export async function readBundleOptim(storage: FileStore, stem: string): Promise<HostOptimState | null> {
  const path = bundlePaths(stem).optim;
  if ((await storage.size(path)) === undefined) return null;
  const { tensors, shapes, scalars } = decodeOptimState(await storage.read(path), path);
  return { tensors, shapes, scalars };
}

/**
 * Read `<stem>.outer.fdl`, or null when the bundle has none (stateless outer optimizer).
 * @throws {RangeError|TypeError} For a corrupt file.
 */
export async function readBundleOuter(storage: FileStore, stem: string): Promise<BundleOuter | null> {
  const path = bundlePaths(stem).outer;
  if ((await storage.size(path)) === undefined) return null;
  return decodeOuter(await storage.read(path), path);
}

function decodeOuter(bytes: Uint8Array, source: string): BundleOuter {
  const { params, buffers, metadata } = decodeModelFile(bytes, source);
  checkKind(metadata, "outer", source);
  if (buffers.length > 0) throw new TypeError(`"${source}": outer momentum has no buffers, found ${buffers.length}`);
  const flat = new Float32Array(params.reduce((s, p) => s + p.data.length, 0));
  let at = 0;
  for (const p of params) {
    flat.set(p.data, at);
    at += p.data.length;
  }
  return { tensors: params, flat };
}

/** Everything a bundle holds. */
export interface Bundle {
  /** `<stem>.meta.json`, validated ({@link readBundleMeta}). */
  meta: BundleMeta;
  /** `<stem>.fdl`: the consensus parameters and buffers ({@link readBundleModel}). */
  model: HostModel;
  /** `<stem>.optim`, or null when the bundle has none ({@link readBundleOptim}). */
  optim: HostOptimState | null;
  /** `<stem>.outer.fdl`, or null when the bundle has none ({@link readBundleOuter}). */
  outer: BundleOuter | null;
}

/**
 * Read a whole bundle, meta first (so a missing or incomplete bundle fails before the
 * large files are read).
 * @throws As {@link readBundleMeta}, {@link readBundleModel}, {@link readBundleOptim}, {@link readBundleOuter}.
 */
export async function readBundle(storage: FileStore, stem: string): Promise<Bundle> {
  const meta = await readBundleMeta(storage, stem);
  return {
    meta,
    model: await readBundleModel(storage, stem),
    optim: await readBundleOptim(storage, stem),
    outer: await readBundleOuter(storage, stem),
  };
}

/**
 * The bundle's files as one tar archive (to download). Entry names are the stem's last
 * part plus each suffix (`mnist.fdl`, …), so the archive can be restored under any stem.
 * @throws {NotFoundError} When the bundle has no meta.json or no model.
 * @example
 * ```ts ignore
 * downloadBytes("mnist.tar", await bundleToArchive(new OpfsStorage(), "runs/mnist"));
 * ```
 */
export async function bundleToArchive(storage: FileStore, stem: string, options: PackOptions = {}): Promise<Uint8Array> {
  await readBundleMeta(storage, stem); // refuse an incomplete bundle
  const paths = bundlePaths(stem);
  const base = stem.split("/").pop()!;
  const entries = [];
  for (const role of ["model", "optim", "outer", "config", "meta"] as const) {
    const path = paths[role];
    if (role !== "model" && (await storage.size(path)) === undefined) continue;
    entries.push({ name: `${base}${SUFFIX[role]}`, bytes: await storage.read(path) });
  }
  return packTar(entries, options);
}

/**
 * Restore a bundle from an archive (an upload) under `stem`. The archive must hold exactly
 * one `*.meta.json` and the model beside it; every file is validated (meta, model, optimizer
 * state, outer momentum, whose shapes must match the model's parameters) before anything is
 * written, then committed as {@link writeBundle} does. Files the archive lacks (`.optim`,
 * `.outer.fdl`, `.config.json`) are removed from the target, so no stale piece survives.
 * Other entries (e.g. macOS `._` files) are ignored.
 * @param source The archive's name, for messages.
 * @returns The restored bundle's meta.
 * @throws {RangeError|TypeError} For a corrupt archive or file, naming the archive and the entry.
 * @example
 * ```ts ignore
 * const { name, bytes } = await pickFile({ accept: ".tar" });
 * await archiveToBundle(bytes, new OpfsStorage(), "runs/mnist", name);
 * ```
 */
export async function archiveToBundle(
  bytes: Uint8Array,
  storage: FileStore,
  stem: string,
  source = "<archive>",
): Promise<BundleMeta> {
  const paths = bundlePaths(stem);
  const entries = unpackTar(bytes, source);
  const metas = entries.filter((e) => e.name.endsWith(SUFFIX.meta) && !e.name.split("/").pop()!.startsWith("._"));
  if (metas.length !== 1) {
    throw new TypeError(
      `Archive "${source}" must hold exactly one *${SUFFIX.meta}, found ${metas.length}${
        metas.length ? `: ${metas.map((e) => e.name).join(", ")}` : ""
      }`,
    );
  }
  const inner = metas[0].name.slice(0, -SUFFIX.meta.length);
  const get = (role: keyof BundlePaths) => entries.find((e) => e.name === inner + SUFFIX[role])?.bytes;
  const at = (role: keyof BundlePaths) => `${source}: ${inner}${SUFFIX[role]}`;
  const meta = parseBundleMeta(metas[0].bytes, at("meta"));
  const modelBytes = get("model");
  if (!modelBytes) throw new TypeError(`Archive "${source}" has no "${inner}${SUFFIX.model}" beside its meta.json`);
  const model = decodeModel(modelBytes, at("model"));
  const optim = get("optim"), outer = get("outer"), config = get("config");
  if (optim) decodeOptimState(optim, at("optim"));
  if (outer) {
    const o = decodeOuter(outer, at("outer"));
    const want = model.params.map((p) => `[${p.shape}]`).join(" "),
      got = o.tensors.map((p) => `[${p.shape}]`).join(" ");
    if (want !== got) {
      throw new RangeError(`"${at("outer")}": momentum shapes ${got} do not match the model's parameters ${want}`);
    }
  }
  await commit(storage, paths.meta, metas[0].bytes, [
    [paths.model, modelBytes],
    [paths.optim, optim ?? null],
    [paths.outer, outer ?? null],
    [paths.config, config ?? null],
  ]);
  return meta;
}
