export { Module } from "./module.ts";
export type { LoadOptions, LoadResult } from "./module.ts";
export { Flow, FlowBuilder, Sequential } from "./container.ts";
export * as init from "./init.ts";
export { decodeSafetensors, encodeSafetensors, MAX_HEADER_BYTES, toBf16Bits, toFloat32 } from "../io/mod.ts";
export type { DecodedSafetensors, SafetensorsDType, SafeTensor } from "../io/mod.ts";
export { loadCheckpointFile, saveCheckpointFile } from "./checkpoint.ts";
export type { LoadCheckpointOptions, LoadCheckpointResult, SaveCheckpointOptions } from "./checkpoint.ts";
export { keyedState, loadSafetensors, saveSafetensors } from "./state.ts";
export type { KeyStyle, LoadFileOptions, SaveOptions } from "./state.ts";
export { checkStateDict, tensorEntry } from "./state_check.ts";
export type { CheckOptions, StateEntry } from "./state_check.ts";
export { Linear } from "./linear.ts";
export type { LayerOptions } from "./layer_options.ts";
export { Conv1d, Conv2d, ConvTranspose2d } from "./conv.ts";
export type { Conv1dLayerOptions, Conv2dLayerOptions, ConvTranspose2dLayerOptions } from "./conv.ts";
export { AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d } from "./pool.ts";
export { BatchNorm1d, BatchNorm2d, BatchNormBase } from "./batch_norm.ts";
export type { BatchNormLayerOptions } from "./batch_norm.ts";
export { LayerNorm } from "./layer_norm.ts";
export { GroupNorm } from "./group_norm.ts";
export { Dropout, Dropout2d } from "./dropout.ts";
export { Flatten } from "./flatten.ts";
export { Upsample } from "./upsample.ts";
export { Embedding, EmbeddingBag } from "./embedding.ts";
export type { EmbeddingBagLayerOptions } from "./embedding.ts";
export {
  ELU,
  GELU,
  Hardsigmoid,
  Hardswish,
  Identity,
  LeakyReLU,
  LogSigmoid,
  LogSoftmax,
  Mish,
  PReLU,
  ReLU,
  SELU,
  Sigmoid,
  SiLU,
  Softmax,
  Softplus,
  Tanh,
} from "./activation.ts";
export { attentionWeights, MultiheadAttention, scaledDotProductAttention } from "./attention.ts";
export type { AttentionCallOptions, MultiheadAttentionOptions } from "./attention.ts";
export { RMSNorm } from "./rms_norm.ts";
export type { RMSNormOptions } from "./rms_norm.ts";
export { PositionalEmbedding, rotaryEmbedding } from "./positional.ts";
export { GRU, LSTM, RnnBase } from "./rnn.ts";
export {
  TransformerDecoder,
  TransformerDecoderLayer,
  TransformerEncoder,
  TransformerEncoderLayer,
  TransformerLayerBase,
} from "./transformer.ts";
export type { DecoderMasks, SelfAttentionMasks, TransformerLayerOptions } from "./transformer.ts";
export type { LstmState, RnnOptions } from "./rnn.ts";
export { CellBase, GRUCell, LSTMCell } from "./rnn_cell.ts";
export type { RnnCellOptions } from "./rnn_cell.ts";
export * as F from "./f.ts";
export {
  bceLoss,
  bceWithLogitsLoss,
  crossEntropy,
  klDiv,
  l1Loss,
  logSoftmax,
  mseLoss,
  nllLoss,
  sigmoidFocalLoss,
  smoothL1Loss,
  softmax,
} from "./functional.ts";
export type { InterpolateMode, InterpolateOptions } from "./functional.ts";
