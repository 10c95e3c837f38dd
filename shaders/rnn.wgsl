// One time step of an LSTM or GRU layer: every gate of a step in one dispatch, forward and
// backward, PyTorch's equations and gate order (torch.nn.LSTM: i, f, g, o; torch.nn.GRU:
// r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).
//
// One thread per hidden unit of one batch row: idx = b * hidden + j in [0, n), n = batch * hidden.
// The host computes, per layer, gx = x W_ih^T + b_ih for all steps (one matmul) and, per step,
// gh = h_{t-1} W_hh^T + b_hh (one matmul); the kernels here add them, apply the activations and
// the cell update. Row t of a [T, B, K] buffer starts at t * batch * K; G = 4 hidden (LSTM) or
// 3 hidden (GRU) gate columns per batch row.
//
// Buffers (each entry point binds the subset it uses, at most 8 storage buffers):
//   gx [T, B, G]     input projections of every step
//   gh [B, G]        recurrent projection of this step
//   cs [T + 1, B, H] LSTM cell states c_0 .. c_T (row 0 copied in by the host)
//   out              LSTM [T + 1, B, H]: h_1 .. h_T then c_T; GRU [T, B, H]: h_1 .. h_T
//   hprev [T, B, H]  h_0 .. h_{T-1} (row 0 copied in by the host): the rows W_hh's gradient needs
//   hnext [B, H]     h_t alone, the next step's matmul operand
//   act [T, B, 4H]   what the backward reads: LSTM i, f, g, o; GRU r, z, n, (W_hn h + b_hn)
//   dout             gradient of `out`
//   dhrec [B, H]     d gh_{t+1} · W_hh: the part of dh_t that went through the next step's matmul
//   carry [B, H]     the elementwise part flowing to the previous step: LSTM dc, GRU dh * z
//   dgx [T, B, G]    gradient of gx (LSTM: also of gh)
//   dgh [T, B, G]    GRU: gradient of gh (differs from dgx in the n gate by the factor r)
//   dstep [B, G]     gradient of this step's gh alone, the operand of the next backward matmul
//
// NO_PARAM_BRANCH: no `if` here tests params alone (p.t, p.steps, p.has_rec); `select` does.
// Mesa 22.3's lavapipe inlines the uniforms an `if` tests and, when that removes half the
// shader's SSA values (it did for these kernels at some shapes: B 32 × T 16, not B 16 × T 32),
// compiles a new variant at every dispatch and never frees it: ~120 KiB of RSS and ~7 ms per
// step kernel, 67 MiB per epoch of char-rnn
// (bench/README.md "Memory", "char-rnn, 50 epochs"; test/gpu/nn/rnn_memory_deno_test.ts).
override WG: u32 = 256;

struct Params {  // mirrored in src/tensor/ops/rnn.ts
  n: u32, hidden: u32, t: u32, steps: u32, has_rec: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gx: array<f32>;
@group(0) @binding(2) var<storage, read> gh: array<f32>;
@group(0) @binding(3) var<storage, read_write> cs: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> hprev: array<f32>;
@group(0) @binding(6) var<storage, read_write> hnext: array<f32>;
@group(0) @binding(7) var<storage, read_write> act: array<f32>;
@group(0) @binding(8) var<storage, read> dout: array<f32>;
@group(0) @binding(9) var<storage, read> dhrec: array<f32>;
@group(0) @binding(10) var<storage, read_write> carry: array<f32>;
@group(0) @binding(11) var<storage, read_write> dgx: array<f32>;
@group(0) @binding(12) var<storage, read_write> dgh: array<f32>;
@group(0) @binding(13) var<storage, read_write> dstep: array<f32>;

// #include "lib/grid.wgsl"

// sigmoid and tanh as shaders/unary.wgsl computes them (WGSL has no includes): exp of a
// non-positive argument only, so no overflow; some drivers return NaN for tanh of large |v|.
fn sigmoid(v: f32) -> f32 {
  let e = exp(-abs(v));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0);
}
fn tanh_safe(v: f32) -> f32 {
  let e = exp(-2.0 * abs(clamp(v, -20.0, 20.0)));
  return sign(v) * (1.0 - e) / (1.0 + e);
}

// Where gate k of unit j of batch row b sits in a [B, gates * H] row block.
fn gate_at(b: u32, k: u32, j: u32, gates: u32) -> u32 { return (b * gates + k) * p.hidden + j; }

// ---- LSTM: c = f c_prev + i g, h = o tanh(c) -------------------------------------

@compute @workgroup_size(WG)
fn lstm_step_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let idx = index(g, nw);
  if (idx >= p.n) { return; }
  let b = idx / p.hidden;
  let j = idx % p.hidden;
  let row = p.t * p.n * 4u;  // start of step t in gx and act
  var a: array<f32, 4>;
  for (var k = 0u; k < 4u; k++) {
    let pre = gx[row + gate_at(b, k, j, 4u)] + gh[gate_at(b, k, j, 4u)];
    a[k] = select(sigmoid(pre), tanh_safe(pre), k == 2u);
    act[row + gate_at(b, k, j, 4u)] = a[k];
  }
  let c = a[1] * cs[p.t * p.n + idx] + a[0] * a[2];
  let h = a[3] * tanh_safe(c);
  cs[(p.t + 1u) * p.n + idx] = c;
  out[p.t * p.n + idx] = h;
  // No branch on params alone (see NO_PARAM_BRANCH above): every step writes its c into out's
  // last row (the last step's c_T stays), and h into hprev's row t + 1 but at the last step,
  // which rewrites row T - 1 with what it holds.
  out[p.steps * p.n + idx] = c;
  let last = p.t + 1u == p.steps;
  let at = (p.t + select(1u, 0u, last)) * p.n + idx;
  hprev[at] = select(h, hprev[at], last);
  hnext[idx] = h;
}

// dh = dout_t + dhrec; dc = carry (dout's c_T row at the last step) + dh o (1 - tanh(c)^2).
@compute @workgroup_size(WG)
fn lstm_step_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let idx = index(g, nw);
  if (idx >= p.n) { return; }
  let b = idx / p.hidden;
  let j = idx % p.hidden;
  let row = p.t * p.n * 4u;
  let last = p.t + 1u == p.steps;
  var dh = dout[p.t * p.n + idx];
  dh += select(0.0, dhrec[idx], p.has_rec != 0u);  // dhrec is bound (to dout) at the last step too
  let i = act[row + gate_at(b, 0u, j, 4u)];
  let f = act[row + gate_at(b, 1u, j, 4u)];
  let gg = act[row + gate_at(b, 2u, j, 4u)];
  let o = act[row + gate_at(b, 3u, j, 4u)];
  let tc = tanh_safe(cs[(p.t + 1u) * p.n + idx]);
  let dc_in = select(carry[idx], dout[p.steps * p.n + idx], last);
  let dc = dc_in + dh * o * (1.0 - tc * tc);
  carry[idx] = dc * f;
  var d: array<f32, 4>;
  d[0] = dc * gg * i * (1.0 - i);
  d[1] = dc * cs[p.t * p.n + idx] * f * (1.0 - f);
  d[2] = dc * i * (1.0 - gg * gg);
  d[3] = dh * tc * o * (1.0 - o);
  for (var k = 0u; k < 4u; k++) {
    dgx[row + gate_at(b, k, j, 4u)] = d[k];
    dstep[gate_at(b, k, j, 4u)] = d[k];
  }
}

// ---- GRU: h = (1 - z) n + z h_prev -------------------------------------------------

@compute @workgroup_size(WG)
fn gru_step_forward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let idx = index(g, nw);
  if (idx >= p.n) { return; }
  let b = idx / p.hidden;
  let j = idx % p.hidden;
  let row3 = p.t * p.n * 3u;
  let row4 = p.t * p.n * 4u;
  let r = sigmoid(gx[row3 + gate_at(b, 0u, j, 3u)] + gh[gate_at(b, 0u, j, 3u)]);
  let z = sigmoid(gx[row3 + gate_at(b, 1u, j, 3u)] + gh[gate_at(b, 1u, j, 3u)]);
  let hn = gh[gate_at(b, 2u, j, 3u)];
  let nn = tanh_safe(gx[row3 + gate_at(b, 2u, j, 3u)] + r * hn);
  let h = (1.0 - z) * nn + z * hprev[p.t * p.n + idx];
  act[row4 + gate_at(b, 0u, j, 4u)] = r;
  act[row4 + gate_at(b, 1u, j, 4u)] = z;
  act[row4 + gate_at(b, 2u, j, 4u)] = nn;
  act[row4 + gate_at(b, 3u, j, 4u)] = hn;
  out[p.t * p.n + idx] = h;
  let last = p.t + 1u == p.steps;  // as in lstm_step_forward: no branch on params alone
  let at = (p.t + select(1u, 0u, last)) * p.n + idx;
  hprev[at] = select(h, hprev[at], last);
  hnext[idx] = h;
}

// dh = dout_t + dhrec + carry (none at the last step); carry becomes dh z.
@compute @workgroup_size(WG)
fn gru_step_backward(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let idx = index(g, nw);
  if (idx >= p.n) { return; }
  let b = idx / p.hidden;
  let j = idx % p.hidden;
  let row3 = p.t * p.n * 3u;
  let row4 = p.t * p.n * 4u;
  var dh = dout[p.t * p.n + idx];
  // carry is unset at the last step: select picks 0 whatever it holds.
  dh += select(0.0, dhrec[idx] + carry[idx], p.has_rec != 0u);
  let r = act[row4 + gate_at(b, 0u, j, 4u)];
  let z = act[row4 + gate_at(b, 1u, j, 4u)];
  let nn = act[row4 + gate_at(b, 2u, j, 4u)];
  let hn = act[row4 + gate_at(b, 3u, j, 4u)];
  let dn = dh * (1.0 - z) * (1.0 - nn * nn);
  let dz = dh * (hprev[p.t * p.n + idx] - nn) * z * (1.0 - z);
  let dr = dn * hn * r * (1.0 - r);
  carry[idx] = dh * z;
  dgx[row3 + gate_at(b, 0u, j, 3u)] = dr;
  dgx[row3 + gate_at(b, 1u, j, 3u)] = dz;
  dgx[row3 + gate_at(b, 2u, j, 3u)] = dn;
  dgh[row3 + gate_at(b, 0u, j, 3u)] = dr;
  dgh[row3 + gate_at(b, 1u, j, 3u)] = dz;
  dgh[row3 + gate_at(b, 2u, j, 3u)] = dn * r;
  dstep[gate_at(b, 0u, j, 3u)] = dr;
  dstep[gate_at(b, 1u, j, 3u)] = dz;
  dstep[gate_at(b, 2u, j, 3u)] = dn * r;
}
