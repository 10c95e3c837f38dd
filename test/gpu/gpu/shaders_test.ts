/**
 * A WGSL error in code a family includes from shaders/lib/ is reported by `device.check()`
 * naming the helper's file and line, with the compiler this runtime has (naga in Deno, Tint
 * in Chromium), not only the line of the expanded text.
 */
import { shaderLine, shaderSource } from "../../../src/gpu/mod.ts";
import { assert } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

gpuTest("a compile error in an included helper names lib/reduce.wgsl and its line", async (device) => {
  const lines = shaderSource("softmax").split("\n");
  // Break the first line of wg_sum's body with a type error; the line count stays the same.
  const at = lines.findIndex((l) => l.startsWith("fn wg_sum(")) + 2;
  lines[at - 1] = "  sv[t] = 1u;";
  const where = shaderLine("softmax", at);
  assert(where.file === "lib/reduce.wgsl", `line ${at} of softmax.wgsl comes from ${where.file}`);
  device.check();
  const module = device.gpu.createShaderModule({ label: "softmax.wgsl", code: lines.join("\n") });
  device.gpu.createComputePipeline({
    label: "broken",
    layout: "auto",
    compute: { module, entryPoint: "softmax_forward" },
  });
  await device.gpu.queue.onSubmittedWorkDone();
  await new Promise((r) => setTimeout(r, 50)); // the uncaptured error event comes asynchronously
  let msg = "";
  try {
    device.check();
  } catch (e) {
    msg = (e as Error).message;
  }
  assert(msg !== "", "no error reported for a broken shader");
  assert(
    msg.includes(`lib/reduce.wgsl:${where.line}:`) && msg.includes(`included by softmax.wgsl, line ${at}`),
    `error does not name lib/reduce.wgsl:${where.line}: ${msg}`,
  );
});
