/** Errors raised by the GPU layer that callers may want to catch by class. */

/** The `GPUDevice` was lost (driver reset, `destroy()`, out of memory); every later use throws this. */
export class DeviceLostError extends Error {
  /** The class's name in messages and stack traces (a bundler may rename the class). */
  override name = "DeviceLostError";
  /** `GPUDeviceLostInfo.reason`: "destroyed" or "unknown". */
  readonly reason: string;
  /** The error of device `label`, lost for `reason` with the driver's `message`. */
  constructor(label: string, reason: string, message: string) {
    super(`GPU device "${label}" was lost (reason: ${reason}${message ? `, ${message}` : ""}); ` +
      "its buffers are gone and it cannot run more work");
    this.reason = reason;
  }
}

/** A WebGPU validation or out-of-memory error that the device reported asynchronously. */
export class GpuError extends Error {
  /** The class's name in messages and stack traces (a bundler may rename the class). */
  override name = "GpuError";
}
