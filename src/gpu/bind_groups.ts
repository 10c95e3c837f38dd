/**
 * A device's bind groups, reused when the same pipeline binds the same buffers at the same
 * uniform-arena offset (tuning.ts `BIND_GROUP_CACHE` says why: Deno frees bind groups only on GC).
 */
import type { Dispatch } from "./dispatch.ts";
import { BIND_GROUP_CACHE } from "./tuning.ts";

/** Bind groups by pipeline, arena offset and buffers, oldest use first (Map order), at most `BIND_GROUP_CACHE`. */
export class BindGroupCache {
  #groups = new Map<string, GPUBindGroup>();
  #bufferIds = new WeakMap<GPUBuffer, number>();
  #nextBufferId = 0;
  #created = 0;

  /**
   * Bind groups of `gpu`, binding 0 a slot of `arena`; `onCreate` is told of each new group
   * (the device counts it among the objects only a GC frees, collect.ts).
   */
  constructor(readonly gpu: GPUDevice, readonly arena: GPUBuffer, readonly onCreate: () => void) {}

  /** Bind groups ever created; flat after warm-up when the cache serves every dispatch. */
  get created(): number {
    return this.#created;
  }

  /**
   * The bind group of dispatch `d` on `pipeline` (cache key `pkey`), its params at arena
   * `offset` (unused when `d` has none), created on a miss.
   */
  get(pkey: string, pipeline: GPUComputePipeline, d: Dispatch, offset: number): GPUBindGroup {
    let key = pkey;
    if (d.params) key += `|${offset}:${d.params.layout.bytes}`;
    for (const binding in d.buffers) {
      const b = d.buffers[binding];
      key += "buffer" in b ? `|${binding}=${this.#bufferId(b.buffer)}@${b.offset}+${b.size}` : `|${binding}=${this.#bufferId(b)}`;
    }
    const cache = this.#groups;
    let bg = cache.get(key);
    if (bg) {
      cache.delete(key); // re-inserted below: most recently used last
    } else {
      const entries: GPUBindGroupEntry[] = [];
      if (d.params) {
        entries.push({ binding: 0, resource: { buffer: this.arena, offset, size: Math.max(d.params.layout.bytes, 4) } });
      }
      for (const binding in d.buffers) {
        const b = d.buffers[binding];
        entries.push({ binding: Number(binding), resource: "buffer" in b ? b : { buffer: b } });
      }
      bg = this.gpu.createBindGroup({ label: `${d.shader}/${d.entry}`, layout: pipeline.getBindGroupLayout(0), entries });
      this.#created++;
      this.onCreate();
      if (cache.size >= BIND_GROUP_CACHE) cache.delete(cache.keys().next().value!);
    }
    cache.set(key, bg);
    return bg;
  }

  /** Drop every cached group (they may bind buffers about to be destroyed). */
  clear(): void {
    this.#groups.clear();
  }

  #bufferId(buf: GPUBuffer): number {
    let id = this.#bufferIds.get(buf);
    if (id === undefined) this.#bufferIds.set(buf, id = this.#nextBufferId++);
    return id;
  }
}
