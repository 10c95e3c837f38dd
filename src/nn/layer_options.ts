/** Options shared by the layers that own parameters, and the size check their constructors run. */
import type { Device } from "../gpu/mod.ts";

/** Options shared by layers that own parameters. */
export interface LayerOptions {
  /** Device for the parameters; default `Device.default`. */
  device?: Device;
  /** Seed of the default initialisation; default the global stream (`manualSeed`). */
  seed?: number;
}

/**
 * Refuse a size that is not an integer >= 1, naming the layer, the argument and its value.
 * @throws {RangeError} `Linear: inFeatures must be an integer >= 1, got 0`.
 */
export function checkPositiveInt(layer: string, name: string, v: number): void {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${layer}: ${name} must be an integer >= 1, got ${v}`);
}
