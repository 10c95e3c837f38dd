export { isGradEnabled, noGrad } from "./tape.ts";
export type { TapeNode } from "./tape.ts";
export type { VariableNode } from "./variable.ts";
export { apply, cat, constant, stack, Variable, variable, where } from "./variable.ts";
export type { Operand } from "./variable.ts";
export { Parameter } from "./parameter.ts";
