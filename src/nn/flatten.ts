/** Flatten as a layer (PyTorch's nn.Flatten): merges a range of dims. */
import type { Variable } from "../autograd/mod.ts";
import { Module } from "./module.ts";

/** Merge dims `startDim..endDim` (PyTorch's nn.Flatten: default from dim 1). */
export class Flatten extends Module {
  /** Flatten dims startDim..endDim, both inclusive. */
  constructor(
    /** First dim merged; default 1, keeping the batch dim. */
    readonly startDim = 1,
    /** Last dim merged, inclusive; negative counts from the end. Default −1. */
    readonly endDim = -1,
  ) {
    super();
  }
  /** x with dims startDim..endDim merged into one ([N, C, H, W] to [N, C·H·W] by default). */
  forward(x: Variable): Variable {
    return x.flatten(this.startDim, this.endDim);
  }
}
