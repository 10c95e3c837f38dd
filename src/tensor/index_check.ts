/**
 * Out-of-range class and row indices (crossEntropy, nllLoss, embedding): PyTorch raises,
 * a GPU kernel cannot. Two ways to get the same error here (docs/ENGINE.md "Index checks"):
 *
 * - Host-known indices (a plain array given to the op) are checked before the upload:
 *   {@link hostIndexTensor}. Always on; it costs one pass over host data.
 * - Indices already on the GPU are checked only in checked mode ({@link setIndexChecks}):
 *   a small kernel records the first bad position and value, and the next read back on
 *   the device (reading the loss) throws. Off by default, so the hot path records nothing.
 */
import { Device, kernel, launch, layout } from "../gpu/mod.ts";
import { fmt, numel, type Shape } from "./shape.ts";

/** Mirrors `struct Params` in shaders/check.wgsl. */
export const CHECK_PARAMS = layout("check", "Params", {
  n: "u32",
  lo: "i32",
  hi: "i32",
  ignore: "i32",
  use_ignore: "u32",
});
/** Storage bindings of shaders/check.wgsl: the index checked, the 8-byte report. */
export const CHECK = kernel(CHECK_PARAMS, { idx: [1, "read"], report: [2, "read_write"] });

/** Where an index sits, for the message: "row 3" for a 1-D target, "position [3, 1]" otherwise. */
function position(flat: number, shape: Shape, what: string): string {
  if (shape.length <= 1) return `${what} ${flat}`;
  const at: number[] = [];
  for (let d = shape.length - 1; d >= 0; d--) {
    at.unshift(flat % shape[d]);
    flat = Math.floor(flat / shape[d]);
  }
  return `position [${at.join(", ")}]`;
}

/** What an index check needs to name a bad index. */
export interface IndexRule {
  /** Op name, first word of the message. */
  op: string;
  /** What the indices are ("target", "index"). */
  noun: string;
  /** What a position is for 1-D indices ("row", "position"). */
  where: string;
  /** Valid range [0, limit). */
  limit: number;
  /** A value allowed outside the range (ignoreIndex), if any. */
  ignore?: number;
}

/** The message for a bad index: `crossEntropy: target 12 at row 3 is out of range [0, 10)`. */
export function indexMessage(rule: IndexRule, value: number, flat: number, shape: Shape): string {
  return `${rule.op}: ${rule.noun} ${value} at ${position(flat, shape, rule.where)} is out of range [0, ${rule.limit})`;
}

/**
 * Check host indices against a rule; throws on the first bad one.
 * @throws {RangeError} Naming the op, the value, its position and the valid range.
 */
export function checkHostIndices(values: ArrayLike<number>, shape: Shape, rule: IndexRule): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === rule.ignore) continue;
    if (!Number.isInteger(v) || v < 0 || v >= rule.limit) throw new RangeError(indexMessage(rule, v, i, shape));
  }
}

// ---- checked mode (GPU) ----------------------------------------------------------------------

let enabled = false;

interface Pending {
  report: GPUBuffer;
  rule: IndexRule;
  shape: number[];
}
const pending = new WeakMap<Device, Pending[]>();

/**
 * Turn checked mode for GPU indices on or off (default off). When on, every crossEntropy,
 * nllLoss and embedding records a range check of its indices, and the next read back on
 * that device (`await loss.item()`) throws a RangeError for the first bad index found, as
 * PyTorch would have at the op. Costs a dispatch per op and a small read per check: a
 * debugging aid, off in training runs.
 * @example
 * ```ts
 * import { setIndexChecks } from "./index_check.ts";
 * setIndexChecks(true);
 * setIndexChecks(false);
 * ```
 */
export function setIndexChecks(on: boolean): void {
  if (typeof on !== "boolean") throw new TypeError(`setIndexChecks: expects a boolean, got ${typeof on}`);
  enabled = on;
}

/** Whether checked mode is on. */
export function indexChecksEnabled(): boolean {
  return enabled;
}

/**
 * In checked mode, record a range check of `index` (an i32 GPU buffer of `shape`); a no-op otherwise.
 */
export function recordIndexCheck(device: Device, index: GPUBuffer, shape: Shape, rule: IndexRule): void {
  if (!enabled) return;
  const n = numel(shape);
  if (n === 0) return;
  const report = device.alloc(8, `check ${rule.op} ${fmt(shape)}`);
  device.upload(report, 0, new Uint32Array([0xffffffff, 0]));
  const values = {
    n,
    lo: 0,
    hi: Math.min(rule.limit, 2 ** 31 - 1),
    ignore: rule.ignore ?? 0,
    use_ignore: rule.ignore === undefined ? 0 : 1,
  };
  launch(device, CHECK, { entry: "range_check", params: values, io: { idx: index, report }, groups: Device.grid(n) });
  launch(device, CHECK, { entry: "range_pick", io: { idx: index, report }, groups: [1] });
  const list = pending.get(device) ?? [];
  list.push({ report, rule, shape: [...shape] });
  pending.set(device, list);
}

/**
 * Read every check recorded on `device` since the last settle; throw for the first bad one.
 * Called before each read back (Tensor.toArray); returns at once when nothing is pending.
 * @throws {RangeError} `crossEntropy: target 12 at row 3 is out of range [0, 10)`.
 */
export async function settleIndexChecks(device: Device): Promise<void> {
  const list = pending.get(device);
  if (!list || list.length === 0) return;
  pending.delete(device);
  let error: RangeError | undefined;
  for (const c of list) {
    const [at, bits] = new Uint32Array(await device.read(c.report, 0, 8));
    device.free(c.report);
    if (at !== 0xffffffff && !error) error = new RangeError(indexMessage(c.rule, bits | 0, at, c.shape));
  }
  if (error) throw error;
}
