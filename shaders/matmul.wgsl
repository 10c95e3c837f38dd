// Batched matrix product C = op(A)·op(B), plus a bias row (and optionally ReLU, ACT) in the
// linear_* entries, or masked by a ReLU's output in the *_mask entries, where op
// is an optional transpose of the last two dims, read in place (no transposed copy is made).
//   A: [batch.., M, K], or [batch.., K, M] when TA     B: [batch.., K, N], or [batch.., N, K] when TB
//   C: [batch, M, N] (batch dims already broadcast)    bias: [N]
// The grid's z is the output matrix; its A and B offsets come from up to three merged batch
// dims with stride 0 along broadcast dims (planned in src/tensor/ops/matmul_plan.ts).
//
// Two kernels, chosen by the host from the device's tiling (src/gpu/tuning.ts):
// - register (matmul_forward[_vec4], linear_forward[_vec4]), for CPU adapters (lavapipe,
//   SwiftShader): each thread keeps a TM×TN block of C (up to 32×32) in registers and never
//   touches workgroup memory. There, every storage load costs a loop over the SIMD lanes, so
//   speed is FMAs per load instruction: TM·TN/(TM+TN) (bench/matmul_sweep.ts).
// - shared (*_shared), for hardware GPUs: BK-deep tiles of A and B staged in workgroup memory.
//
// Register blocks are mat4x4f values: column r of block (i, j) is C[row0 + 4i + r, col0 + 4j ..
// col0 + 4j + 3]. Row groups are written out (q0..q7) because the compiler unrolls only small
// loops: an accumulator indexed by a loop counter that is not unrolled would live in memory.
// Out-of-range rows and columns are clamped on load (a valid address whose value is thrown
// away) and skipped on store; k past K reads as 0 (both operands, so an Inf in A or B cannot
// turn into NaN through 0·Inf).
// NOTE: accumulation is f32 fma in k order; expect relative error ~ sqrt(K)·1e-7.
//
// Over 400 lines on purpose: the two kernels share the batch addressing, the clamped loads
// and the block stores, and WGSL has no generics, so the 8 unrolled row groups are spelled
// out; a split would copy those helpers into a second file.

override TA: bool = false;
override TB: bool = false;
// The operand's contiguous dim (K for A, N for B; M for A when TA, K for B when TB) is a
// multiple of 4, so the register kernel may read vec4s along it.
override VA: bool = false;
override VB: bool = false;
// Rows and columns of C per thread: multiples of 4, at most 32 (register) or 8 (shared).
override TM: u32 = 32u;
override TN: u32 = 32u;
// Threads per workgroup along N (x) and M (y).
override WGX: u32 = 8u;
override WGY: u32 = 1u;
// K-slice staged in workgroup memory per step (shared kernel only).
override BK: u32 = 16u;

// Floats in each workgroup tile of the shared kernel (BK·WGY·TM and BK·WGX·TN): 2 × 8 KiB
// stays inside WebGPU's guaranteed 16 KiB of workgroup storage.
const TILE = 2048u;

struct Params {  // mirrored in src/tensor/ops/matmul_plan.ts
  m: u32, n: u32, k: u32,
  d1: u32, d2: u32,
  sa0: u32, sa1: u32, sa2: u32,
  sb0: u32, sb1: u32, sb2: u32,
  zo: u32,
  seed: u32, drop: f32, drop_scale: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4f>;
@group(0) @binding(2) var<storage, read> b: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> c4: array<vec4f>;
@group(0) @binding(5) var<storage, read> bias: array<vec4f>;
// The epilogue's side input, [batch, M, N] like C: what the activation saved for a *_mask entry
// (DACT), the residual added in the store with RES. Every entry binds it (the stores are
// shared), an operand when it is not read.
@group(0) @binding(6) var<storage, read> mask: array<f32>;

// Row sums of op(A), [batch, M], written by the *_rowsum entries: Σ_k op(A)[row, k], which for
// a Linear's weight gradient dW = dyᵀ·x is the bias gradient Σ_batch dy (no launch of its own).
@group(0) @binding(7) var<storage, read_write> rowsum: array<f32>;

// #include "lib/act.wgsl"
// #include "lib/pcg.wgsl"

// Epilogue of the linear entries: the activation kind of lib/act.wgsl applied in the store
// (1 relu, 2 gelu, ...; 0 none), so Linear + activation is one dispatch. With PRE the store
// also writes the pre-activation (what gelu's and silu's backward read) at element p.zo of C's
// buffer, after the activated values.
override ACT: u32 = 0u;
override PRE: bool = false;
// The activation whose backward the *_mask entries apply (lib/act.wgsl kinds).
override DACT: u32 = 1u;
// Dropout in the store (after the activation): element i of C kept when unit(p.seed, i) >=
// p.drop and scaled by p.drop_scale, shaders/dropout.wgsl's mask for the same seed.
override DROP: bool = false;
// Add the residual mask[i] in the store, last: C = res + dropout(act(A·B + bias)).
override RES: bool = false;
// Sum op(A)'s rows along k while accumulating (the *_rowsum entries).
override ROWSUM: bool = false;

var<workgroup> tileA: array<f32, TILE>;
var<workgroup> tileB: array<f32, TILE>;

// The params, read once: uniform loads inside loops are per-lane gathers on CPU adapters.
var<private> d: Params;

// Element offsets of output matrix z into A and B.
fn batchOffsets(z: u32) -> vec2u {
  let i2 = z % d.d2;
  let r = z / d.d2;
  let i1 = r % d.d1;
  let i0 = r / d.d1;
  return vec2u(i0 * d.sa0 + i1 * d.sa1 + i2 * d.sa2, i0 * d.sb0 + i1 * d.sb1 + i2 * d.sb2);
}

// op(A)[row, kk] and op(B)[kk, col] of the matrices at element offsets oa, ob; 0 past K.
// Rows and columns must be in range; kk is clamped so the address stays valid.
fn elemA(oa: u32, row: u32, kk: u32) -> f32 {
  let kc = min(kk, d.k - 1u);
  let i = oa + select(row * d.k + kc, kc * d.m + row, TA);
  return select(0.0, a[i / 4u][i % 4u], kk < d.k);
}
fn elemB(ob: u32, kk: u32, col: u32) -> f32 {
  let kc = min(kk, d.k - 1u);
  let i = ob + select(kc * d.n + col, col * d.k + kc, TB);
  return select(0.0, b[i / 4u][i % 4u], kk < d.k);
}

// ---- register kernel --------------------------------------------------------------------

// One row group of a thread's block: quad[j] covers C rows 4i..4i+3 × columns 4j..4j+3.
alias Quad = array<mat4x4f, 8>;
// A thread's TM×TN block: row groups q0..q(TM/4 - 1). Separate variables, not one struct:
// naga 29 cannot pass a pointer to a struct member to a function.
var<private> q0: Quad;
var<private> q1: Quad;
var<private> q2: Quad;
var<private> q3: Quad;
var<private> q4: Quad;
var<private> q5: Quad;
var<private> q6: Quad;
var<private> q7: Quad;
// With ROWSUM: Σ_k op(A)[row0 + 4i + r, k] in component r of rs[i], summed in k order.
var<private> rs: array<vec4f, 8>;

// acc + bk·ak: column r gains Σ_s bk[s]·ak[r][s] (ak's columns are rows of A along k, bk's
// columns are rows of B along k).
fn mma(acc: mat4x4f, bk: mat4x4f, ak: mat4x4f) -> mat4x4f {
  return mat4x4f(
    fma(bk[3], vec4f(ak[0].w), fma(bk[2], vec4f(ak[0].z), fma(bk[1], vec4f(ak[0].y), fma(bk[0], vec4f(ak[0].x), acc[0])))),
    fma(bk[3], vec4f(ak[1].w), fma(bk[2], vec4f(ak[1].z), fma(bk[1], vec4f(ak[1].y), fma(bk[0], vec4f(ak[1].x), acc[1])))),
    fma(bk[3], vec4f(ak[2].w), fma(bk[2], vec4f(ak[2].z), fma(bk[1], vec4f(ak[2].y), fma(bk[0], vec4f(ak[2].x), acc[2])))),
    fma(bk[3], vec4f(ak[3].w), fma(bk[2], vec4f(ak[3].z), fma(bk[1], vec4f(ak[3].y), fma(bk[0], vec4f(ak[3].x), acc[3])))),
  );
}

// Columns t = 0..3: op(A)[row + t, 4q .. 4q+3].
fn loadA(oa: u32, q: u32, row: u32) -> mat4x4f {
  let last = d.m - 1u;
  let r0 = min(row, last);
  let r1 = min(row + 1u, last);
  let r2 = min(row + 2u, last);
  let r3 = min(row + 3u, last);
  if (VA && TA) {
    // A is [K, M]: vec4s run along M. Read 4 k-rows of 4 columns of op(A), transpose.
    let m4 = d.m / 4u;
    let at = oa / 4u + r0 / 4u;
    let kk = 4u * q;
    let z = vec4f(0.0);
    return transpose(mat4x4f(
      select(z, a[at + min(kk, d.k - 1u) * m4], kk < d.k),
      select(z, a[at + min(kk + 1u, d.k - 1u) * m4], kk + 1u < d.k),
      select(z, a[at + min(kk + 2u, d.k - 1u) * m4], kk + 2u < d.k),
      select(z, a[at + min(kk + 3u, d.k - 1u) * m4], kk + 3u < d.k),
    ));
  }
  if (VA) {
    // A is [M, K] with K % 4 == 0: one vec4 per row.
    let k4 = d.k / 4u;
    let at = oa / 4u + q;
    return mat4x4f(a[at + r0 * k4], a[at + r1 * k4], a[at + r2 * k4], a[at + r3 * k4]);
  }
  let kk = 4u * q;
  return mat4x4f(
    vec4f(elemA(oa, r0, kk), elemA(oa, r0, kk + 1u), elemA(oa, r0, kk + 2u), elemA(oa, r0, kk + 3u)),
    vec4f(elemA(oa, r1, kk), elemA(oa, r1, kk + 1u), elemA(oa, r1, kk + 2u), elemA(oa, r1, kk + 3u)),
    vec4f(elemA(oa, r2, kk), elemA(oa, r2, kk + 1u), elemA(oa, r2, kk + 2u), elemA(oa, r2, kk + 3u)),
    vec4f(elemA(oa, r3, kk), elemA(oa, r3, kk + 1u), elemA(oa, r3, kk + 2u), elemA(oa, r3, kk + 3u)),
  );
}

// Columns s = 0..3: op(B)[4q + s, col .. col+3].
fn loadB(ob: u32, q: u32, col: u32) -> mat4x4f {
  let last = d.n - 1u;
  let kk = 4u * q;
  if (VB && TB) {
    // B is [N, K] with K % 4 == 0: one vec4 along k per column of op(B), transposed.
    let k4 = d.k / 4u;
    let bt = ob / 4u + q;
    return transpose(mat4x4f(
      b[bt + min(col, last) * k4],
      b[bt + min(col + 1u, last) * k4],
      b[bt + min(col + 2u, last) * k4],
      b[bt + min(col + 3u, last) * k4],
    ));
  }
  if (VB) {
    // B is [K, N] with N % 4 == 0: one vec4 per k-row.
    let n4 = d.n / 4u;
    let bt = ob / 4u + min(col, last) / 4u;
    let z = vec4f(0.0);
    return mat4x4f(
      select(z, b[bt + min(kk, d.k - 1u) * n4], kk < d.k),
      select(z, b[bt + min(kk + 1u, d.k - 1u) * n4], kk + 1u < d.k),
      select(z, b[bt + min(kk + 2u, d.k - 1u) * n4], kk + 2u < d.k),
      select(z, b[bt + min(kk + 3u, d.k - 1u) * n4], kk + 3u < d.k),
    );
  }
  let c0 = min(col, last);
  let c1 = min(col + 1u, last);
  let c2 = min(col + 2u, last);
  let c3 = min(col + 3u, last);
  return mat4x4f(
    vec4f(elemB(ob, kk, c0), elemB(ob, kk, c1), elemB(ob, kk, c2), elemB(ob, kk, c3)),
    vec4f(elemB(ob, kk + 1u, c0), elemB(ob, kk + 1u, c1), elemB(ob, kk + 1u, c2), elemB(ob, kk + 1u, c3)),
    vec4f(elemB(ob, kk + 2u, c0), elemB(ob, kk + 2u, c1), elemB(ob, kk + 2u, c2), elemB(ob, kk + 2u, c3)),
    vec4f(elemB(ob, kk + 3u, c0), elemB(ob, kk + 3u, c1), elemB(ob, kk + 3u, c2), elemB(ob, kk + 3u, c3)),
  );
}

// One row group's update for one k-step of 4: quad[j] += bq[j]·ak. Written out: a loop here
// is too large for the compiler to unroll, and the accumulators would go to memory.
fn accumulate(quad: ptr<private, Quad>, bq: ptr<function, Quad>, ak: mat4x4f) {
  (*quad)[0] = mma((*quad)[0], (*bq)[0], ak);
  if (TN > 4u) { (*quad)[1] = mma((*quad)[1], (*bq)[1], ak); }
  if (TN > 8u) { (*quad)[2] = mma((*quad)[2], (*bq)[2], ak); }
  if (TN > 12u) { (*quad)[3] = mma((*quad)[3], (*bq)[3], ak); }
  if (TN > 16u) { (*quad)[4] = mma((*quad)[4], (*bq)[4], ak); }
  if (TN > 20u) { (*quad)[5] = mma((*quad)[5], (*bq)[5], ak); }
  if (TN > 24u) { (*quad)[6] = mma((*quad)[6], (*bq)[6], ak); }
  if (TN > 28u) { (*quad)[7] = mma((*quad)[7], (*bq)[7], ak); }
}

// One row group's k-step: the products, and with ROWSUM its rows' sums (k in order, as a
// serial sum over k would add them).
fn rowGroup(quad: ptr<private, Quad>, bq: ptr<function, Quad>, ak: mat4x4f, i: u32) {
  accumulate(quad, bq, ak);
  if (ROWSUM) {
    let t = transpose(ak);
    rs[i] = (((rs[i] + t[0]) + t[1]) + t[2]) + t[3];
  }
}

// Accumulate the TM×TN block of output matrix z at (row0, col0) into q0..q7.
fn registerBlock(z: u32, row0: u32, col0: u32) {
  let o = batchOffsets(z);
  let steps = (d.k + 3u) / 4u;
  for (var q = 0u; q < steps; q++) {
    var bq: Quad;
    bq[0] = loadB(o.y, q, col0);
    if (TN > 4u) { bq[1] = loadB(o.y, q, col0 + 4u); }
    if (TN > 8u) { bq[2] = loadB(o.y, q, col0 + 8u); }
    if (TN > 12u) { bq[3] = loadB(o.y, q, col0 + 12u); }
    if (TN > 16u) { bq[4] = loadB(o.y, q, col0 + 16u); }
    if (TN > 20u) { bq[5] = loadB(o.y, q, col0 + 20u); }
    if (TN > 24u) { bq[6] = loadB(o.y, q, col0 + 24u); }
    if (TN > 28u) { bq[7] = loadB(o.y, q, col0 + 28u); }
    rowGroup(&q0, &bq, loadA(o.x, q, row0), 0u);
    if (TM > 4u) { rowGroup(&q1, &bq, loadA(o.x, q, row0 + 4u), 1u); }
    if (TM > 8u) { rowGroup(&q2, &bq, loadA(o.x, q, row0 + 8u), 2u); }
    if (TM > 12u) { rowGroup(&q3, &bq, loadA(o.x, q, row0 + 12u), 3u); }
    if (TM > 16u) { rowGroup(&q4, &bq, loadA(o.x, q, row0 + 16u), 4u); }
    if (TM > 20u) { rowGroup(&q5, &bq, loadA(o.x, q, row0 + 20u), 5u); }
    if (TM > 24u) { rowGroup(&q6, &bq, loadA(o.x, q, row0 + 24u), 6u); }
    if (TM > 28u) { rowGroup(&q7, &bq, loadA(o.x, q, row0 + 28u), 7u); }
  }
}

// bias[col .. col+3] (linear entries only), clamped at the last column.
fn biasAt(col: u32) -> vec4f {
  if (d.n % 4u == 0u) { return bias[min(col, d.n - 1u) / 4u]; }
  var v: vec4f;
  for (var t = 0u; t < 4u; t++) {
    let i = min(col + t, d.n - 1u);
    v[t] = bias[i / 4u][i % 4u];
  }
  return v;
}

// The bias of each column group of a thread's block.
fn biasQuad(col0: u32) -> array<vec4f, 8> {
  var bq: array<vec4f, 8>;
  bq[0] = biasAt(col0);
  if (TN > 4u) { bq[1] = biasAt(col0 + 4u); }
  if (TN > 8u) { bq[2] = biasAt(col0 + 8u); }
  if (TN > 12u) { bq[3] = biasAt(col0 + 12u); }
  if (TN > 16u) { bq[4] = biasAt(col0 + 16u); }
  if (TN > 20u) { bq[5] = biasAt(col0 + 20u); }
  if (TN > 24u) { bq[6] = biasAt(col0 + 24u); }
  if (TN > 28u) { bq[7] = biasAt(col0 + 28u); }
  return bq;
}

// The ACT epilogue (lib/act.wgsl's act_forward, unary.wgsl's rule for the same kind).
fn act(v: vec4f) -> vec4f {
  if (ACT == 0u) { return v; }
  return vec4f(act_forward(ACT, v.x), act_forward(ACT, v.y), act_forward(ACT, v.z), act_forward(ACT, v.w));
}

// Relu's backward folded into the product (the *_mask entries with DACT = 1; maskBlock runs
// for no other): C = relu_gradient(mask, C), mask the relu's saved output, so the gradient
// through it costs no launch of its own. The other activations' backward runs in the late
// pass. Rows and columns past the edge read a clamped element; the store drops them.
fn maskRow(base: u32, row: u32, col: u32, v: vec4f) -> vec4f {
  let o = base + min(row, d.m - 1u) * d.n;
  let last = d.n - 1u;
  let y = vec4f(mask[o + min(col, last)], mask[o + min(col + 1u, last)], mask[o + min(col + 2u, last)],
    mask[o + min(col + 3u, last)]);
  return vec4f(relu_gradient(y.x, v.x), relu_gradient(y.y, v.y), relu_gradient(y.z, v.z), relu_gradient(y.w, v.w));
}

fn maskMat(m: mat4x4f, base: u32, row: u32, col: u32) -> mat4x4f {
  return mat4x4f(maskRow(base, row, col, m[0]), maskRow(base, row + 1u, col, m[1]),
    maskRow(base, row + 2u, col, m[2]), maskRow(base, row + 3u, col, m[3]));
}

fn maskQuad(quad: ptr<private, Quad>, base: u32, row: u32, col0: u32) {
  (*quad)[0] = maskMat((*quad)[0], base, row, col0);
  if (TN > 4u) { (*quad)[1] = maskMat((*quad)[1], base, row, col0 + 4u); }
  if (TN > 8u) { (*quad)[2] = maskMat((*quad)[2], base, row, col0 + 8u); }
  if (TN > 12u) { (*quad)[3] = maskMat((*quad)[3], base, row, col0 + 12u); }
  if (TN > 16u) { (*quad)[4] = maskMat((*quad)[4], base, row, col0 + 16u); }
  if (TN > 20u) { (*quad)[5] = maskMat((*quad)[5], base, row, col0 + 20u); }
  if (TN > 24u) { (*quad)[6] = maskMat((*quad)[6], base, row, col0 + 24u); }
  if (TN > 28u) { (*quad)[7] = maskMat((*quad)[7], base, row, col0 + 28u); }
}

fn maskBlock(z: u32, row0: u32, col0: u32) {
  if (DACT != 1u) { return; }  // the other activations' backward runs in the late pass
  let base = z * d.m * d.n;
  maskQuad(&q0, base, row0, col0);
  if (TM > 4u) { maskQuad(&q1, base, row0 + 4u, col0); }
  if (TM > 8u) { maskQuad(&q2, base, row0 + 8u, col0); }
  if (TM > 12u) { maskQuad(&q3, base, row0 + 12u, col0); }
  if (TM > 16u) { maskQuad(&q4, base, row0 + 16u, col0); }
  if (TM > 20u) { maskQuad(&q5, base, row0 + 20u, col0); }
  if (TM > 24u) { maskQuad(&q6, base, row0 + 24u, col0); }
  if (TM > 28u) { maskQuad(&q7, base, row0 + 28u, col0); }
}

// Epilogue steps other than relu cost many instructions (GELU's erfc and exp, dropout's hash):
// inlined at each of a 32×32 block's 256 stores, lavapipe compiled the GELU linear entry
// 6.5x slower than the plain one (146 s vs 22 s under load). The register entries therefore
// store the product and apply them in a late pass over the thread's block, a loop the
// compiler keeps rolled (its trip count is data dependent): one copy of the code.
fn isLate() -> bool { return ACT > 1u || DROP || RES; }

// Elements e..e+3 of C after the epilogue: act, then dropout's mask, then the residual; each
// step the f32 operation of the op it replaces (unary, dropout, add), in that order.
fn epilogue(v: vec4f, e: u32) -> vec4f {
  var y = act(v);
  if (DROP) {
    let u = vec4f(unit(d.seed, e), unit(d.seed, e + 1u), unit(d.seed, e + 2u), unit(d.seed, e + 3u));
    y = y * select(vec4f(0.0), vec4f(d.drop_scale), u >= vec4f(d.drop));
  }
  if (RES) {
    let last = arrayLength(&mask) - 1u;
    y = vec4f(mask[min(e, last)], mask[min(e + 1u, last)], mask[min(e + 2u, last)], mask[min(e + 3u, last)]) + y;
  }
  return y;
}

// What the register entries' stores apply: the epilogue when it is not late (none or relu),
// else nothing. Written without epilogue(): inlined at each of a block's stores, the dead
// code of the late steps (act_forward's switch, dropout's hash, the residual's reads) made
// lavapipe compile linear_forward at TM=16 TN=4 in 2.2 s against 0.3 s with a bare store.
fn early(v: vec4f) -> vec4f {
  if (ACT != 1u || isLate()) { return v; }
  return vec4f(relu_value(v.x), relu_value(v.y), relu_value(v.z), relu_value(v.w));
}

// v after the early epilogue at vec4 i of C, and v itself past p.zo with PRE.
fn store4(i: u32, v: vec4f) {
  c4[i] = early(v);
  if (PRE) { c4[d.zo / 4u + i] = v; }
}

// Rows row..row+3 (m's columns, plus bias) at vec4 column c4i, with vec4 stores (N % 4 == 0).
fn storeMat4(base: u32, row: u32, c4i: u32, m: mat4x4f, bias: vec4f) {
  let n4 = d.n / 4u;
  if (c4i >= n4) { return; }
  if (row < d.m) { store4(base + row * n4 + c4i, m[0] + bias); }
  if (row + 1u < d.m) { store4(base + (row + 1u) * n4 + c4i, m[1] + bias); }
  if (row + 2u < d.m) { store4(base + (row + 2u) * n4 + c4i, m[2] + bias); }
  if (row + 3u < d.m) { store4(base + (row + 3u) * n4 + c4i, m[3] + bias); }
}

// One row of 4 values at (row, col) with element stores (any N). The trip count is data
// dependent on purpose: the compiler keeps one store in a loop instead of unrolling four
// guarded ones, which makes the 32×32 kernel compile several times faster.
fn storeRow1(base: u32, row: u32, col: u32, v: vec4f) {
  if (row >= d.m) { return; }
  let count = min(4u, d.n - min(col, d.n));
  let y = early(v);
  for (var t = 0u; t < count; t++) {
    let i = base + row * d.n + col + t;
    c[i] = y[t];
    if (PRE) { c[d.zo + i] = v[t]; }
  }
}

fn storeMat1(base: u32, row: u32, col: u32, m: mat4x4f, bias: vec4f) {
  storeRow1(base, row, col, m[0] + bias);
  storeRow1(base, row + 1u, col, m[1] + bias);
  storeRow1(base, row + 2u, col, m[2] + bias);
  storeRow1(base, row + 3u, col, m[3] + bias);
}

// Store one row group (written out, as in accumulate).
fn storeQuad4(quad: ptr<private, Quad>, base: u32, row: u32, col0: u32, bq: ptr<function, array<vec4f, 8>>) {
  let c4i = col0 / 4u;
  storeMat4(base, row, c4i, (*quad)[0], (*bq)[0]);
  if (TN > 4u) { storeMat4(base, row, c4i + 1u, (*quad)[1], (*bq)[1]); }
  if (TN > 8u) { storeMat4(base, row, c4i + 2u, (*quad)[2], (*bq)[2]); }
  if (TN > 12u) { storeMat4(base, row, c4i + 3u, (*quad)[3], (*bq)[3]); }
  if (TN > 16u) { storeMat4(base, row, c4i + 4u, (*quad)[4], (*bq)[4]); }
  if (TN > 20u) { storeMat4(base, row, c4i + 5u, (*quad)[5], (*bq)[5]); }
  if (TN > 24u) { storeMat4(base, row, c4i + 6u, (*quad)[6], (*bq)[6]); }
  if (TN > 28u) { storeMat4(base, row, c4i + 7u, (*quad)[7], (*bq)[7]); }
}

fn storeQuad1(quad: ptr<private, Quad>, base: u32, row: u32, col0: u32, bq: ptr<function, array<vec4f, 8>>) {
  storeMat1(base, row, col0, (*quad)[0], (*bq)[0]);
  if (TN > 4u) { storeMat1(base, row, col0 + 4u, (*quad)[1], (*bq)[1]); }
  if (TN > 8u) { storeMat1(base, row, col0 + 8u, (*quad)[2], (*bq)[2]); }
  if (TN > 12u) { storeMat1(base, row, col0 + 12u, (*quad)[3], (*bq)[3]); }
  if (TN > 16u) { storeMat1(base, row, col0 + 16u, (*quad)[4], (*bq)[4]); }
  if (TN > 20u) { storeMat1(base, row, col0 + 20u, (*quad)[5], (*bq)[5]); }
  if (TN > 24u) { storeMat1(base, row, col0 + 24u, (*quad)[6], (*bq)[6]); }
  if (TN > 28u) { storeMat1(base, row, col0 + 28u, (*quad)[7], (*bq)[7]); }
}

fn storeBlock4(z: u32, row0: u32, col0: u32, bq: ptr<function, array<vec4f, 8>>) {
  let base = z * d.m * (d.n / 4u);
  storeQuad4(&q0, base, row0, col0, bq);
  if (TM > 4u) { storeQuad4(&q1, base, row0 + 4u, col0, bq); }
  if (TM > 8u) { storeQuad4(&q2, base, row0 + 8u, col0, bq); }
  if (TM > 12u) { storeQuad4(&q3, base, row0 + 12u, col0, bq); }
  if (TM > 16u) { storeQuad4(&q4, base, row0 + 16u, col0, bq); }
  if (TM > 20u) { storeQuad4(&q5, base, row0 + 20u, col0, bq); }
  if (TM > 24u) { storeQuad4(&q6, base, row0 + 24u, col0, bq); }
  if (TM > 28u) { storeQuad4(&q7, base, row0 + 28u, col0, bq); }
}

fn storeBlock1(z: u32, row0: u32, col0: u32, bq: ptr<function, array<vec4f, 8>>) {
  let base = z * d.m * d.n;
  storeQuad1(&q0, base, row0, col0, bq);
  if (TM > 4u) { storeQuad1(&q1, base, row0 + 4u, col0, bq); }
  if (TM > 8u) { storeQuad1(&q2, base, row0 + 8u, col0, bq); }
  if (TM > 12u) { storeQuad1(&q3, base, row0 + 12u, col0, bq); }
  if (TM > 16u) { storeQuad1(&q4, base, row0 + 16u, col0, bq); }
  if (TM > 20u) { storeQuad1(&q5, base, row0 + 20u, col0, bq); }
  if (TM > 24u) { storeQuad1(&q6, base, row0 + 24u, col0, bq); }
  if (TM > 28u) { storeQuad1(&q7, base, row0 + 28u, col0, bq); }
}

// (The shared kernel, for GPUs, applies the whole epilogue in its store: its blocks are small.)
// The late pass over a thread's block (rows row0.., columns col0..) of output matrix z: the
// epilogue (from C, or from the pre-activation copy with PRE) or, in the *_mask entries, the
// backward of DACT > 1. Element stores.
fn lateBlock1(z: u32, row0: u32, col0: u32, masked: bool) {
  let base = z * d.m * d.n;
  let rows = min(TM, d.m - row0);
  let cols = min(TN, d.n - col0);
  for (var r = 0u; r < rows; r++) {
    for (var t = 0u; t < cols; t++) {
      let i = base + (row0 + r) * d.n + col0 + t;
      c[i] = late(i, c[select(i, d.zo + i, PRE)], masked);
    }
  }
}

// The same with vec4 stores (N % 4 == 0).
fn lateBlock4(z: u32, row0: u32, col0: u32, masked: bool) {
  let n4 = d.n / 4u;
  let base = z * d.m * n4;
  let rows = min(TM, d.m - row0);
  let cols = (min(TN, d.n - col0) + 3u) / 4u;
  for (var r = 0u; r < rows; r++) {
    for (var t = 0u; t < cols; t++) {
      let i = base + (row0 + r) * n4 + col0 / 4u + t;
      let v = c4[select(i, d.zo / 4u + i, PRE)];
      let e = 4u * i;
      c4[i] = vec4f(late(e, v.x, masked), late(e + 1u, v.y, masked), late(e + 2u, v.z, masked), late(e + 3u, v.w, masked));
    }
  }
}

// Element i of C from v (the product, + bias): the epilogue's steps, or DACT's backward.
fn late(i: u32, v: f32, masked: bool) -> f32 {
  if (masked) { return act_backward(DACT, mask[i], v); }
  var y = act_forward(ACT, v);
  if (DROP) { y = y * select(0.0, d.drop_scale, unit(d.seed, i) >= d.drop); }
  if (RES) { y = mask[i] + y; }
  return y;
}

// The register-blocked entries: thread g owns the TM×TN block at (g.y·TM, g.x·TN) of output
// matrix g.z; false when that block lies outside C, else accumulated into q0..q7.
fn blockAt(g: vec3u) -> bool {
  d = p;
  if (g.y * TM >= d.m || g.x * TN >= d.n) { return false; }
  registerBlock(g.z, g.y * TM, g.x * TN);
  return true;
}

// C with element stores: any N.
@compute @workgroup_size(WGX, WGY)
fn matmul_forward(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  var zero: array<vec4f, 8>;
  storeBlock1(g.z, g.y * TM, g.x * TN, &zero);
  if (isLate()) {
    lateBlock1(g.z, g.y * TM, g.x * TN, false);
  }
}

// C with vec4 stores: N % 4 == 0.
@compute @workgroup_size(WGX, WGY)
fn matmul_forward_vec4(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  var zero: array<vec4f, 8>;
  storeBlock4(g.z, g.y * TM, g.x * TN, &zero);
  if (isLate()) {
    lateBlock4(g.z, g.y * TM, g.x * TN, false);
  }
}

// C masked by a ReLU's output (maskBlock): the gradient through Linear → ReLU → Linear's
// input, in one dispatch. Register kernel only (the host falls back to relu_backward else).
@compute @workgroup_size(WGX, WGY)
fn matmul_forward_mask(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  maskBlock(g.z, g.y * TM, g.x * TN);
  var zero: array<vec4f, 8>;
  storeBlock1(g.z, g.y * TM, g.x * TN, &zero);
  if (DACT > 1u) {
    lateBlock1(g.z, g.y * TM, g.x * TN, true);
  }
}

@compute @workgroup_size(WGX, WGY)
fn matmul_forward_mask_vec4(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  maskBlock(g.z, g.y * TM, g.x * TN);
  var zero: array<vec4f, 8>;
  storeBlock4(g.z, g.y * TM, g.x * TN, &zero);
  if (DACT > 1u) {
    lateBlock4(g.z, g.y * TM, g.x * TN, true);
  }
}

// The row sums of the rows a thread owns (only the first column block stores them).
fn storeRowsum(z: u32, row0: u32) {
  for (var i = 0u; i < TM / 4u; i++) {
    for (var r = 0u; r < 4u; r++) {
      let row = row0 + 4u * i + r;
      if (row < d.m) { rowsum[z * d.m + row] = rs[i][r]; }
    }
  }
}

// C and the row sums of op(A) (a Linear's weight and bias gradients in one dispatch).
@compute @workgroup_size(WGX, WGY)
fn matmul_forward_rowsum(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  if (g.x == 0u) { storeRowsum(g.z, g.y * TM); }
  var zero: array<vec4f, 8>;
  storeBlock1(g.z, g.y * TM, g.x * TN, &zero);
}

@compute @workgroup_size(WGX, WGY)
fn matmul_forward_rowsum_vec4(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  if (g.x == 0u) { storeRowsum(g.z, g.y * TM); }
  var zero: array<vec4f, 8>;
  storeBlock4(g.z, g.y * TM, g.x * TN, &zero);
}

// y = x·wᵀ + bias, the bias added in the store (one dispatch): TB, batch 1.
@compute @workgroup_size(WGX, WGY)
fn linear_forward(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  var bq = biasQuad(g.x * TN);
  storeBlock1(g.z, g.y * TM, g.x * TN, &bq);
  if (isLate()) {
    lateBlock1(g.z, g.y * TM, g.x * TN, false);
  }
}

@compute @workgroup_size(WGX, WGY)
fn linear_forward_vec4(@builtin(global_invocation_id) g: vec3u) {
  if (!blockAt(g)) { return; }
  var bq = biasQuad(g.x * TN);
  storeBlock4(g.z, g.y * TM, g.x * TN, &bq);
  if (isLate()) {
    lateBlock4(g.z, g.y * TM, g.x * TN, false);
  }
}

// ---- shared-memory kernel (hardware GPUs) ------------------------------------------------
// A workgroup computes a (WGY·TM)×(WGX·TN) tile of C; per BK-step every thread helps stage
// op(A)[tile rows, k0..k0+BK] and op(B)[k0..k0+BK, tile cols] (zero outside the matrices),
// then accumulates from workgroup memory. Thread (x, y) owns rows y + i·WGY and column quads
// x + j·WGX, so neighbouring threads read neighbouring words.

fn sharedBlock(z: u32, lid: vec3u, wid: vec3u) -> array<vec4f, 16> {
  let bm = WGY * TM;
  let bn = WGX * TN;
  let threads = WGX * WGY;
  let tid = lid.y * WGX + lid.x;
  let rowBase = wid.y * bm;
  let colBase = wid.x * bn;
  let o = batchOffsets(z);
  var acc: array<vec4f, 16>;
  // p.k, not d.k: the loop holds barriers, so its bound must be visibly uniform.
  for (var k0 = 0u; k0 < p.k; k0 += BK) {
    for (var e = tid; e < BK * bm; e += threads) {
      // Walk A's contiguous dim fastest so neighbouring threads read neighbouring words.
      let kk = select(e % BK, e / bm, TA);
      let r = select(e / BK, e % bm, TA);
      let row = rowBase + r;
      tileA[kk * bm + r] = select(0.0, elemA(o.x, min(row, d.m - 1u), k0 + kk), row < d.m);
    }
    for (var e = tid; e < BK * bn; e += threads) {
      let kk = select(e / bn, e % BK, TB);
      let cc = select(e % bn, e / BK, TB);
      let col = colBase + cc;
      tileB[kk * bn + cc] = select(0.0, elemB(o.y, k0 + kk, min(col, d.n - 1u)), col < d.n);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var bv: array<vec4f, 2>;
      for (var j = 0u; j < TN / 4u; j++) {
        let at = kk * bn + 4u * (lid.x + j * WGX);
        bv[j] = vec4f(tileB[at], tileB[at + 1u], tileB[at + 2u], tileB[at + 3u]);
      }
      for (var i = 0u; i < TM; i++) {
        let av = vec4f(tileA[kk * bm + lid.y + i * WGY]);
        for (var j = 0u; j < TN / 4u; j++) {
          acc[i * 2u + j] = fma(av, bv[j], acc[i * 2u + j]);
        }
      }
    }
    workgroupBarrier();
  }
  return acc;
}

// Store a thread's values; bq[j] is added to column quad j (the bias, or zero).
fn storeShared(acc: ptr<function, array<vec4f, 16>>, z: u32, lid: vec3u, wid: vec3u, bq: ptr<function, array<vec4f, 2>>) {
  let base = z * d.m * d.n;
  for (var i = 0u; i < TM; i++) {
    let row = wid.y * WGY * TM + lid.y + i * WGY;
    for (var j = 0u; j < TN / 4u; j++) {
      let col0 = wid.x * WGX * TN + 4u * (lid.x + j * WGX);
      let z = (*acc)[i * 2u + j] + (*bq)[j];
      let v = epilogue(z, base + row * d.n + col0);
      for (var t = 0u; t < 4u; t++) {
        if (row < d.m && col0 + t < d.n) {
          c[base + row * d.n + col0 + t] = v[t];
          if (PRE) { c[d.zo + base + row * d.n + col0 + t] = z[t]; }
        }
      }
    }
  }
}

@compute @workgroup_size(WGX, WGY)
fn matmul_forward_shared(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  d = p;
  var acc = sharedBlock(wid.z, lid, wid);
  var zero: array<vec4f, 2>;
  storeShared(&acc, wid.z, lid, wid, &zero);
}

@compute @workgroup_size(WGX, WGY)
fn linear_forward_shared(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  d = p;
  var acc = sharedBlock(wid.z, lid, wid);
  var bq: array<vec4f, 2>;
  for (var j = 0u; j < TN / 4u; j++) {
    let col0 = wid.x * WGX * TN + 4u * (lid.x + j * WGX);
    for (var t = 0u; t < 4u; t++) {
      let i = min(col0 + t, d.n - 1u);
      bq[j][t] = bias[i / 4u][i % 4u];
    }
  }
  storeShared(&acc, wid.z, lid, wid, &bq);
}
