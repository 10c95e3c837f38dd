import { type Tensor } from "../tensor/mod.ts";
import type { Module } from "./module.ts";
import { checkStateDict, type LoadResult, type StateEntry, tensorEntry } from "./state_check.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  int64ToNumbers,
  type SafeTensor,
  type SafetensorsDType,
  toBf16Bits,
  toFloat32,
} from "../io/mod.ts";

/** How tensors are keyed in a file. */
export type KeyStyle = "named" | "positional";

/** Options of {@link saveSafetensors}. */
export interface SaveOptions {
  /** Storage type of f32 tensors: "F32" (default, exact) or "BF16" (rounded to nearest even, half the bytes). */
  dtype?: "F32" | "BF16";
  /** `__metadata__` strings. */
  metadata?: Record<string, string>;
  /**
   * "named" (default): dotted names as {@link Module.stateDict}. "positional": `p{i}` for the
   * i-th parameter and `b{j}` for the j-th buffer, flodl's `.fdl` consensus keys.
   */
  keys?: KeyStyle;
}

/** The module's state under the chosen key style, in stateDict order. */
export function keyedState(module: Module, keys: KeyStyle = "named"): Map<string, Tensor> {
  if (keys === "named") return module.stateDict();
  if (keys !== "positional") throw new TypeError(`keys must be "named" or "positional", got ${JSON.stringify(keys)}`);
  const out = new Map<string, Tensor>();
  module.parameters().forEach((p, i) => out.set(`p${i}`, p.data));
  module.buffers().forEach((b, j) => out.set(`b${j}`, b));
  return out;
}

/**
 * Serialize a module's parameters then buffers as a safetensors file (reads every tensor
 * back from the GPU: the only wait). f32 tensors become F32 (or BF16), i32 and u32 buffers
 * I32 and U32, counters (BatchNorm's `num_batches_tracked`) I64 as PyTorch writes them.
 * @returns The file bytes; write them with `Deno.writeFile` or to OPFS.
 * @example
 * ```ts ignore
 * const bytes = await saveSafetensors(model, { metadata: { epoch: "3" } });
 * await Deno.writeFile("runs/mnist.fdl", bytes);
 * ```
 */
export async function saveSafetensors(module: Module, options: SaveOptions = {}): Promise<Uint8Array> {
  const dtype = options.dtype ?? "F32";
  if (dtype !== "F32" && dtype !== "BF16") {
    throw new TypeError(`saveSafetensors: dtype must be "F32" or "BF16", got ${JSON.stringify(dtype)}`);
  }
  const tensors: Record<string, SafeTensor> = {};
  const counters = new Set(module.namedCounters().map(([, t]) => t));
  for (const [k, t] of keyedState(module, options.keys)) {
    const data = await t.toArray();
    const shape = [...t.shape];
    if (counters.has(t)) {
      tensors[k] = { dtype: "I64", shape, data: BigInt64Array.from(data, (v) => BigInt(v)) };
    } else if (data instanceof Float32Array) {
      tensors[k] = dtype === "F32" ? { dtype, shape, data } : { dtype, shape, data: toBf16Bits(data) };
    } else {
      tensors[k] = { dtype: data instanceof Int32Array ? "I32" : "U32", shape, data };
    }
  }
  return encodeSafetensors(tensors, options.metadata);
}

/** Options of {@link loadSafetensors}. */
export interface LoadFileOptions {
  /** Refuse missing and unexpected keys (default true); shape and dtype mismatches are refused either way. */
  strict?: boolean;
  /** Key style of the file (default "named"); see {@link SaveOptions.keys}. */
  keys?: KeyStyle;
}

const BASE: Record<SafetensorsDType, StateEntry["base"]> = {
  F32: "f32",
  BF16: "f32",
  F16: "f32",
  I32: "i32",
  U32: "u32",
  I64: "i32",
};

/**
 * Load a safetensors file (ours or PyTorch's) into a module's parameters and buffers.
 * The file is decoded and validated, then checked against the module; one error lists
 * every missing or unexpected key and every shape or dtype mismatch, and nothing is
 * written unless all is well. BF16 and F16 values are widened exactly to f32; I64 values
 * (PyTorch's `num_batches_tracked`) go into i32 tensors when they fit. A counter the file
 * does not hold is reset to 0 and not reported missing (as PyTorch does).
 * @param source File name for messages.
 * @returns The file's metadata and the keys a non-strict load skipped.
 * @throws {RangeError|TypeError} For a corrupt file (from {@link decodeSafetensors}).
 * @throws {Error} Listing every mismatch with the module.
 * @throws {RangeError} When an I64 value does not fit the i32 tensor (names the file, tensor and value).
 * @example
 * ```ts ignore
 * loadSafetensors(model, await Deno.readFile("runs/mnist.fdl"), "runs/mnist.fdl");
 * ```
 */
export function loadSafetensors(
  module: Module,
  bytes: Uint8Array,
  source = "<bytes>",
  options: LoadFileOptions = {},
): LoadResult & { metadata: Record<string, string> } {
  const { tensors, metadata } = decodeSafetensors(bytes, source);
  const own = keyedState(module, options.keys);
  const reset = (options.keys ?? "named") === "named" ? module.namedCounters().filter(([k]) => !(k in tensors)) : [];
  for (const [k] of reset) own.delete(k);
  const expected = new Map([...own].map(([k, t]) => [k, tensorEntry(t)]));
  const offered = new Map<string, StateEntry>(
    Object.entries(tensors).map(([k, t]) => [k, { shape: t.shape, dtype: t.dtype, base: BASE[t.dtype] }]),
  );
  const result = checkStateDict(expected, offered, {
    strict: options.strict ?? true,
    source,
    into: module.constructor.name,
  });
  // Every value is converted (and range-checked) before the first write.
  const writes: [Tensor, ArrayLike<number>][] = [];
  for (const [k, t] of own) {
    const src = tensors[k];
    // NOTE: an empty write is skipped: Deno 2.9's writeBuffer panics on 0 bytes.
    if (!src || t.numel === 0) continue;
    writes.push([t, BASE[src.dtype] === "f32" ? toFloat32(src) : src.dtype === "I64" ? i64ForI32(src, k, source, module) : src.data as ArrayLike<number>]);
  }
  for (const [t, data] of writes) t.write(data);
  for (const [, t] of reset) t.write(new Int32Array(t.numel));
  return { ...result, metadata };
}

function i64ForI32(src: SafeTensor, key: string, source: string, module: Module): Float64Array {
  try {
    return int64ToNumbers(src, key, [-(2 ** 31), 2 ** 31 - 1]);
  } catch (e) {
    throw new RangeError(`Cannot load "${source}" into ${module.constructor.name}: ${(e as Error).message}`, { cause: e });
  }
}
