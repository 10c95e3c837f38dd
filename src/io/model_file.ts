/**
 * flodl's positional model file (`<stem>.fdl`, and `<stem>.outer.fdl`), on the host: a
 * safetensors file of f32 tensors keyed `p{i}` (the i-th parameter in `namedParameters`
 * order) then `b{j}` (the j-th buffer), because model names repeat across layers.
 * The metadata records the format and the real names, so a reader can name
 * what it loads. nn/ writes the same layout from a Module; distributed/ from a frame.
 */
import { decodeSafetensors, encodeSafetensors, type SafeTensor } from "./safetensors.ts";

/** One tensor on the host. */
export interface HostTensor {
  /** The dotted name in the model (`"fc1.weight"`). */
  name: string;
  /** Dims, outermost first (`[]` for a scalar). */
  shape: number[];
  /** The values, row-major, as many as the shape holds. */
  data: Float32Array;
}

/** A model's parameters then buffers on the host, in `namedParameters` / `namedBuffers` order. */
export interface HostModel {
  /** The trainable parameters. */
  params: HostTensor[];
  /** The buffers (BatchNorm's running statistics). */
  buffers: HostTensor[];
}

/** What a positional file holds: the consensus model, or outer-optimizer momentum (one tensor per parameter). */
export type ModelFileKind = "model" | "outer";

const POSITIONAL_KEY = /^([pb])(0|[1-9][0-9]*)$/;

/**
 * The `__metadata__` of a positional file: `format` "pt" (what PyTorch tooling looks for),
 * `flodl_kind`, `keys` "positional" and the names as JSON arrays `param_names`, `buffer_names`.
 * @example
 * ```ts
 * import { positionalMetadata } from "./model_file.ts";
 * const m = positionalMetadata("model", ["fc.weight"], []);
 * if (m.keys !== "positional" || JSON.parse(m.param_names)[0] !== "fc.weight") throw new Error("metadata");
 * ```
 */
export function positionalMetadata(
  kind: ModelFileKind,
  paramNames: readonly string[],
  bufferNames: readonly string[],
): Record<string, string> {
  return {
    format: "pt",
    flodl_kind: kind,
    keys: "positional",
    param_names: JSON.stringify(paramNames),
    buffer_names: JSON.stringify(bufferNames),
  };
}

/**
 * Serialize a model (or outer momentum: `kind` "outer", no buffers) as a positional file.
 * @returns The safetensors bytes.
 * @throws {TypeError} When a tensor is not a Float32Array or has a bad shape.
 * @throws {RangeError} When a shape does not match its data length.
 * @example
 * ```ts
 * import { decodeModelFile, encodeModelFile } from "./model_file.ts";
 * const bytes = encodeModelFile({
 *   params: [{ name: "w", shape: [2], data: new Float32Array([1, 2]) }],
 *   buffers: [{ name: "n", shape: [], data: new Float32Array([3]) }],
 * });
 * const back = decodeModelFile(bytes, "m.fdl");
 * if (back.params[0].name !== "w" || back.buffers[0].data[0] !== 3) throw new Error("round trip");
 * ```
 */
export function encodeModelFile(model: HostModel, kind: ModelFileKind = "model", source = "<model>"): Uint8Array {
  const tensors: Record<string, SafeTensor> = {};
  const add = (key: string, t: HostTensor) => {
    if (!(t?.data instanceof Float32Array)) {
      throw new TypeError(
        `Cannot write "${source}": "${t?.name}" (${key}) must hold a Float32Array, got ${
          (t?.data as object)?.constructor?.name
        }`,
      );
    }
    if (typeof t.name !== "string") throw new TypeError(`Cannot write "${source}": ${key} has no name`);
    tensors[key] = { dtype: "F32", shape: t.shape, data: t.data };
  };
  model.params.forEach((t, i) => add(`p${i}`, t));
  model.buffers.forEach((t, j) => add(`b${j}`, t));
  try {
    return encodeSafetensors(
      tensors,
      positionalMetadata(kind, model.params.map((t) => t.name), model.buffers.map((t) => t.name)),
    );
  } catch (e) {
    const E = e instanceof RangeError ? RangeError : TypeError;
    throw new E(`Cannot write "${source}": ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Parse a positional file: the safetensors checks, then every key must be `p{i}` or `b{j}`
 * with no index missing, every tensor F32, and the recorded names (when present) one per
 * tensor. Files without names (another writer) get their keys as names.
 * @param bytes The whole file.
 * @param source File name for messages.
 * @returns Parameters and buffers in index order, and the metadata.
 * @throws {RangeError|TypeError} Naming the file and what is wrong.
 */
export function decodeModelFile(
  bytes: Uint8Array,
  source = "<bytes>",
): HostModel & { metadata: Record<string, string> } {
  const { tensors, metadata } = decodeSafetensors(bytes, source);
  const where = `"${source}"`;
  const byKind: Record<"p" | "b", Map<number, [string, SafeTensor]>> = { p: new Map(), b: new Map() };
  for (const [key, t] of Object.entries(tensors)) {
    const m = POSITIONAL_KEY.exec(key);
    if (!m) {
      throw new TypeError(
        `${where}: key "${key}" is not positional (p{i} for parameters, b{j} for buffers); ` +
          "load files with named keys into a module (loadCheckpointFile)",
      );
    }
    if (t.dtype !== "F32") throw new TypeError(`${where}: "${key}" is ${t.dtype}, a positional file holds F32 only`);
    byKind[m[1] as "p" | "b"].set(Number(m[2]), [key, t]);
  }
  const list = (kind: "p" | "b", namesKey: string): HostTensor[] => {
    const found = byKind[kind];
    const names = readNames(metadata[namesKey], namesKey, found.size, where);
    const out: HostTensor[] = [];
    for (let i = 0; i < found.size; i++) {
      const entry = found.get(i);
      if (!entry) throw new RangeError(`${where}: has ${found.size} "${kind}" tensors but no "${kind}${i}"`);
      const [key, t] = entry;
      out.push({ name: names?.[i] ?? key, shape: t.shape, data: t.data as Float32Array });
    }
    return out;
  };
  return { params: list("p", "param_names"), buffers: list("b", "buffer_names"), metadata };
}

function readNames(text: string | undefined, key: string, count: number, where: string): string[] | undefined {
  if (text === undefined) return undefined;
  let names: unknown;
  try {
    names = JSON.parse(text);
  } catch (e) {
    throw new TypeError(`${where}: metadata "${key}" is not valid JSON (${(e as Error).message})`);
  }
  if (!Array.isArray(names) || names.some((n) => typeof n !== "string")) {
    throw new TypeError(`${where}: metadata "${key}" must be a JSON array of strings`);
  }
  if (names.length !== count) {
    throw new RangeError(`${where}: metadata "${key}" lists ${names.length} names for ${count} tensors`);
  }
  return names;
}
