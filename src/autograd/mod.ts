export { apply, isGradEnabled, noGrad, Variable } from "./tape.ts";
export type { Node } from "./tape.ts";
export { Parameter } from "./parameter.ts";
