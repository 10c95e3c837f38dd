export { Optimizer } from "./optimizer.ts";
export type {
  BaseOptions,
  OptimizerStateDict,
  ParamGroup,
  ParamGroupInput,
  ParamsInput,
  ParamState,
  UpdateArgs,
} from "./optimizer.ts";
export { SGD } from "./sgd.ts";
export type { SgdOptions } from "./sgd.ts";
export { Adam, AdamBase } from "./adam.ts";
export type { AdamOptions } from "./adam.ts";
export { AdamW } from "./adamw.ts";
export { RMSprop } from "./rmsprop.ts";
export type { RmspropOptions } from "./rmsprop.ts";
export { OPTIM_PARAMS } from "./kernel.ts";
export type { OptimParamFields, Segments } from "./kernel.ts";
export { CLIP_PARAMS, clipGradNorm, clipGradValue } from "./clip.ts";
export type { ClipParamFields } from "./clip.ts";
export {
  CosineScheduler,
  CyclicLR,
  ExponentialLR,
  MultiStepLR,
  OneCycleLR,
  StepDecay,
  WarmupScheduler,
} from "./scheduler.ts";
export type { Scheduler } from "./scheduler.ts";
export { PlateauScheduler } from "./plateau.ts";
export { hostOptimizerState, loadHostOptimizerState, loadStateFile, saveStateFile } from "./state_file.ts";
export type { LoadStateFileOptions, SaveStateFileOptions } from "./state_file.ts";
