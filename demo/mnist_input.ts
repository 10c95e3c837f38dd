/**
 * Turn a drawing into an MNIST-like 28×28 input, the way the dataset itself was made
 * (LeCun et al.): the ink's bounding box scaled to fit 20×20 keeping its aspect ratio
 * (area-averaged, so strokes anti-alias), then placed in 28×28 with its centre of mass
 * at the centre.
 */

/** MNIST's side, and the box the digit is scaled into. */
export const SIDE = 28;
const BOX = 20;
/** Grey levels below this count as background when finding the ink's bounding box. */
const INK = 0.05;

/**
 * @param gray Row-major grey levels in [0, 1] (1 = ink) of a `width` × `height` drawing.
 * @returns 784 values in [0, 1], or null when nothing is drawn.
 * @throws {RangeError} When `gray` does not hold width × height values.
 */
export function mnistInput(gray: Float32Array, width: number, height: number): Float32Array | null {
  if (gray.length !== width * height) {
    throw new RangeError(`mnistInput: ${gray.length} values do not fill ${width}×${height}`);
  }
  let x0 = width, y0 = height, x1 = -1, y1 = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (gray[y * width + x] > INK) {
        x0 = Math.min(x0, x);
        x1 = Math.max(x1, x);
        y0 = Math.min(y0, y);
        y1 = Math.max(y1, y);
      }
    }
  }
  if (x1 < 0) return null;
  const bw = x1 - x0 + 1, bh = y1 - y0 + 1;
  const scale = BOX / Math.max(bw, bh);
  const tw = Math.max(1, Math.round(bw * scale)), th = Math.max(1, Math.round(bh * scale));
  // Area average: each target pixel is the mean of the source rectangle it covers.
  const small = new Float32Array(tw * th);
  for (let ty = 0; ty < th; ty++) {
    const sy0 = y0 + (ty * bh) / th, sy1 = y0 + ((ty + 1) * bh) / th;
    for (let tx = 0; tx < tw; tx++) {
      const sx0 = x0 + (tx * bw) / tw, sx1 = x0 + ((tx + 1) * bw) / tw;
      let sum = 0, area = 0;
      for (let y = Math.floor(sy0); y < Math.ceil(sy1); y++) {
        const wy = Math.min(y + 1, sy1) - Math.max(y, sy0);
        for (let x = Math.floor(sx0); x < Math.ceil(sx1); x++) {
          const wx = Math.min(x + 1, sx1) - Math.max(x, sx0);
          sum += gray[y * width + x] * wx * wy;
          area += wx * wy;
        }
      }
      small[ty * tw + tx] = area > 0 ? sum / area : 0;
    }
  }
  let mass = 0, mx = 0, my = 0;
  for (let y = 0; y < th; y++) {
    for (let x = 0; x < tw; x++) {
      const v = small[y * tw + x];
      mass += v;
      mx += v * (x + 0.5);
      my += v * (y + 0.5);
    }
  }
  const cx = mass > 0 ? mx / mass : tw / 2, cy = mass > 0 ? my / mass : th / 2;
  const clamp = (v: number, hi: number) => Math.max(0, Math.min(hi, v));
  const ox = clamp(Math.round(SIDE / 2 - cx), SIDE - tw), oy = clamp(Math.round(SIDE / 2 - cy), SIDE - th);
  const out = new Float32Array(SIDE * SIDE);
  for (let y = 0; y < th; y++) {
    for (let x = 0; x < tw; x++) out[(y + oy) * SIDE + x + ox] = Math.min(1, small[y * tw + x]);
  }
  return out;
}
