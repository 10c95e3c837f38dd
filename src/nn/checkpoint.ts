/**
 * Model checkpoint files by path: load a `.fdl` (flodl's positional keys) or any
 * safetensors file with named keys (ours, PyTorch's) into a module, and save one. The
 * storage is the runtime's (file system under Deno, OPFS in a browser) unless given.
 * Meant for the trainer's model factory, as flodl's docs do:
 * `Trainer.builder(async (device) => { const m = build(device); await loadCheckpointFile(m, "ckpt.fdl"); return m; }, ...)`.
 */
import { positionalMetadata, resolveStorage, type FileStore } from "../io/mod.ts";
import type { LoadResult, Module } from "./module.ts";
import { type KeyStyle, loadSafetensors, saveSafetensors } from "./state.ts";

/** Options of {@link loadCheckpointFile}. */
export interface LoadCheckpointOptions {
  /** Where the file lives (default: the runtime's storage, see `resolveStorage`). */
  storage?: FileStore;
  /**
   * Key style of the file. "auto" (default): positional when its metadata says
   * `keys: "positional"` or every key is `p{i}`/`b{j}` (and the model's names are not), else named.
   */
  keys?: KeyStyle | "auto";
  /** Refuse missing and unexpected keys (default true); shape and dtype mismatches are refused either way. */
  strict?: boolean;
}

/** What {@link loadCheckpointFile} reports. */
export interface LoadCheckpointResult extends LoadResult {
  /** The key style the file was read with. */
  keys: KeyStyle;
  /** The file's `__metadata__`. */
  metadata: Record<string, string>;
}

const POSITIONAL = /^[pb](0|[1-9][0-9]*)$/;

/**
 * Load a checkpoint file into a module's parameters and buffers, on the module's device.
 * The file is validated (hostile sizes, offsets, dtypes) and compared with the module
 * first; one error names every missing or unexpected key and every shape or dtype mismatch
 * (positional keys with the model's name beside them), and nothing changes unless all is well.
 * BF16/F16 files are widened exactly to f32.
 * @param path The file, relative to `storage` (under Deno without `storage`: any path).
 * @returns The keys a non-strict load skipped, the key style and the file's metadata.
 * @throws {NotFoundError} When the file does not exist.
 * @throws {RangeError|TypeError} For a corrupt file, naming it.
 * @throws {Error} `Cannot load "<path>" into <Model> (k problems):` and one line per mismatch.
 * @example
 * ```ts ignore
 * const model = new Net(device);
 * await loadCheckpointFile(model, "runs/mnist.fdl"); // a consensus bundle's model
 * ```
 */
export async function loadCheckpointFile(
  model: Module,
  path: string,
  options: LoadCheckpointOptions = {},
): Promise<LoadCheckpointResult> {
  const { storage, path: file } = resolveStorage(path, options.storage);
  const bytes = await storage.read(file);
  const keys = options.keys === undefined || options.keys === "auto" ? detectKeys(bytes, model) : options.keys;
  if (keys !== "named" && keys !== "positional") {
    throw new TypeError(
      `loadCheckpointFile: keys must be "auto", "named" or "positional", got ${JSON.stringify(keys)}`,
    );
  }
  try {
    const r = loadSafetensors(model, bytes, path, { strict: options.strict ?? true, keys });
    return { missing: r.missing, unexpected: r.unexpected, keys, metadata: r.metadata };
  } catch (e) {
    if (keys !== "positional" || !(e instanceof Error) || !e.message.startsWith("Cannot load")) throw e;
    // Name the model's layer beside each positional key, so "p3" reads as "p3" (fc2.weight).
    const names = new Map<string, string>();
    model.namedParameters().forEach(([n], i) => names.set(`p${i}`, n));
    model.namedBuffers().forEach(([n], j) => names.set(`b${j}`, n));
    const message = e.message.replace(/"([pb]\d+)"/g, (m, k) => (names.has(k) ? `${m} (${names.get(k)})` : m));
    throw new Error(message, { cause: e });
  }
}

/**
 * The key style of a file from its header alone (a lenient peek; the full decode that
 * follows reports any corruption).
 */
function detectKeys(bytes: Uint8Array, model: Module): KeyStyle {
  let header: Record<string, unknown>;
  try {
    if (bytes.length < 8) return "named";
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
    if (n > bytes.length - 8) return "named";
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    if (header === null || typeof header !== "object") return "named";
  } catch {
    return "named";
  }
  const meta = header.__metadata__ as Record<string, unknown> | undefined;
  if (meta?.keys === "positional") return "positional";
  const keys = Object.keys(header).filter((k) => k !== "__metadata__");
  const own = [...model.stateDict().keys()];
  const positional = keys.length > 0 && keys.every((k) => POSITIONAL.test(k));
  return positional && !own.every((k) => POSITIONAL.test(k)) ? "positional" : "named";
}

/** Options of {@link saveCheckpointFile}. */
export interface SaveCheckpointOptions {
  /** Where to write (default: the runtime's storage, see `resolveStorage`). */
  storage?: FileStore;
  /** "named" (default: dotted names, what PyTorch loads by name) or "positional" (flodl's `.fdl`). */
  keys?: KeyStyle;
  /** "F32" (default, exact) or "BF16" (half the bytes, rounded to nearest even). */
  dtype?: "F32" | "BF16";
  /** Extra `__metadata__` strings. */
  metadata?: Record<string, string>;
}

/**
 * Save a module's parameters then buffers as a safetensors file, atomically (temp + rename).
 * Reads every tensor back from the GPU (the only wait). Positional files record the model's
 * names in their metadata, as bundle `.fdl` files do.
 * @param path The file, relative to `storage` (under Deno without `storage`: any path).
 * @example
 * ```ts ignore
 * await saveCheckpointFile(model, "runs/mnist.fdl", { keys: "positional" });
 * ```
 */
export async function saveCheckpointFile(
  model: Module,
  path: string,
  options: SaveCheckpointOptions = {},
): Promise<void> {
  const { storage, path: file } = resolveStorage(path, options.storage);
  const keys = options.keys ?? "named";
  if (keys !== "named" && keys !== "positional") {
    throw new TypeError(`saveCheckpointFile: keys must be "named" or "positional", got ${JSON.stringify(keys)}`);
  }
  const metadata = keys === "positional"
    ? positionalMetadata("model", model.namedParameters().map(([n]) => n), model.namedBuffers().map(([n]) => n))
    : { format: "pt" };
  const bytes = await saveSafetensors(model, {
    keys,
    dtype: options.dtype,
    metadata: { ...metadata, ...options.metadata },
  });
  await storage.write(file, bytes);
}
