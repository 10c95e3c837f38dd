/**
 * Getting a GPUDevice for `Device.request`: the adapter (with the message that says how to
 * get one when there is none), the features and limits asked of it, and which row of the
 * per-adapter tuning tables (tuning.ts `AdapterKind`) it reads.
 */
import type { AdapterKind, MatmulClassTilings, MatmulTiling } from "./tuning.ts";

/** Options of `Device.request`. */
export interface DeviceOptions {
  /** Adapter preference passed to `navigator.gpu.requestAdapter`. */
  powerPreference?: GPUPowerPreference;
  /** Use this adapter instead of asking for one. */
  adapter?: GPUAdapter;
  /** Name used in labels and error messages. Default "gpu". */
  label?: string;
  /** Matmul tiling; default chosen from the adapter (register blocking on CPU adapters). */
  matmul?: MatmulTiling;
  /**
   * Tilings of the product classes (tuning.ts `MatmulClass`: skinny products, the weight
   * gradient Aᵀ·B). Default: the adapter's swept table (`MATMUL_CLASS_TILINGS`), or none
   * when `matmul` is given, so a chosen tiling runs every product.
   */
  matmulClasses?: MatmulClassTilings;
}

/**
 * The adapter (`options.adapter`, or one asked of `navigator.gpu`) and a device on it with the
 * adapter's own maximum buffer and binding sizes; `shader-f16`, `timestamp-query` and
 * `subgroups` enabled when offered.
 * @throws {Error} When the runtime has no WebGPU, or no adapter is found (says how to get one).
 */
export async function requestGpuDevice(options: DeviceOptions): Promise<{ adapter: GPUAdapter; gpu: GPUDevice }> {
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  if (!gpu) {
    throw new Error(
      "WebGPU is not available in this runtime (navigator.gpu is undefined). In Deno install Mesa's " +
        "lavapipe (apt-get install mesa-vulkan-drivers) or use a GPU; in Chromium start it with " +
        "--enable-unsafe-webgpu (and --use-webgpu-adapter=swiftshader without a GPU)",
    );
  }
  const adapter = options.adapter ?? await gpu.requestAdapter({ powerPreference: options.powerPreference });
  if (!adapter) {
    throw new Error(
      "No WebGPU adapter found. Without a GPU: Deno needs Mesa's lavapipe (apt-get install mesa-vulkan-drivers); " +
        "Chromium needs --enable-unsafe-webgpu --use-webgpu-adapter=swiftshader --enable-unsafe-swiftshader",
    );
  }
  const wanted: GPUFeatureName[] = ["shader-f16", "timestamp-query", "subgroups" as GPUFeatureName];
  const requiredFeatures = wanted.filter((f) => adapter.features.has(f));
  const l = adapter.limits;
  const gpuDevice = await adapter.requestDevice({
    label: options.label ?? "gpu",
    requiredFeatures,
    requiredLimits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupSizeY: l.maxComputeWorkgroupSizeY,
    },
  });
  return { adapter, gpu: gpuDevice };
}

/**
 * Whether an adapter is a software fallback (lavapipe, SwiftShader), and so which tuning row
 * it reads: "swiftshader" or "lavapipe" for those, "gpu" for the rest.
 */
export function classifyAdapter(info: GPUAdapterInfo): { isFallback: boolean; adapterKind: AdapterKind } {
  const isFallback = (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
    info.architecture === "swiftshader" || /llvmpipe|lavapipe|swiftshader/i.test(info.description);
  const adapterKind = !isFallback
    ? "gpu"
    : info.architecture === "swiftshader" || /swiftshader/i.test(info.description)
    ? "swiftshader"
    : "lavapipe";
  return { isFallback, adapterKind };
}
