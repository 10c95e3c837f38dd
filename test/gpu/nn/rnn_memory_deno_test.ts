/**
 * LSTM and GRU training keeps the process RSS flat (bench/README.md "Memory", "char-rnn, 50 epochs").
 * Mesa 22.3's lavapipe inlines the uniforms that an `if` tests alone and, when that removes
 * half of a shader's SSA values, compiles a fresh shader variant at every dispatch and never
 * frees it. shaders/rnn.wgsl's step kernels branched on p.t / p.steps / p.has_rec: ~120 KiB
 * of RSS per step kernel launch (67 MiB per epoch of bench/memory.ts's char-rnn) while the JS
 * heap and the pool stayed flat. They now use `select` (NO_PARAM_BRANCH in the shader).
 * Deno only (`_deno_test`): browsers have no RSS; on adapters other than that lavapipe the
 * test passes whether or not a shader branches.
 */
import { Device, fromArray, GRU, LSTM, type Module, Variable } from "../../../src/index.ts";
import { assert } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";
import { mulberry32, uniform } from "../../util/random.ts";

const T = 16, B = 2, I = 4, H = 8;
/** Steps before the baseline: pipelines compiled, pool and bind-group cache filled. */
const WARM = 10;
/** Measured steps: 2 × 2·T step-kernel launches each (LSTM and GRU, forward and backward). */
const STEPS = 60;
/**
 * Allowed RSS growth. Measured on lavapipe (Mesa 22.3, 2 shared cores): the branching
 * kernels grew 128.3 MiB over these steps (and took 49 s against 29 s); the select kernels pass.
 */
const LIMIT_MIB = 64;

gpuTest(`LSTM + GRU, T ${T}: ${STEPS} training steps after warm-up grow RSS < ${LIMIT_MIB} MiB (no shader variant per launch)`, async () => {
  const device = await Device.request({ label: "rnn-memory-test" });
  try {
    const lstm = new LSTM(I, H, { device, seed: 1 }), gru = new GRU(H, H, { device, seed: 2 });
    const params = [...lstm.parameters(), ...gru.parameters()];
    const x = uniform(T * B * I, mulberry32(3)), w = uniform(T * B * H, mulberry32(4));
    let rss0 = 0;
    for (let step = 1; step <= WARM + STEPS; step++) {
      const h = (gru as Module).forward((lstm as Module).forward(new Variable(fromArray(x, [T, B, I], { device }))));
      const loss = h.mul(new Variable(fromArray(w, [T, B, H], { device }))).sum();
      loss.backward();
      await loss.data.toArray();
      for (const p of params) p.zeroGrad();
      device.endStep();
      if (step === WARM) rss0 = Deno.memoryUsage().rss;
    }
    const grew = (Deno.memoryUsage().rss - rss0) / 2 ** 20;
    assert(grew < LIMIT_MIB, `RSS grew ${grew.toFixed(1)} MiB over ${STEPS} LSTM + GRU steps (limit ${LIMIT_MIB}): a shader variant per launch?`);
  } finally {
    device.destroy();
  }
});
