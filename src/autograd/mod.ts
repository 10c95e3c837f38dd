export { apply, isGradEnabled, noGrad } from "./tape.ts";
export type { Node } from "./tape.ts";
export { cat, constant, stack, Variable, variable, where } from "./variable.ts";
export type { Operand } from "./variable.ts";
export { Parameter } from "./parameter.ts";
