/**
 * Float64 reference of embedding_bag (PyTorch semantics): bags of rows of w [V, D] by
 * offsets, reduced by sum, mean or max, padding row left out, empty bags zero, and the
 * gradient of w for an output gradient dy. Plain loops; never imports src/.
 */
export function embeddingBagRef(
  w: ArrayLike<number>,
  ws: [number, number],
  index: ArrayLike<number>,
  offsets: ArrayLike<number>,
  mode: "sum" | "mean" | "max",
  pad: number,
  dy: ArrayLike<number>,
): { y: Float64Array; dw: Float64Array } {
  const [, D] = ws, B = offsets.length;
  const y = new Float64Array(B * D), dw = new Float64Array(w.length);
  for (let b = 0; b < B; b++) {
    const rows: number[] = [];
    for (let t = offsets[b]; t < (b + 1 < B ? offsets[b + 1] : index.length); t++) {
      if (index[t] !== pad) rows.push(index[t]);
    }
    for (let e = 0; e < D; e++) {
      const g = dy[b * D + e];
      if (rows.length === 0) continue;
      if (mode === "max") {
        let at = rows[0];
        for (const s of rows) if (w[s * D + e] > w[at * D + e]) at = s;
        y[b * D + e] = w[at * D + e];
        dw[at * D + e] += g;
      } else {
        const scale = mode === "mean" ? 1 / rows.length : 1;
        for (const s of rows) {
          y[b * D + e] += w[s * D + e] * scale;
          dw[s * D + e] += g * scale;
        }
      }
    }
  }
  return { y, dw };
}
