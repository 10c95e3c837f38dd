/**
 * The `F` namespace: functional.ts's forms, plus the attention and rotary functions that live
 * beside their layers (attention.ts imports linear.ts, which imports functional.ts through
 * activation.ts and dropout.ts, so functional.ts cannot re-export it without a cycle).
 * @module
 */
export * from "./functional.ts";
export { attentionWeights, scaledDotProductAttention } from "./attention.ts";
export { rotaryEmbedding } from "./positional.ts";
