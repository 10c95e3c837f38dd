export { Tensor, toTyped } from "./tensor.ts";
export type { ArrayOf, DType, TensorOptions } from "./tensor.ts";
export * from "./shape.ts";
export { forwardBackward, run } from "./op.ts";
export type { OpContext, OpDef, OpResult } from "./op.ts";
export * from "./creation.ts";
export * from "./ops/unary.ts";
export * from "./ops/binary.ts";
export * from "./ops/reduce.ts";
