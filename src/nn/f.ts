/**
 * The `F` namespace: functional.ts's forms, plus the attention and rotary functions that live
 * beside their layers (attention.ts and positional.ts import layers.ts, which functional.ts's
 * importers need, so functional.ts cannot re-export them without a cycle).
 * @module
 */
export * from "./functional.ts";
export { attentionWeights, scaledDotProductAttention } from "./attention.ts";
export { rotaryEmbedding } from "./positional.ts";
