// bf16 pack/unpack, the wire format of the data-parallel trainer. Must agree bit for bit
// with src/tensor/bf16.ts. Two bf16 per u32 word: element 2i in the low half, 2i+1 in the
// high half; an odd count pads the last high half with 0.
//
// Values travel as raw u32 bits (the f32 tensor is bound as array<u32>), so no float
// operation can flush a subnormal or rewrite a NaN payload on the way.
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/bf16.ts
  n: u32,        // f32 elements
  words: u32,    // u32 words, ceil(n / 2)
  scaled: u32,   // 1: multiply by `scale` in f32 before rounding
  scale: f32,
  segs: u32,     // pack_gather: rows of `segments`
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x_bits: array<u32>;
@group(0) @binding(2) var<storage, read_write> packed: array<u32>;
@group(0) @binding(3) var<storage, read> packed_in: array<u32>;
@group(0) @binding(4) var<storage, read_write> y_bits: array<u32>;
// pack_gather: one (frame_start, src_start) row per non-empty tensor, by frame_start; x_bits
// is then the whole buffer the tensors are views of, src_start their element offsets in it.
@group(0) @binding(5) var<storage, read> segments: array<u32>;

// #include "lib/grid.wgsl"

// NOTE: round to nearest, ties to even, on the bits: adding 0x7FFF plus the lowest kept bit
// carries into bit 16 exactly when the dropped half is above 0x8000, or equal to it with an
// odd kept part. A carry out of the largest finite value gives Inf, as rounding should.
// NaN is tested on the bits (a float compare may be folded away) and kept NaN by forcing
// the quiet bit, since rounding could carry a payload into Inf or truncate it to Inf.
fn f32_bits_to_bf16(b: u32) -> u32 {
  if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x0040u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

fn rounded(bits: u32) -> u32 {
  var b = bits;
  // NOTE: with a scale, a product in the subnormal range may be flushed to zero (WGSL allows it).
  if (p.scaled != 0u) { b = bitcast<u32>(bitcast<f32>(b) * p.scale); }
  return f32_bits_to_bf16(b);
}

fn element(i: u32) -> u32 {
  if (i >= p.n) { return 0u; }
  return rounded(x_bits[i]);
}

// Frame element i of the gathered tensors: the last row whose frame_start <= i, found by a
// branchless binary search (a select per halving, no `if` on uniform data: see rnn.wgsl).
fn gathered(i: u32) -> u32 {
  if (i >= p.n) { return 0u; }
  var lo = 0u;
  var len = p.segs;
  while (len > 1u) {
    let half = len / 2u;
    lo = select(lo, lo + half, segments[2u * (lo + half)] <= i);
    len -= half;
  }
  return rounded(x_bits[segments[2u * lo + 1u] + i - segments[2u * lo]]);
}

// One thread per word.
@compute @workgroup_size(WG)
fn pack_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = index(g, nw); if (w >= p.words) { return; }
  packed[w] = element(2u * w) | (element(2u * w + 1u) << 16u);
}

// The same words from tensors that are views of one buffer (a foreach group's arena), read in
// place: a whole frame in one dispatch, no flattening copies.
@compute @workgroup_size(WG)
fn pack_gather_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = index(g, nw); if (w >= p.words) { return; }
  packed[w] = gathered(2u * w) | (gathered(2u * w + 1u) << 16u);
}

// One thread per element: bf16 bits become the high half of the f32.
@compute @workgroup_size(WG)
fn unpack_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw); if (i >= p.n) { return; }
  let word = packed_in[i / 2u];
  y_bits[i] = ((word >> (16u * (i & 1u))) & 0xffffu) << 16u;
}
