/**
 * Every tunable number of the GPU layer, with its unit and the reason for its value
 * (STYLE.md practice 14). Kernels receive these as WGSL `override` constants, so a
 * change recompiles the pipeline once; shapes never do.
 */

/** Threads per workgroup of elementwise kernels (1-D). 256 is the WebGPU default limit and fills a SIMD lane group on every adapter we met. */
export const ELEMENTWISE_WG = 256;

/** Threads per workgroup of reduction kernels: one workgroup reduces one output row in shared memory. */
export const REDUCE_WG = 256;

/**
 * Threads per workgroup of the convolution kernels. Each thread computes a register tile
 * (4 output channels × 8 columns); 64 threads fill 8-wide SIMD lanes on CPU adapters.
 */
export const CONV_WG = 64;

/** Maximum workgroups in one dispatch dimension (WebGPU's guaranteed `maxComputeWorkgroupsPerDimension`). Larger grids fold into y. */
export const MAX_GROUPS_PER_DIM = 65535;

/**
 * Matmul tiling. Each thread computes a TM×TN block of C with vec4 loads along N;
 * a workgroup is WGX×WGY threads. CPU adapters (lavapipe, SwiftShader) reward
 * register blocking and punish shared-memory tiles (TOOLCHAIN.md: 8×4 blocks 1.5 GFLOP/s,
 * 16×16 shared tiles 0.17); real GPUs want shared tiles too, so both are kept tunable.
 */
export interface MatmulTiling {
  /** Rows of C per thread. */
  tm: number;
  /** Columns of C per thread; a multiple of 4 (vec4). */
  tn: number;
  /** Threads per workgroup along N. */
  wgx: number;
  /** Threads per workgroup along M. */
  wgy: number;
}

/** Register-blocked tiling for CPU adapters (see bench/README.md for the sweep that chose it). */
export const MATMUL_CPU: MatmulTiling = { tm: 8, tn: 4, wgx: 8, wgy: 8 };
/** Tiling for hardware GPUs: more threads per workgroup, same per-thread block. */
export const MATMUL_GPU: MatmulTiling = { tm: 4, tn: 4, wgx: 16, wgy: 16 };

/**
 * Buffer pool size classes: each power of two is split into this many steps, so a
 * pooled buffer wastes at most 1/POOL_STEPS of its size (25% with 4 steps).
 */
export const POOL_STEPS = 4;
/** Smallest pooled buffer, bytes. Also a multiple of every alignment WebGPU asks for. */
export const POOL_MIN_BYTES = 256;

/** Bytes of the per-device uniform arena that holds every dispatch's params until the next submit. */
export const UNIFORM_ARENA_BYTES = 1 << 20;

/** Bytes reserved for one dispatch's params in the arena (before rounding up to the device's offset alignment). */
export const UNIFORM_SLOT_BYTES = 256;

/** Dispatches recorded before the device submits on its own, so a long eval loop does not build one huge command buffer. */
export const MAX_DISPATCHES_PER_SUBMIT = 4096;
