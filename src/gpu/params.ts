/**
 * TypeScript mirrors of WGSL uniform structs.
 *
 * Every field is a 4-byte scalar (`u32`, `i32`, `f32`), so a field's byte offset is
 * its index × 4 and no alignment table is needed. Each mirror names its shader file
 * and struct; `test/unit/gpu/params_test.ts` checks every registered mirror against
 * the struct text in `shaders/`.
 */

/** Scalar types a uniform field may have. */
export type ScalarType = "u32" | "i32" | "f32";

/** A uniform struct layout: field names in WGSL order with their types. */
export interface Layout<F extends Record<string, ScalarType> = Record<string, ScalarType>> {
  /** Shader family (file stem under `shaders/`). */
  readonly shader: string;
  /** WGSL struct name. */
  readonly struct: string;
  /** Fields in declaration order. */
  readonly fields: F;
  /** Field names in order. */
  readonly names: readonly string[];
  /** Byte size (fields × 4). */
  readonly bytes: number;
}

/** Values for every field of a layout. */
export type ParamValues<L extends Layout> = { [K in keyof L["fields"]]: number };

const registry: Layout[] = [];

/**
 * Declare the mirror of `struct <struct>` in `shaders/<shader>.wgsl`.
 * @example
 * ```ts
 * import { layout } from "./params.ts";
 * const UNARY = layout("unary", "Params", { n: "u32", alpha: "f32" });
 * if (UNARY.bytes !== 8) throw new Error("two scalars");
 * ```
 */
export function layout<F extends Record<string, ScalarType>>(shader: string, struct: string, fields: F): Layout<F> {
  const names = Object.keys(fields);
  const found = registry.find((l) => l.shader === shader && l.struct === struct);
  const l: Layout<F> = { shader, struct, fields, names, bytes: names.length * 4 };
  if (found) {
    const same = JSON.stringify(found.fields) === JSON.stringify(fields);
    if (!same) throw new Error(`Two different mirrors of struct ${struct} in shaders/${shader}.wgsl`);
    return found as Layout<F>;
  }
  registry.push(l);
  return l;
}

/** Every mirror declared so far (for the consistency test). */
export function registeredLayouts(): readonly Layout[] {
  return registry;
}

/** Write `values` into `view` at `offset` following `l`; a missing or non-finite u32 is an error naming the field. */
export function writeParams(view: DataView, offset: number, l: Layout<any>, values: Readonly<Record<string, number>>): void {
  for (let i = 0; i < l.names.length; i++) {
    const name = l.names[i];
    const v = values[name];
    if (typeof v !== "number") throw new TypeError(`Param "${name}" of ${l.shader}.wgsl ${l.struct} is missing`);
    const at = offset + i * 4;
    switch (l.fields[name]) {
      case "f32":
        view.setFloat32(at, v, true);
        break;
      case "u32":
        if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
          throw new RangeError(`Param "${name}" of ${l.shader}.wgsl ${l.struct} must be a u32, got ${v}`);
        }
        view.setUint32(at, v, true);
        break;
      case "i32":
        if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
          throw new RangeError(`Param "${name}" of ${l.shader}.wgsl ${l.struct} must be an i32, got ${v}`);
        }
        view.setInt32(at, v, true);
        break;
    }
  }
}
