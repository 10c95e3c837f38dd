/**
 * The optimizer-state file (`<stem>.optim`, and what `saveStateFile` writes): a safetensors
 * file holding the state tensors under their `stateDict` names (`"0.exp_avg"`, f32), with the
 * scalars (`"0.step"`, `"param_groups.0.lr"`) as one JSON object in the metadata. Host data
 * only; optim/ turns it into tensors and distributed/ writes it into bundles.
 */
import { decodeSafetensors, encodeSafetensors, type SafeTensor } from "./safetensors.ts";

/** An optimizer's state on the host (`Optimizer.stateDict()` read back from the GPU). */
export interface HostOptimState {
  /** State tensors by stateDict name (`"0.exp_avg"`), f32 values. */
  tensors: Record<string, Float32Array>;
  /** The shape of each tensor, same keys as `tensors`. */
  shapes: Record<string, number[]>;
  /** Scalars by name (`"0.step"`, `"param_groups.0.lr"`), finite numbers. */
  scalars: Record<string, number>;
}

/** `__metadata__.flodl_kind` of an optimizer-state file. */
export const OPTIM_KIND = "optim";
/** The metadata key holding the scalars as a JSON object. */
const SCALARS_KEY = "scalars";

/**
 * Serialize an optimizer state. Values are stored exactly (F32 tensors, scalars as JSON
 * numbers, which round-trip every double).
 * @param state Tensors, their shapes and the scalars.
 * @param source Name for messages (the file being written).
 * @returns The safetensors bytes.
 * @throws {TypeError} When a tensor is not a Float32Array, a shape is missing or keys of
 *   `tensors` and `shapes` differ.
 * @throws {RangeError} When a shape does not match its data length or a scalar is not finite.
 * @example
 * ```ts
 * import { decodeOptimState, encodeOptimState } from "./optim_state.ts";
 * const bytes = encodeOptimState({
 *   tensors: { "0.exp_avg": new Float32Array([1, 2]) },
 *   shapes: { "0.exp_avg": [2] },
 *   scalars: { "0.step": 3, "param_groups.0.lr": 0.001 },
 * });
 * const back = decodeOptimState(bytes, "adam.optim");
 * if (back.scalars["0.step"] !== 3 || back.tensors["0.exp_avg"][1] !== 2) throw new Error("round trip");
 * ```
 */
export function encodeOptimState(state: HostOptimState, source = "<optimizer state>"): Uint8Array {
  const where = `Cannot write optimizer state "${source}"`;
  const tensors: Record<string, SafeTensor> = {};
  for (const [k, data] of Object.entries(state.tensors)) {
    if (!(data instanceof Float32Array)) {
      throw new TypeError(`${where}: tensor "${k}" must be a Float32Array, got ${(data as object)?.constructor?.name}`);
    }
    const shape = state.shapes[k];
    if (!Array.isArray(shape)) throw new TypeError(`${where}: no shape for tensor "${k}"`);
    const n = shape.reduce((a, b) => a * b, 1);
    if (n !== data.length) {
      throw new RangeError(`${where}: tensor "${k}" has shape [${shape}] (${n} elements), data has ${data.length}`);
    }
    tensors[k] = { dtype: "F32", shape: [...shape], data };
  }
  for (const k of Object.keys(state.shapes)) {
    if (!(k in state.tensors)) throw new TypeError(`${where}: shape given for "${k}", which has no tensor`);
  }
  for (const [k, v] of Object.entries(state.scalars)) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new RangeError(`${where}: scalar "${k}" must be a finite number, got ${v}`);
    }
  }
  return encodeSafetensors(tensors, {
    format: "pt",
    flodl_kind: OPTIM_KIND,
    [SCALARS_KEY]: JSON.stringify(state.scalars),
  });
}

/**
 * Parse an optimizer-state file: the safetensors checks of {@link decodeSafetensors}, then
 * every tensor must be F32 and the metadata must hold the scalars as a JSON object of finite
 * numbers.
 * @param bytes The whole file.
 * @param source File name for messages.
 * @returns The state, plus the file's metadata.
 * @throws {RangeError|TypeError} Naming the file and what is wrong.
 */
export function decodeOptimState(
  bytes: Uint8Array,
  source = "<bytes>",
): HostOptimState & { metadata: Record<string, string> } {
  const { tensors, metadata } = decodeSafetensors(bytes, source);
  const where = `Optimizer state "${source}"`;
  // Null prototypes keep a key named "__proto__" an ordinary entry.
  const out: HostOptimState = {
    tensors: Object.create(null),
    shapes: Object.create(null),
    scalars: Object.create(null),
  };
  for (const [k, t] of Object.entries(tensors)) {
    if (t.dtype !== "F32") throw new TypeError(`${where}: tensor "${k}" is ${t.dtype}, expected F32`);
    out.tensors[k] = t.data as Float32Array;
    out.shapes[k] = t.shape;
  }
  const text = metadata[SCALARS_KEY];
  if (text === undefined) {
    throw new TypeError(`${where}: metadata has no "${SCALARS_KEY}" (not an optimizer-state file?)`);
  }
  let scalars: unknown;
  try {
    scalars = JSON.parse(text);
  } catch (e) {
    throw new TypeError(`${where}: metadata "${SCALARS_KEY}" is not valid JSON (${(e as Error).message})`);
  }
  if (scalars === null || typeof scalars !== "object" || Array.isArray(scalars)) {
    throw new TypeError(`${where}: metadata "${SCALARS_KEY}" must be a JSON object, got ${text.slice(0, 40)}`);
  }
  for (const [k, v] of Object.entries(scalars)) {
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new TypeError(`${where}: scalar "${k}" must be a finite number, got ${JSON.stringify(v)}`);
    }
    out.scalars[k] = v;
  }
  return { ...out, metadata };
}
