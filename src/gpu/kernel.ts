/**
 * A kernel family: one `shaders/<family>.wgsl`, its uniform `Params` mirror and its
 * storage bindings by name, declared once beside each other, and
 * {@link launch}, the one helper every op records a kernel launch with.
 *
 * Call sites name buffers as the WGSL does (`{ x, y: out }`); the slot numbers live only
 * here and in the shader, and `test/unit/gpu/bindings_test.ts` compares the two (name,
 * slot and access of every `@binding(n) var<storage, ...>` line).
 */
import type { Device } from "./device.ts";
import type { Dispatch } from "./dispatch.ts";
import type { Layout } from "./params.ts";

/** How a shader accesses a storage binding: its WGSL access mode. */
export type Access = "read" | "read_write";

/** Storage bindings of a family by WGSL variable name: `[slot, access]`. */
export type Bindings = Readonly<Record<string, readonly [slot: number, access: Access]>>;

/**
 * A buffer a launch binds: a raw buffer or anything that holds one (a tensor). A tensor that
 * is a view into an arena (`byteOffset > 0`) binds its own byte range.
 */
export type Bindable = GPUBuffer | { readonly buffer: GPUBuffer; readonly byteOffset?: number; readonly byteLength?: number };

/** One shader family: its file, its params mirror, its bindings and params defaults. */
export interface Kernel<L extends Layout<any> = Layout<any>, B extends Bindings = Bindings> {
  /** File stem under `shaders/`. */
  readonly shader: string;
  /** Mirror of `struct Params`, bound at slot 0. */
  readonly params: L;
  /** Storage bindings by name. */
  readonly bindings: B;
  /** Values every launch starts from (a launch's `params` override them). */
  readonly defaults: Readonly<Partial<Record<keyof L["fields"], number>>>;
}

const registry: Kernel[] = [];

/**
 * Declare the storage bindings of `params.shader`'s family, by WGSL name.
 * @param params The `layout()` mirror of the family's `struct Params`.
 * @param bindings Every `var<storage>` of the shader: name → `[slot, access]`.
 * @param defaults Params values a launch may leave out.
 * @throws {Error} When the same family is declared twice with different bindings, or two names share a slot.
 * @example
 * ```ts
 * import { kernel, layout } from "./mod.ts";
 * const P = layout("softmax", "Params", { rows: "u32", len: "u32", inner: "u32" });
 * const SOFTMAX = kernel(P, { x: [1, "read"], y: [2, "read_write"], dy: [3, "read"], dx: [4, "read_write"] });
 * if (SOFTMAX.bindings.y[0] !== 2) throw new Error("y is slot 2");
 * ```
 */
export function kernel<L extends Layout<any>, B extends Bindings>(
  params: L,
  bindings: B,
  defaults: Partial<Record<keyof L["fields"], number>> = {},
): Kernel<L, B> {
  const slots = new Map<number, string>();
  for (const [name, [slot]] of Object.entries(bindings)) {
    const other = slots.get(slot);
    if (other) {
      throw new Error(`shaders/${params.shader}.wgsl: bindings "${other}" and "${name}" both declare slot ${slot}`);
    }
    slots.set(slot, name);
  }
  const found = registry.find((k) => k.shader === params.shader);
  if (found) {
    if (JSON.stringify(found.bindings) !== JSON.stringify(bindings)) {
      throw new Error(`Two different binding declarations of shaders/${params.shader}.wgsl`);
    }
    return found as Kernel<L, B>;
  }
  const k: Kernel<L, B> = { shader: params.shader, params, bindings, defaults };
  registry.push(k);
  return k;
}

/** Every family declared so far (for the bindings test). */
export function registeredKernels(): readonly Kernel[] {
  return registry;
}

/** What one launch of a family binds and runs. */
export interface Launch<K extends Kernel> {
  /** Entry point, `<op>_<direction>`. */
  entry: string;
  /** Params values over the family's defaults; omit to bind no uniform (an entry that reads none). */
  params?: Partial<Record<keyof K["params"]["fields"], number>>;
  /** Storage buffers by WGSL name; bind exactly what the entry point uses. */
  io: Partial<Record<keyof K["bindings"], Bindable>>;
  /** Workgroup counts (`Device.grid(n, wg)` for a 1-D range). */
  groups: readonly [number, number?, number?];
  /** WGSL `override` constants (`{ WG: 128 }`); part of the pipeline key. */
  overrides?: Record<string, number>;
}

/**
 * Record one launch of `k` into `device`'s current encoder: names become slots, params
 * are the family's defaults overridden by `l.params`. A grid with a 0 records nothing.
 * @throws {TypeError} When `io` names a binding the family does not declare.
 */
export function launch<K extends Kernel>(device: Device, k: K, l: Launch<K>): void {
  if (l.groups.some((g) => g === 0)) return; // an empty tensor: nothing to record
  const buffers: Dispatch["buffers"] = {};
  // Buffers behind two writable bindings (dW and db views of one flat gradient buffer): each
  // binds only its own range, even from offset 0, or WebGPU (Dawn) refuses the aliasing.
  const writable = new Set<GPUBuffer>(), twice = new Set<GPUBuffer>();
  for (const name in l.io) {
    const b = l.io[name] as Bindable | undefined;
    if (!b || !("buffer" in b) || k.bindings[name]?.[1] !== "read_write") continue;
    if (writable.has(b.buffer)) twice.add(b.buffer);
    writable.add(b.buffer);
  }
  for (const name in l.io) {
    const b = l.io[name] as Bindable | undefined;
    if (b === undefined) continue;
    const decl = k.bindings[name];
    if (!decl) {
      const known = Object.keys(k.bindings).join(", ");
      throw new TypeError(`${k.shader}/${l.entry}: no binding "${name}" in shaders/${k.shader}.wgsl (known: ${known})`);
    }
    if (!("buffer" in b)) buffers[decl[0]] = b;
    else if (b.byteOffset || twice.has(b.buffer)) {
      // A range rounded up to 16 bytes (within the buffer): shaders read some bindings as
      // array<vec4f>, whose length is the binding's size / 16, so a 40-byte bias must bind 48.
      const offset = b.byteOffset ?? 0;
      const size = Math.min(b.buffer.size - offset, Math.ceil(Math.max(4, b.byteLength ?? 4) / 16) * 16);
      buffers[decl[0]] = { buffer: b.buffer, offset, size };
    }
    else buffers[decl[0]] = b.buffer;
  }
  device.dispatch({
    shader: k.shader,
    entry: l.entry,
    overrides: l.overrides,
    params: l.params && { layout: k.params, values: { ...k.defaults, ...l.params } as Record<string, number> },
    buffers,
    groups: l.groups,
  });
}
