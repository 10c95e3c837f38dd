// Counter-based random numbers (included with `// #include "lib/pcg.wgsl"`): a PCG hash of
// seed and counter, so a seed gives the same numbers on every device, in any order, and in
// test/reference/random.ts. Used by fill (rand/randn), dropout and attention dropout, which
// must agree: `rand(shape, { seed })` equals dropout's uniforms for the same seed.

// PCG-RXS-M-XS 32-bit output permutation (O'Neill), used as a hash.
fn pcg(v: u32) -> u32 {
  let state = v * 747796405u + 2891336453u;
  let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
  return (word >> 22u) ^ word;
}

// Uniform in [0, 1) with 24 random bits (exact in f32).
fn unit(seed: u32, i: u32) -> f32 { return f32(pcg(pcg(seed) + i) >> 8u) * (1.0 / 16777216.0); }
