import { MATMUL_CPU, MATMUL_GPU, MATMUL_SWIFTSHADER } from "../../../src/gpu/tuning.ts";
import { assertEquals } from "../../util/assert.ts";
import { gpuTest } from "../../util/gpu.ts";

gpuTest("a device's default matmul tiling follows its adapter: lavapipe 32×32, SwiftShader 16×16, a GPU the shared-memory one", (device) => {
  // The adapter kind is read from the adapter here, not from the device, so a wrong kind fails.
  const d = `${device.info.architecture} ${device.info.description}`;
  const kind = /swiftshader/i.test(d) ? "swiftshader" : /llvmpipe|lavapipe/i.test(d) ? "lavapipe" : "gpu";
  assertEquals(device.adapterKind, kind, `adapter "${d}"`);
  assertEquals(device.matmul, { lavapipe: MATMUL_CPU, swiftshader: MATMUL_SWIFTSHADER, gpu: MATMUL_GPU }[kind]);
});
