/** The PyTorch values of test/fixtures/torch_golden.json (make_torch_golden.py), NaN restored from null. */
import golden from "../../../fixtures/torch_golden.json" with { type: "json" };

export interface GoldenTensor {
  shape: number[];
  data: (number | null)[];
}

/** The values of a golden tensor, JSON's null read back as NaN. */
export const values = (t: GoldenTensor): number[] => t.data.map((v) => (v === null ? NaN : v));

export { golden };
