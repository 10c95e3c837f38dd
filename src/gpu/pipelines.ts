/**
 * A device's compiled compute pipelines, one per shader, entry point and override constants
 * (shapes travel in uniforms, so a new batch size never recompiles), and one shader module
 * per `.wgsl` file that every override variant reuses.
 */
import { shaderSource } from "./shaders.ts";

/** Cache key of a pipeline: shader, entry and the override constants in name order. */
export function pipelineKey(shader: string, entry: string, overrides?: Record<string, number>): string {
  if (!overrides) return `${shader}/${entry}`;
  return `${shader}/${entry}` + Object.keys(overrides).sort().map((k) => `/${k}=${overrides[k]}`).join("");
}

/** The pipelines of one GPUDevice, compiled on first use. */
export class PipelineCache {
  #pipelines = new Map<string, GPUComputePipeline>();
  #modules = new Map<string, GPUShaderModule>();

  /**
   * Pipelines of `gpu`; each compile calls `beforeCompile` with its key, then appends the key
   * and the ms `createComputePipeline` took to `compiles`.
   */
  constructor(
    readonly gpu: GPUDevice,
    readonly compiles: { key: string; ms: number }[],
    readonly beforeCompile: (key: string) => void,
  ) {}

  /** The pipeline under `key` (= `pipelineKey(shader, entry, overrides)`), compiled on a miss. */
  get(key: string, shader: string, entry: string, overrides?: Record<string, number>): GPUComputePipeline {
    let p = this.#pipelines.get(key);
    if (!p) {
      this.beforeCompile(key);
      const t0 = performance.now();
      // One module per shader file: each override variant reuses its parse and validation.
      let module = this.#modules.get(shader);
      if (!module) {
        module = this.gpu.createShaderModule({ label: `${shader}.wgsl`, code: shaderSource(shader) });
        this.#modules.set(shader, module);
      }
      p = this.gpu.createComputePipeline({
        label: key,
        layout: "auto",
        compute: { module, entryPoint: entry, constants: overrides },
      });
      this.compiles.push({ key, ms: performance.now() - t0 });
      this.#pipelines.set(key, p);
    }
    return p;
  }
}
