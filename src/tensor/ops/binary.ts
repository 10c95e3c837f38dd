import { Device, type Kernel, kernel, launch, type Layout, layout, type ParamValues } from "../../gpu/mod.ts";
import type { OpDef } from "../op.ts";
import { broadcastShapes, broadcastStrides, sameShape, type Shape } from "../shape.ts";
import { Tensor } from "../tensor.ts";
import { cast, full } from "../creation.ts";
import { neg } from "./unary.ts";
import { sumTo } from "./reduce.ts";

/** Mirrors `struct Params` in shaders/binary.wgsl. */
export const BINARY_PARAMS: Layout<{
  n: "u32"; same: "u32"; o0: "u32"; o1: "u32"; o2: "u32"; o3: "u32"; o4: "u32"; o5: "u32"; a0: "u32";
  a1: "u32"; a2: "u32"; a3: "u32"; a4: "u32"; a5: "u32"; b0: "u32"; b1: "u32"; b2: "u32"; b3: "u32";
  b4: "u32"; b5: "u32"; c0: "u32"; c1: "u32"; c2: "u32"; c3: "u32"; c4: "u32"; c5: "u32";
}> = layout("binary", "Params", {
  n: "u32",
  same: "u32",
  o0: "u32",
  o1: "u32",
  o2: "u32",
  o3: "u32",
  o4: "u32",
  o5: "u32",
  a0: "u32",
  a1: "u32",
  a2: "u32",
  a3: "u32",
  a4: "u32",
  a5: "u32",
  b0: "u32",
  b1: "u32",
  b2: "u32",
  b3: "u32",
  b4: "u32",
  b5: "u32",
  c0: "u32",
  c1: "u32",
  c2: "u32",
  c3: "u32",
  c4: "u32",
  c5: "u32",
});
/** Storage bindings of shaders/binary.wgsl. */
export const BINARY: Kernel<typeof BINARY_PARAMS, {
  a: [number, "read"]; b: [number, "read"]; y: [number, "read_write"]; dy: [number, "read"];
  c: [number, "read"];
}> = kernel(BINARY_PARAMS, {
  a: [1, "read"],
  b: [2, "read"],
  y: [3, "read_write"],
  dy: [4, "read"],
  c: [5, "read"],
});

const MAX_DIMS = 6;

/** Params of a broadcast launch over `out` reading operands of shapes `a`, `b`, `c`. */
export function broadcastParams(out: Shape, a: Shape, b: Shape, c: Shape = out): ParamValues<typeof BINARY_PARAMS> {
  if (out.length > MAX_DIMS) throw new RangeError(`Broadcast ops support up to ${MAX_DIMS} dims, got ${out.length}`);
  const pad = (s: number[], fill: number) => [...new Array(MAX_DIMS - s.length).fill(fill), ...s];
  const o = pad([...out], 1);
  const sa = pad(broadcastStrides(a, out), 0);
  const sb = pad(broadcastStrides(b, out), 0);
  const sc = pad(broadcastStrides(c, out), 0);
  const v: Record<string, number> = {
    n: out.reduce((x, y) => x * y, 1),
    same: sameShape(a, out) && sameShape(b, out) && sameShape(c, out) ? 1 : 0,
  };
  for (let i = 0; i < MAX_DIMS; i++) {
    v[`o${i}`] = o[i];
    v[`a${i}`] = sa[i];
    v[`b${i}`] = sb[i];
    v[`c${i}`] = sc[i];
  }
  return v as { [K in keyof typeof BINARY_PARAMS.fields]: number };
}

/** Entry, params and grid of a broadcast launch over `out`. */
function broadcast(entry: string, out: Shape, a: Shape, b: Shape, c: Shape) {
  const params = broadcastParams(out, a, b, c);
  return { entry, params, groups: Device.grid(params.n) };
}

function checkPair(a: Tensor, b: Tensor, op: string): number[] {
  a.sameDevice(b, op);
  if (a.dtype !== "f32" || b.dtype !== "f32") {
    throw new TypeError(`${op}: expects f32 tensors, got ${a.dtype} and ${b.dtype}`);
  }
  return broadcastShapes(a.shape, b.shape, op);
}

type Grad = "identity" | "negate" | "kernel" | "none";

/** Operands each `<op>_backward_<side>` kernel reads (auto layouts bind exactly those). */
const READS: Record<string, "a" | "b" | "ab"> = {
  mul_a: "b",
  mul_b: "a",
  div_a: "b",
  div_b: "ab",
  pow_a: "ab",
  pow_b: "ab",
  maximum_a: "ab",
  maximum_b: "ab",
  minimum_a: "ab",
  minimum_b: "ab",
};

/** A broadcasting binary op; each side's gradient is dy, −dy, or a `<op>_backward_<side>` kernel. */
function defineBinary(name: string, ga: Grad, gb: Grad): OpDef {
  const op: OpDef = {
    name,
    forward([a, b]) {
      const out = checkPair(a, b, name);
      const y = Tensor.empty(out, { device: a.device }, name);
      launch(a.device, BINARY, { ...broadcast(`${name}_forward`, out, a.shape, b.shape, out), io: { a, b, y } });
      return { output: y, saved: ga === "kernel" || gb === "kernel" ? [a, b] : [] };
    },
  };
  if (ga === "none") return op;
  op.backward = (dy, ctx) => {
    const side = (g: Grad, i: 0 | 1): Tensor | null => {
      if (!ctx.needs[i]) return null;
      const which = i === 0 ? "a" : "b";
      let full: Tensor;
      if (g === "identity") full = dy;
      else if (g === "negate") full = neg(dy);
      else {
        const [a, b] = ctx.saved;
        const reads = READS[`${name}_${which}`];
        full = Tensor.empty(dy.shape, { device: dy.device }, `${name}.backward`);
        const io = { y: full, dy, a: reads.includes("a") ? a : undefined, b: reads.includes("b") ? b : undefined };
        launch(dy.device, BINARY, {
          ...broadcast(`${name}_backward_${which}`, dy.shape, a.shape, b.shape, dy.shape),
          io,
        });
      }
      return sumTo(full, ctx.shapes[i]);
    };
    return [side(ga, 0), side(gb, 1)];
  };
  return op;
}

/** a + b */
export const addOp: OpDef = defineBinary("add", "identity", "identity");
/** a − b */
export const subOp: OpDef = defineBinary("sub", "identity", "negate");
/** a · b */
export const mulOp: OpDef = defineBinary("mul", "kernel", "kernel");
/** a / b */
export const divOp: OpDef = defineBinary("div", "kernel", "kernel");
/** a ^ b */
export const powOp: OpDef = defineBinary("pow", "kernel", "kernel");
/** max(a, b); ties split the gradient. */
export const maximumOp: OpDef = defineBinary("maximum", "kernel", "kernel");
/** min(a, b); ties split the gradient. */
export const minimumOp: OpDef = defineBinary("minimum", "kernel", "kernel");
/** a == b (1 or 0, no gradient) */
export const eqOp: OpDef = defineBinary("eq", "none", "none");
/** a != b */
export const neOp: OpDef = defineBinary("ne", "none", "none");
/** a < b */
export const ltOp: OpDef = defineBinary("lt", "none", "none");
/** a <= b */
export const leOp: OpDef = defineBinary("le", "none", "none");
/** a > b */
export const gtOp: OpDef = defineBinary("gt", "none", "none");
/** a >= b */
export const geOp: OpDef = defineBinary("ge", "none", "none");

/** where(cond, a, b): a where cond != 0, else b; all three broadcast. Inputs: [a, b, cond]. */
export const whereOp: OpDef = {
  name: "where",
  forward([a, b, c]) {
    const ab = checkPair(a, b, "where");
    a.sameDevice(c, "where");
    const out = broadcastShapes(ab, c.shape, "where");
    const y = Tensor.empty(out, { device: a.device }, "where");
    const cond = c.dtype === "f32" ? c : cast(c, "f32");
    launch(a.device, BINARY, {
      ...broadcast("where_forward", out, a.shape, b.shape, c.shape),
      io: { a, b, y, c: cond },
    });
    return { output: y, saved: [cond] };
  },
  backward(dy, ctx) {
    const [sa, sb, sc] = ctx.shapes;
    const cond = ctx.saved[0];
    const side = (which: "a" | "b", shape: Shape): Tensor | null => {
      if (!ctx.needs[which === "a" ? 0 : 1]) return null;
      const g = Tensor.empty(dy.shape, { device: dy.device }, "where.backward");
      launch(dy.device, BINARY, {
        ...broadcast(`where_backward_${which}`, dy.shape, dy.shape, dy.shape, sc),
        io: { y: g, dy, c: cond },
      });
      return sumTo(g, shape);
    };
    return [side("a", sa), side("b", sb), null];
  },
};

/** `dst += src` in place (same shape): gradient accumulation. */
export function accumulate(dst: Tensor, src: Tensor): void {
  if (!sameShape(dst.shape, src.shape)) {
    throw new RangeError(`accumulate: shapes [${dst.shape}] and [${src.shape}] differ`);
  }
  launch(dst.device, BINARY, {
    ...broadcast("accumulate_forward", dst.shape, dst.shape, dst.shape, dst.shape),
    io: { a: src, y: dst },
  });
}

/** A number becomes a scalar tensor on the other operand's device. */
export type Operand = Tensor | number;
function pair(a: Operand, b: Operand): [Tensor, Tensor] {
  const dev = a instanceof Tensor ? a.device : b instanceof Tensor ? b.device : Device.default;
  return [
    a instanceof Tensor ? a : full([], a, { device: dev }),
    b instanceof Tensor ? b : full([], b, { device: dev }),
  ];
}
const bin = (op: OpDef) => (a: Operand, b: Operand): Tensor => op.forward(pair(a, b), undefined).output;

/** Elementwise sum with broadcasting. */
export const add: (a: Operand, b: Operand) => Tensor = bin(addOp);
/** Elementwise difference with broadcasting. */
export const sub: (a: Operand, b: Operand) => Tensor = bin(subOp);
/** Elementwise product with broadcasting. */
export const mul: (a: Operand, b: Operand) => Tensor = bin(mulOp);
/** Elementwise quotient with broadcasting. */
export const div: (a: Operand, b: Operand) => Tensor = bin(divOp);
/** Elementwise power with broadcasting. */
export const pow: (a: Operand, b: Operand) => Tensor = bin(powOp);
/** Elementwise maximum with broadcasting. */
export const maximum: (a: Operand, b: Operand) => Tensor = bin(maximumOp);
/** Elementwise minimum with broadcasting. */
export const minimum: (a: Operand, b: Operand) => Tensor = bin(minimumOp);
/** 1 where a == b, else 0. */
export const eq: (a: Operand, b: Operand) => Tensor = bin(eqOp);
/** 1 where a != b, else 0. */
export const ne: (a: Operand, b: Operand) => Tensor = bin(neOp);
/** 1 where a < b, else 0. */
export const lt: (a: Operand, b: Operand) => Tensor = bin(ltOp);
/** 1 where a <= b, else 0. */
export const le: (a: Operand, b: Operand) => Tensor = bin(leOp);
/** 1 where a > b, else 0. */
export const gt: (a: Operand, b: Operand) => Tensor = bin(gtOp);
/** 1 where a >= b, else 0. */
export const ge: (a: Operand, b: Operand) => Tensor = bin(geOp);
/** Elements of `a` where `cond` is non-zero, else of `b` (all broadcast). */
export function where(cond: Tensor, a: Operand, b: Operand): Tensor {
  const [ta, tb] = pair(a, b);
  return whereOp.forward([ta, tb, cond], undefined).output;
}
