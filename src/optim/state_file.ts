/**
 * Optimizer state files by path (flodl's `load_state_file` / `save_state_file`): the
 * optimizer's `stateDict()` as safetensors, tensors under their state names, scalars in the
 * metadata (format: io's `encodeOptimState`). Meant for the trainer's optimizer factory:
 * `(params) => { const opt = new Adam(params, { lr }); await loadStateFile(opt, "ckpt.optim", { ifExists: true }); return opt; }`.
 */
import {
  decodeOptimState,
  encodeOptimState,
  type HostOptimState,
  NotFoundError,
  resolveStorage,
  type FileStore,
} from "../io/mod.ts";
import { fromArray, type Tensor } from "../tensor/mod.ts";
import type { Optimizer } from "./optimizer.ts";

/** Options of {@link saveStateFile}. */
export interface SaveStateFileOptions {
  /** Where to write (default: the runtime's storage, see `resolveStorage`). */
  storage?: FileStore;
}

/** Options of {@link loadStateFile}. */
export interface LoadStateFileOptions {
  /** Where the file lives (default: the runtime's storage). */
  storage?: FileStore;
  /** Resolve to false instead of throwing when the file does not exist (a fresh run). */
  ifExists?: boolean;
}

/**
 * The optimizer's state read back from the GPU (the only wait), as host data: what
 * `<stem>.optim` and {@link saveStateFile} hold.
 * @example
 * ```ts ignore
 * const host = await hostOptimizerState(adam); // { tensors, shapes, scalars }
 * ```
 */
export async function hostOptimizerState(optimizer: Optimizer<any>): Promise<HostOptimState> {
  const sd = optimizer.stateDict();
  const out: HostOptimState = { tensors: {}, shapes: {}, scalars: { ...sd.scalars } };
  for (const [k, t] of Object.entries(sd.tensors)) {
    out.tensors[k] = (await t.toArray()) as Float32Array;
    out.shapes[k] = [...t.shape];
  }
  return out;
}

/**
 * Load host state into an optimizer: the tensors are uploaded to its parameters' device and
 * handed to `loadStateDict`, which validates everything (every key, shape, step and lr)
 * before changing anything.
 * @param source Name for messages (the file).
 * @throws {Error|RangeError|TypeError} `Cannot load "<source>" into <Optimizer>: ` and what `loadStateDict` refused.
 */
export function loadHostOptimizerState(
  optimizer: Optimizer<any>,
  state: HostOptimState,
  source = "optimizer state",
): void {
  const device = optimizer.paramGroups[0].params[0].data.device;
  const made: Tensor[] = [];
  try {
    const tensors: Record<string, Tensor> = {};
    for (const [k, data] of Object.entries(state.tensors)) {
      const t = fromArray(data, state.shapes[k], { device });
      made.push(t);
      tensors[k] = t;
    }
    optimizer.loadStateDict({ tensors, scalars: state.scalars });
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    const E = e instanceof RangeError ? RangeError : e instanceof TypeError ? TypeError : Error;
    throw new E(`Cannot load "${source}" into ${optimizer.name}: ${e.message}`, { cause: e });
  } finally {
    // loadStateDict recorded GPU copies; a freed buffer is reused only after the next submit.
    for (const t of made) t.dispose();
  }
}

/**
 * Save an optimizer's state to a file, atomically (temp + rename).
 * @param path The file, relative to `storage` (under Deno without `storage`: any path).
 * @example
 * ```ts ignore
 * await saveStateFile(adam, "runs/mnist.optim");
 * ```
 */
export async function saveStateFile(
  optimizer: Optimizer<any>,
  path: string,
  options: SaveStateFileOptions = {},
): Promise<void> {
  const { storage, path: file } = resolveStorage(path, options.storage);
  const bytes = encodeOptimState(await hostOptimizerState(optimizer), path);
  await storage.write(file, bytes);
}

/**
 * Load an optimizer's state from a file written by {@link saveStateFile} (or a bundle's
 * `<stem>.optim`). The file is validated (hostile sizes, offsets, dtypes, scalars) and then
 * checked against the optimizer as `loadStateDict` does; nothing changes on failure.
 * @param path The file, relative to `storage` (under Deno without `storage`: any path).
 * @returns True when loaded; false when the file is missing and `ifExists` is set.
 * @throws {NotFoundError} When the file is missing (without `ifExists`).
 * @throws {RangeError|TypeError|Error} For a corrupt file or a mismatch, naming the file.
 * @example
 * ```ts ignore
 * const opt = new Adam(params, { lr: 1e-3 });
 * await loadStateFile(opt, "runs/mnist.optim", { ifExists: true });
 * ```
 */
export async function loadStateFile(
  optimizer: Optimizer<any>,
  path: string,
  options: LoadStateFileOptions = {},
): Promise<boolean> {
  const { storage, path: file } = resolveStorage(path, options.storage);
  let bytes: Uint8Array;
  try {
    bytes = await storage.read(file);
  } catch (e) {
    if (options.ifExists && e instanceof NotFoundError) return false;
    throw e;
  }
  const { tensors, shapes, scalars } = decodeOptimState(bytes, path);
  loadHostOptimizerState(optimizer, { tensors, shapes, scalars }, path);
  return true;
}
