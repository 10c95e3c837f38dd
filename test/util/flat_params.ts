/** A trained state's parameters as one vector, for comparing runs value by value. */
import type { TrainedState } from "../../src/index.ts";

/** Every parameter of `s`, concatenated in `named_parameters` order. */
export function flatParams(s: TrainedState): Float32Array {
  const parts = [...s.params.values()].map((p) => p.data);
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
