import { Parameter, type Variable } from "../autograd/mod.ts";
import type { Device } from "../gpu/mod.ts";
import { Tensor } from "../tensor/mod.ts";
import { checkStateDict, type LoadResult, type StateEntry, tensorEntry } from "./state_check.ts";

export type { LoadResult };

/** Options of {@link Module.loadStateDict}. */
export interface LoadOptions {
  /** Refuse missing and unexpected keys (shape mismatches are refused either way). Default true. */
  strict?: boolean;
  /** Name used in error messages (a file name). Default "state dict". */
  source?: string;
}

type Member =
  | { kind: "module"; value: Module }
  | { kind: "parameter"; value: Parameter }
  | { kind: "buffer"; value: Tensor }
  | { kind: "counter"; value: Tensor };

/**
 * Base class of every layer and model, flodl/PyTorch-like: a tree of named submodules,
 * parameters and buffers, a training flag, and a state dict.
 *
 * **How members are found.** Two ways, one order rule:
 * 1. Explicit: `registerModule(name, m)`, `registerParameter(name, p)`, `registerBuffer(name, t)`
 *    (each returns its argument, so `this.fc = this.registerModule("fc", new Linear(4, 2))`).
 * 2. Automatic: any own enumerable field holding a `Module` or a `Parameter` is a member named
 *    after the field (`this.fc1 = new Linear(...)` gives `fc1.weight`). Fields are read at each
 *    query, so reassigning a field replaces the member. Tensor fields are never buffers
 *    by discovery (a cached tensor is not state); buffers are always registered explicitly.
 *    Arrays and maps are not searched: hold a list of layers in a `Sequential`, or register
 *    each with a name. A registered name wins over a field of the same name.
 *
 * Order (which fixes `namedParameters()`, the order the data-parallel trainer packs
 * parameters in): explicitly registered members in registration order, then discovered
 * fields in property order (JavaScript's order: declaration order of class fields, integer-like
 * names first) skipping values already registered. Within a module its own parameters come
 * before its children's, children in member order, depth first, as PyTorch's
 * `named_parameters`. A parameter or module reachable twice (weight tying) is listed once,
 * under its first name.
 *
 * @example
 * ```ts
 * import { Module } from "./module.ts";
 * import type { Variable } from "../autograd/mod.ts";
 * class Identity extends Module {
 *   forward(x: Variable): Variable { return x; }
 * }
 * const m = new Identity();
 * if (m.parameters().length !== 0 || !m.training) throw new Error("empty module in training mode");
 * ```
 */
export abstract class Module {
  #members = new Map<string, Member>();
  #training = true;

  /** Compute the output. Modules that take more inputs declare them after `x`. */
  abstract forward(x: Variable, ...rest: unknown[]): Variable;

  /** Extra text inside `Name(...)` in {@link toString} (layers show their sizes). */
  extraRepr(): string {
    return "";
  }

  // ---- registration ----------------------------------------------------------

  /**
   * Register a submodule under `name` (replacing a submodule of that name). Returns `m`.
   * @throws {TypeError} When `name` is empty, contains "." or names a parameter or buffer.
   */
  registerModule<M extends Module>(name: string, m: M): M {
    if (!(m instanceof Module)) throw new TypeError(`registerModule: "${name}" must be a Module, got ${describe(m)}`);
    this.#register(name, { kind: "module", value: m });
    return m;
  }

  /**
   * Register a parameter under `name` (replacing a parameter of that name). Returns `p`.
   * @throws {TypeError} When `name` is empty, contains "." or names a module or buffer.
   */
  registerParameter<P extends Parameter>(name: string, p: P): P {
    if (!(p instanceof Parameter)) {
      throw new TypeError(`registerParameter: "${name}" must be a Parameter, got ${describe(p)}`);
    }
    this.#register(name, { kind: "parameter", value: p });
    return p;
  }

  /**
   * Register a buffer: a tensor that is state but not trained (BatchNorm running statistics).
   * The tensor is kept (persists across steps). Registering the same name again replaces it;
   * update buffers in place or re-register. Returns `t`.
   * @throws {TypeError} When `name` is empty, contains "." or names a module or parameter.
   */
  registerBuffer(name: string, t: Tensor): Tensor {
    if (!(t instanceof Tensor)) {
      throw new TypeError(`registerBuffer: "${name}" must be a Tensor, got ${describe(t)}`);
    }
    if (!t.kept) t.keep();
    this.#register(name, { kind: "buffer", value: t });
    return t;
  }

  /**
   * Register a counter: an i32 buffer that is state PyTorch keeps as torch.long (BatchNorm's
   * `num_batches_tracked`). It is in {@link stateDict} and files (saved as I64), but not in
   * {@link namedBuffers}: the data-parallel trainer averages buffers as f32 frames, and an
   * averaged count means nothing, so each rank keeps its own. Returns `t`.
   * @throws {TypeError} When `t` is not an i32 tensor, or for a bad or taken name.
   */
  registerCounter(name: string, t: Tensor): Tensor {
    if (!(t instanceof Tensor) || t.dtype !== "i32") {
      throw new TypeError(
        `registerCounter: "${name}" must be an i32 Tensor, got ${t instanceof Tensor ? `a ${t.dtype} tensor` : describe(t)}`,
      );
    }
    if (!t.kept) t.keep();
    this.#register(name, { kind: "counter", value: t });
    return t;
  }

  #register(name: string, member: Member): void {
    if (typeof name !== "string" || name === "" || name.includes(".")) {
      throw new TypeError(
        `${this.constructor.name}: member name must be a non-empty string without ".", got ${JSON.stringify(name)}`,
      );
    }
    const prev = this.#members.get(name);
    if (prev && prev.kind !== member.kind) {
      throw new TypeError(
        `${this.constructor.name}: "${name}" is already a ${prev.kind}, cannot register it as a ${member.kind}`,
      );
    }
    this.#members.set(name, member);
  }

  /** Own members: registered ones, then discovered fields not already registered. */
  #ownMembers(): [string, Member][] {
    const out = [...this.#members];
    const seen = new Set<unknown>(out.map(([, m]) => m.value));
    for (const [key, value] of Object.entries(this)) {
      if (seen.has(value) || this.#members.has(key)) continue;
      if (value instanceof Module) out.push([key, { kind: "module", value }]);
      else if (value instanceof Parameter) out.push([key, { kind: "parameter", value }]);
      else continue;
      seen.add(value);
    }
    return out;
  }

  // ---- traversal -------------------------------------------------------------

  /** Direct submodules with their names, in member order. */
  namedChildren(): [string, Module][] {
    return this.#ownMembers().filter(([, m]) => m.kind === "module").map(([n, m]) => [n, m.value as Module]);
  }

  /** Direct submodules. */
  children(): Module[] {
    return this.namedChildren().map(([, m]) => m);
  }

  /** This module and every descendant, pre-order, with dotted names (this one is ""); each module once. */
  namedModules(prefix = ""): [string, Module][] {
    const out: [string, Module][] = [];
    const seen = new Set<Module>();
    const walk = (m: Module, name: string) => {
      if (seen.has(m)) return;
      seen.add(m);
      out.push([name, m]);
      for (const [child, c] of m.namedChildren()) walk(c, name ? `${name}.${child}` : child);
    };
    walk(this, prefix);
    return out;
  }

  /** This module and every descendant, pre-order. */
  modules(): Module[] {
    return this.namedModules().map(([, m]) => m);
  }

  #named<K extends "parameter" | "buffer" | "counter">(kind: K): [string, K extends "parameter" ? Parameter : Tensor][] {
    const out: [string, any][] = [];
    const seen = new Set<unknown>();
    for (const [prefix, m] of this.namedModules()) {
      for (const [name, member] of m.#ownMembers()) {
        if (member.kind !== kind || seen.has(member.value)) continue;
        seen.add(member.value);
        out.push([prefix ? `${prefix}.${name}` : name, member.value]);
      }
    }
    return out;
  }

  /** Every parameter with its dotted name ("0.weight", "fc1.bias"), in the order described on the class. */
  namedParameters(): [string, Parameter][] {
    return this.#named("parameter");
  }

  /** Every parameter, in {@link namedParameters} order. */
  parameters(): Parameter[] {
    return this.namedParameters().map(([, p]) => p);
  }

  /** Every buffer with its dotted name, in the same tree order as parameters. */
  namedBuffers(): [string, Tensor][] {
    return this.#named("buffer");
  }

  /** Every buffer, in {@link namedBuffers} order. */
  buffers(): Tensor[] {
    return this.namedBuffers().map(([, t]) => t);
  }

  /** Every counter ({@link registerCounter}) with its dotted name, in the same tree order. */
  namedCounters(): [string, Tensor][] {
    return this.#named("counter");
  }

  /** Total element count of the parameters. */
  numParameters(): number {
    return this.parameters().reduce((s, p) => s + p.data.numel, 0);
  }

  // ---- mode ------------------------------------------------------------------

  /** True in training mode (the default); Dropout and BatchNorm read it. */
  get training(): boolean {
    return this.#training;
  }

  /** Set training mode on this module and every descendant. Returns this. */
  train(on = true): this {
    for (const m of this.modules()) m.#training = on;
    return this;
  }

  /** Evaluation mode: `train(false)`. Returns this. */
  eval(): this {
    return this.train(false);
  }

  /** Drop the accumulated gradient of every parameter. */
  zeroGrad(): void {
    for (const p of this.parameters()) p.zeroGrad();
  }

  /**
   * The device of the first parameter or buffer.
   * @throws {Error} When the module has neither (it has no device of its own).
   */
  device(): Device {
    const t = this.parameters()[0]?.data ?? this.buffers()[0];
    if (!t) throw new Error(`${this.constructor.name}.device: the module has no parameters or buffers, so no device`);
    return t.device;
  }

  // ---- state -----------------------------------------------------------------

  /**
   * Parameters, buffers, then counters by dotted name (flodl's order: {@link namedParameters},
   * then {@link namedBuffers}; {@link namedCounters} last). The tensors are the module's own, not copies.
   */
  stateDict(): Map<string, Tensor> {
    const out = new Map<string, Tensor>();
    for (const [n, p] of this.namedParameters()) out.set(n, p.data);
    for (const [n, b] of this.namedBuffers()) out.set(n, b);
    for (const [n, c] of this.namedCounters()) out.set(n, c);
    return out;
  }

  /**
   * Copy tensors into this module's parameters and buffers, on the GPU (recorded copies).
   * Everything is validated first and one error lists every problem: missing keys and
   * unexpected keys (when `strict`), shape, dtype and device mismatches with both sides.
   * When validation fails nothing is changed. A counter the state does not give is not
   * missing, even when strict: it is reset to 0, as PyTorch does for a state dict without
   * `num_batches_tracked`.
   * @returns The keys that were missing and unexpected (both empty when `strict`).
   * @throws {Error} Listing every mismatch, naming `source`.
   */
  loadStateDict(state: Map<string, Tensor> | Record<string, Tensor>, options: LoadOptions = {}): LoadResult {
    const given = state instanceof Map ? state : new Map(Object.entries(state));
    const own = this.stateDict();
    const reset = this.namedCounters().filter(([k]) => !given.has(k));
    for (const [k] of reset) own.delete(k);
    const expected = new Map<string, StateEntry>([...own].map(([k, t]) => [k, tensorEntry(t)]));
    const offered = new Map<string, StateEntry>([...given].map(([k, t]) => [k, tensorEntry(t)]));
    const result = checkStateDict(expected, offered, {
      strict: options.strict ?? true,
      source: options.source ?? "state dict",
      into: this.constructor.name,
      extra: (k) => {
        const src = given.get(k)!, dst = own.get(k)!;
        if (src.released) return `"${k}" was released (used after its step ended or disposed)`;
        if (src.device !== dst.device) {
          return `"${k}" is on device "${src.device.label}", model is on "${dst.device.label}"`;
        }
      },
    });
    for (const [k, dst] of own) {
      const src = given.get(k);
      if (src && src !== dst) dst.device.copy(src.buffer, src.byteOffset, dst.buffer, dst.byteOffset, dst.numel * 4);
    }
    for (const [, t] of reset) t.device.clear(t.buffer, t.byteOffset, t.numel * 4);
    return result;
  }

  /** PyTorch-like tree: `Name(extra)` with `(child): ...` lines. */
  toString(): string {
    const kids = this.namedChildren();
    const head = `${this.constructor.name}(${this.extraRepr()}`;
    if (kids.length === 0) return `${head})`;
    const lines = kids.map(([n, m]) => `  (${n}): ${m.toString().replaceAll("\n", "\n  ")}`);
    return `${head}\n${lines.join("\n")}\n)`;
  }
}

function describe(v: unknown): string {
  return v === null ? "null" : typeof v === "object" ? (v.constructor?.name ?? "object") : typeof v;
}
