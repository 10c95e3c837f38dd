/**
 * The two axes of a mode, apart from `config.ts` so that the modules
 * `config.ts` itself imports (max_failure.ts) can name them without an import cycle.
 */

/** WHEN a reduce fires. */
export const ApplyPolicy = { Sync: "sync", Cadence: "cadence", Async: "async" } as const;
/** One of {@link ApplyPolicy}'s values: `"sync"`, `"cadence"` or `"async"` (flodl's `ApplyPolicy`). */
export type ApplyPolicy = (typeof ApplyPolicy)[keyof typeof ApplyPolicy];

/**
 * HOW a reduce travels. `Cpu`: frames to the coordinator and back. `Nccl`: the
 * ranks' collective in a SharedArrayBuffer slab (coordinator/reduce/reduce_nccl.ts), the web's
 * stand-in for NCCL.
 */
export const AverageBackend = { Nccl: "nccl", Cpu: "cpu" } as const;
/** One of {@link AverageBackend}'s values: `"nccl"` or `"cpu"` (flodl's `AverageBackend`). */
export type AverageBackend = (typeof AverageBackend)[keyof typeof AverageBackend];
