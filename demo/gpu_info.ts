/**
 * What the page says about WebGPU: the adapter in use, or, without WebGPU, how to get it
 * (never a silent failure).
 */

/** Adapter facts shown on the page. */
export interface AdapterSummary {
  name: string;
  fallback: boolean;
}

/** How to enable WebGPU, per browser. */
export const HOW_TO_ENABLE = [
  "Chrome or Edge 113 or newer (desktop; Android 121+) have WebGPU on by default.",
  'Elsewhere in Chromium: open chrome://flags, enable "Unsafe WebGPU Support" (#enable-unsafe-webgpu) and restart; ' +
  "on Linux also start it with --enable-features=Vulkan.",
  "Firefox Nightly (dom.webgpu.enabled) and Safari Technology Preview (Feature Flags → WebGPU) have it too.",
  "Without a browser: the same trainer runs in Deno (npm start).",
];

/** A readable adapter name from its info. */
export function adapterName(info: GPUAdapterInfo): string {
  const parts = [info.description, info.vendor, info.architecture, info.device].filter((s) => !!s);
  return parts.length ? [...new Set(parts)].join(" · ") : "unnamed adapter";
}

/**
 * The adapter the page would use, or the reason there is none.
 * @returns `{ adapter }` or `{ error }` with a sentence for the page.
 */
export async function probeAdapter(): Promise<{ summary: AdapterSummary } | { error: string }> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) return { error: "This browser does not expose WebGPU (navigator.gpu is missing)." };
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { error: `WebGPU is present but requesting an adapter failed: ${(e as Error).message}` };
  }
  if (!adapter) return { error: "WebGPU is present but no adapter is available (blocklisted GPU or GPU disabled)." };
  const info = adapter.info;
  const fallback = (info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
    /swiftshader|llvmpipe|lavapipe/i.test(`${info.architecture} ${info.description}`);
  return { summary: { name: adapterName(info), fallback } };
}
