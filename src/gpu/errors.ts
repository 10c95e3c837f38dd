/** Errors raised by the GPU layer that callers may want to catch by class. */

/** The `GPUDevice` was lost (driver reset, `destroy()`, out of memory); every later use throws this. */
export class DeviceLostError extends Error {
  override name = "DeviceLostError";
  /** `GPUDeviceLostInfo.reason`: "destroyed" or "unknown". */
  readonly reason: string;
  constructor(label: string, reason: string, message: string) {
    super(`GPU device "${label}" was lost (reason: ${reason}${message ? `, ${message}` : ""}); ` +
      "its buffers are gone and it cannot run more work");
    this.reason = reason;
  }
}

/** A WebGPU validation or out-of-memory error that the device reported asynchronously. */
export class GpuError extends Error {
  override name = "GpuError";
}
