/**
 * The PyTorch float64 golden cases of test/fixtures/conv_golden.json and pool_golden.json,
 * typed once for the tests that read them: the references (test/unit/reference/) and the
 * GPU ops (test/gpu/tensor/ops/).
 */
import convGolden from "../fixtures/conv_golden.json" with { type: "json" };
import poolGolden from "../fixtures/pool_golden.json" with { type: "json" };

type Pair = [number, number];
/** A golden tensor: shape and row-major values. */
export interface GoldenArray {
  shape: number[];
  data: number[];
}

/** One conv2d or convTranspose2d case: inputs, options, output and every gradient. */
export interface ConvGolden {
  name: string;
  op: "conv2d" | "convTranspose2d";
  options: { stride?: Pair; padding?: Pair; dilation?: Pair; groups?: number; outputPadding?: Pair };
  x: GoldenArray;
  w: GoldenArray;
  b?: GoldenArray;
  dy: GoldenArray;
  y: GoldenArray;
  dx: { data: number[] };
  dw: { data: number[] };
  db?: { data: number[] };
}

/** One 2-D pooling case; options as PyTorch names them (`kernelSize`, `outputSize` for adaptive). */
export interface PoolGolden {
  name: string;
  op: "maxPool2d" | "avgPool2d" | "adaptiveAvgPool2d";
  options: {
    kernelSize?: Pair;
    stride?: Pair;
    padding?: Pair;
    dilation?: Pair;
    ceilMode?: boolean;
    countIncludePad?: boolean;
    outputSize?: Pair;
  };
  x: GoldenArray;
  dy: GoldenArray;
  y: GoldenArray;
  dx: { data: number[] };
}

/** The cases of test/fixtures/conv_golden.json. */
export const CONV_GOLDEN: readonly ConvGolden[] = (convGolden as unknown as { cases: ConvGolden[] }).cases;

/** The cases of test/fixtures/pool_golden.json. */
export const POOL_GOLDEN: readonly PoolGolden[] = (poolGolden as unknown as { cases: PoolGolden[] }).cases;
