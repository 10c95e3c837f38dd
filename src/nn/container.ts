import { apply, type Variable } from "../autograd/mod.ts";
import { addOp } from "../tensor/mod.ts";
import { fusedActivation } from "./activation.ts";
import { Linear } from "./linear.ts";
import { Module } from "./module.ts";

/**
 * Modules applied one after the other; children are named "0", "1", ... so parameters are
 * "0.weight", "2.bias" as in PyTorch's `nn.Sequential`.
 * @example
 * ```ts ignore
 * const mlp = new Sequential(new Linear(784, 256), new ReLU(), new Linear(256, 10));
 * mlp.namedParameters().map(([n]) => n);   // ["0.weight", "0.bias", "2.weight", "2.bias"]
 * ```
 */
export class Sequential extends Module {
  #layers: Module[] = [];

  /** The modules in call order, registered as children "0", "1", ... */
  constructor(...modules: Module[]) {
    super();
    for (const m of modules) this.append(m);
  }

  /** Add a module at the end (named by its position). Returns this. */
  append(m: Module): this {
    this.registerModule(String(this.#layers.length), m);
    this.#layers.push(m);
    return this;
  }

  /** Number of modules. */
  get length(): number {
    return this.#layers.length;
  }

  /**
   * The module at `index` (negative counts from the end).
   * @throws {RangeError} When out of range.
   */
  at(index: number): Module {
    const i = index < 0 ? index + this.#layers.length : index;
    if (!Number.isInteger(index) || i < 0 || i >= this.#layers.length) {
      throw new RangeError(`Sequential.at: index ${index} is out of range for ${this.#layers.length} modules`);
    }
    return this.#layers[i];
  }

  /**
   * Each module in turn; a `Linear` followed by a ReLU, GELU, Tanh, Sigmoid or SiLU (exactly
   * those classes, so an overridden forward is always called; `fusedActivation`) runs as one
   * fused op (`Linear.forwardAct`): one launch forward, and the activation's gradient folded
   * into the next Linear's backward.
   */
  forward(x: Variable): Variable {
    const layers = this.#layers;
    for (let i = 0; i < layers.length; i++) {
      const m = layers[i], act = m.constructor === Linear ? fusedActivation(layers[i + 1]) : undefined;
      if (act) {
        x = (m as Linear).forwardAct(x, act);
        i++;
      } else x = m.forward(x);
    }
    return x;
  }
}

/** One step of a {@link Flow}: pass through, or add the module's output to its input. */
type Step = { kind: "through" | "also"; module: Module };

/**
 * A chain built by {@link FlowBuilder}: each step either replaces the stream by the
 * module's output (`through`) or adds it to the stream (`also`, a residual: y = x + m(x)).
 * Children are named "0", "1", ... in build order.
 */
export class Flow extends Module {
  readonly #steps: readonly Step[];

  /** The chain of `steps` (normally from {@link FlowBuilder.build}); each step's module is child "i". */
  constructor(steps: readonly Step[]) {
    super();
    this.#steps = [...steps];
    this.#steps.forEach((s, i) => this.registerModule(String(i), s.module));
  }

  /**
   * Each step in turn: `through` replaces x by m(x), `also` makes it x + m(x) (an `also` Linear
   * runs fused, the residual added in the matmul's store).
   * @throws {RangeError} When an `also` branch changes the shape.
   */
  forward(x: Variable): Variable {
    for (const s of this.#steps) {
      if (s.kind === "also" && s.module.constructor === Linear) {
        // x + linear(x) in one launch: the residual is added in the matmul's store.
        const lin = s.module as Linear;
        if (lin.inFeatures !== lin.outFeatures) {
          throw new RangeError(`Flow.also: residual branch Linear(${lin.inFeatures}, ${lin.outFeatures}) must keep the shape, got [${[...x.shape.slice(0, -1), lin.outFeatures]}] from [${x.shape}]`);
        }
        x = lin.forwardResidual(x, x);
        continue;
      }
      const y = s.module.forward(x);
      if (s.kind === "through") x = y;
      else {
        if (y.shape.length !== x.shape.length || y.shape.some((d, i) => d !== x.shape[i])) {
          throw new RangeError(
            `Flow.also: residual branch ${s.module.constructor.name} must keep the shape, got [${y.shape}] from [${x.shape}]`,
          );
        }
        x = apply(addOp, [x, y], undefined);
      }
    }
    return x;
  }

  /** `residual at i, j` for the `also` steps (empty when none), for the module tree's printout. */
  override extraRepr(): string {
    return this.#steps.some((s) => s.kind === "also")
      ? `residual at ${this.#steps.flatMap((s, i) => (s.kind === "also" ? [i] : [])).join(", ")}`
      : "";
  }
}

/**
 * flodl's graph builder for chains: `FlowBuilder.from(a).through(b).also(c).build()`.
 * Supported: `from`, `through`, `also` (residual add). flodl's `tag`/`label`/`also_with`
 * and multi-input graphs are not (yet) supported.
 * @example
 * ```ts ignore
 * const net = FlowBuilder.from(new Linear(2, 16)).through(new GELU()).also(new Linear(16, 16))
 *   .through(new Linear(16, 2)).build();
 * ```
 */
export class FlowBuilder {
  readonly #steps: Step[];

  private constructor(steps: Step[]) {
    this.#steps = steps;
  }

  /** Start a chain with its first module. */
  static from(module: Module): FlowBuilder {
    return new FlowBuilder([checked(module, "from")]);
  }

  /** Then pass the stream through `module`. */
  through(module: Module): FlowBuilder {
    return new FlowBuilder([...this.#steps, checked(module, "through", "through")]);
  }

  /** Then add `module(x)` to the stream: x + module(x) (shapes must match). */
  also(module: Module): FlowBuilder {
    return new FlowBuilder([...this.#steps, checked(module, "also", "also")]);
  }

  /** The chain as one Module. */
  build(): Flow {
    return new Flow(this.#steps);
  }
}

function checked(module: Module, call: string, kind: Step["kind"] = "through"): Step {
  if (!(module instanceof Module)) {
    throw new TypeError(`FlowBuilder.${call}: expected a Module, got ${module === null ? "null" : typeof module}`);
  }
  return { kind, module };
}
