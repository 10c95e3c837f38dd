/**
 * A walk-in rank's data: the coordinator's training and eval sets as packs (safetensors,
 * one tensor per field, data/pack_source.ts's format), fetched whole and checked against the
 * join token's sha256 by the walk-in's loader before anything runs, then read here from
 * memory. A program gives its builder {@link walkInData}'s sets when there are some, and
 * loads its own data otherwise: on a walk-in its top level must not touch the file system.
 */
import { type BatchDataSet, type FieldSpec, type HostArray, PACK_FIELDS_KEY, writePack } from "../../data/mod.ts";
import { parseSafetensorsHeader, safetensorsHeaderBytes } from "../../io/mod.ts";

/** The `globalThis` key under which the walk-in's loader leaves what it fetched and checked. */
export const WALK_IN_KEY = Symbol.for("flodl-webgpu.walkIn");

/** What the loader (walk_in_loader.ts) leaves under {@link WALK_IN_KEY} before it imports the bundle. */
export interface WalkInGlobal {
  /** The join token the command was given. */
  token: string;
  /** Each pack's bytes by name (`train`, `test`), their sha256 checked. */
  packs: Record<string, Uint8Array>;
  /** `performance.now()` when the loader started (the time to a first step counts from it). */
  started: number;
  /** Bytes fetched: the bundle and the packs. */
  bytes: number;
  /** On a tab's join page (walk_in_page.ts): where the rank tells the page what it does. */
  page?: WalkInPageHooks;
}

/** What a join page hears from its rank (walk_in_start.ts calls these). */
export interface WalkInPageHooks {
  /** The rank's slot and run, once `joinRun` took the token. */
  joining(rank: number, run: string): void;
  /** A progress line of the rank (joined, refused, stopped). */
  log(line: string): void;
  /** Every event the rank sends the coordinator (its batches). */
  event(e: { kind: string; batch?: { samples: number; epoch: number; loss: number } }): void;
  /** The rank stopped (`error`: it never served, one line why). */
  done(reason: string, error: boolean): void;
}

/** The loader's record, on a walk-in rank; undefined elsewhere. */
export function walkInGlobal(): WalkInGlobal | undefined {
  return (globalThis as { [k: symbol]: unknown })[WALK_IN_KEY] as WalkInGlobal | undefined;
}

/**
 * On a walk-in rank, the coordinator's datasets by name (`train`, `test` for `npm start`'s
 * packs), read from the packs the loader checked; undefined on any other process (load the
 * data as usual there).
 * @example
 * ```ts ignore
 * const packs = walkInData();
 * const train = packs ? packs.train : await loadMnist({ split: "train" });
 * ```
 */
export function walkInData(): Record<string, BatchDataSet> | undefined {
  const w = walkInGlobal();
  if (!w) return undefined;
  return Object.fromEntries(Object.entries(w.packs).map(([name, bytes]) => [name, packDataset(bytes, `the walk-in's ${name} pack`)]));
}

const ARRAYS = { F32: Float32Array, I32: Int32Array, U32: Uint32Array } as const;
const FIELD = { F32: "f32", I32: "i32", U32: "u32" } as const;

/**
 * A pack in memory as a batch dataset (the rows of a batch copied out of the pack's tensors).
 * @param where How errors name the pack.
 * @throws {RangeError|TypeError} Naming the pack for a header it cannot read, a field that is
 * not F32/I32/U32 or fields of different lengths.
 */
export function packDataset(bytes: Uint8Array, where: string): BatchDataSet {
  const end = safetensorsHeaderBytes(bytes.subarray(0, 8), where);
  const header = parseSafetensorsHeader(bytes.subarray(0, end), bytes.length, where);
  const byName = new Map(header.entries.map((e) => [e.name, e]));
  const order = header.metadata[PACK_FIELDS_KEY]?.split(",") ?? header.entries.map((e) => e.name);
  const fields: FieldSpec[] = [], arrays: HostArray[] = [];
  let n = -1;
  for (const name of order) {
    const e = byName.get(name);
    if (!e) throw new RangeError(`${where}: no field "${name}"`);
    if (!(e.dtype in ARRAYS)) throw new TypeError(`${where}: field "${name}" is ${e.dtype}; a dataset field must be F32, I32 or U32`);
    const dtype = e.dtype as keyof typeof ARRAYS;
    if (e.shape.length === 0 || (n >= 0 && e.shape[0] !== n)) {
      throw new RangeError(`${where}: field "${name}" has shape [${e.shape}], expected [${n >= 0 ? n : "N"}, ...]`);
    }
    n = e.shape[0];
    const start = bytes.byteOffset + header.dataStart + e.begin, count = (e.end - e.begin) / 4;
    // A view over the pack (writePack aligns every tensor to 4 bytes); copied only when the bytes sit unaligned.
    const buffer = start % 4 === 0 ? bytes.buffer as ArrayBuffer : bytes.buffer.slice(start, start + count * 4) as ArrayBuffer;
    arrays.push(new ARRAYS[dtype](buffer, start % 4 === 0 ? start : 0, count) as HostArray);
    fields.push({ name, dtype: FIELD[dtype], shape: e.shape.slice(1) });
  }
  const rows = fields.map((f) => f.shape.reduce((a, b) => a * b, 1));
  return {
    fields,
    len: () => n,
    getBatch(indices) {
      return arrays.map((a, k) => {
        const r = rows[k];
        const out = new (a.constructor as new (len: number) => HostArray)(indices.length * r);
        indices.forEach((index, i) => {
          if (!Number.isInteger(index) || index < 0 || index >= n) throw new RangeError(`${where}: index ${index} is out of range for ${n} samples`);
          out.set(a.subarray(index * r, (index + 1) * r), i * r);
        });
        return { data: out, shape: [indices.length, ...fields[k].shape] };
      });
    },
  };
}

/** A batch dataset as the bytes of a pack (data/pack_source.ts's `writePack`, in memory). */
export async function packBytes(ds: BatchDataSet): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  await writePack(ds, (b) => {
    parts.push(b.slice());
    return Promise.resolve();
  });
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
