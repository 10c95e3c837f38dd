/**
 * Every tunable number of the GPU layer, with its unit and the reason for its value.
 * Kernels receive these as WGSL `override` constants, so a
 * change recompiles the pipeline once; shapes never do.
 * @module
 */

/** Threads per workgroup of elementwise kernels (1-D). 256 is the WebGPU default limit and fills a SIMD lane group on every adapter we met. */
export const ELEMENTWISE_WG = 256;

/** Threads per workgroup of reduction kernels: one workgroup reduces one output row in shared memory. */
export const REDUCE_WG = 256;

/**
 * Threads per workgroup for a workgroup reduction over `len` values (softmax rows, norm
 * rows, loss rows, reduce outputs): the smallest power of two from 32 covering the row, at
 * most {@link REDUCE_WG}. Short rows leave no threads idle at every barrier (software
 * adapters pay per barrier, bench/README.md); the tree reduction needs a power of two.
 * @example
 * ```ts
 * import { reduceWg } from "./tuning.ts";
 * if (reduceWg(10) !== 32 || reduceWg(33) !== 64 || reduceWg(1e6) !== 256) throw new Error("rule");
 * ```
 */
export function reduceWg(len: number): number {
  let wg = 32;
  while (wg < len && wg < REDUCE_WG) wg *= 2;
  return wg;
}

/** Threads per workgroup of segmented reductions ({@link segmentBlocking}) when segments are short. */
export const SEGMENT_WG = 64;

/** Values one thread of a segmented reduction sums before another thread joins its segment. */
export const SEGMENT_ITEMS = 16;

/**
 * Blocking of a segmented reduction (the norm kernels, shaders/norm.wgsl): each of many
 * reductions of `len` values (a row, or a column of the weight gradient) gets a segment
 * of `SEG` threads, a power of two covering `len` at {@link SEGMENT_ITEMS} values a thread,
 * at most {@link REDUCE_WG}; a workgroup of `WG` threads holds `perGroup` segments. Short
 * reductions then share a workgroup and pay log2(SEG) barriers, not a full tree each
 * (software adapters pay per barrier and per workgroup, bench/README.md).
 * @example
 * ```ts
 * import { segmentBlocking } from "./tuning.ts";
 * const b = segmentBlocking(128);
 * if (b.SEG !== 8 || b.WG !== 64 || b.perGroup !== 8) throw new Error("rule");
 * if (segmentBlocking(1).SEG !== 1 || segmentBlocking(1e6).WG !== 256) throw new Error("rule");
 * ```
 */
export function segmentBlocking(len: number): { WG: number; SEG: number; perGroup: number } {
  let seg = 1;
  while (seg * SEGMENT_ITEMS < len && seg < REDUCE_WG) seg *= 2;
  const wg = Math.max(SEGMENT_WG, seg);
  return { WG: wg, SEG: seg, perGroup: wg / seg };
}

/**
 * Threads per workgroup of the convolution kernels. Each thread computes a register tile
 * (4 output channels × 8 columns); 64 threads fill 8-wide SIMD lanes on CPU adapters.
 */
export const CONV_WG = 64;

/** Maximum workgroups in one dispatch dimension (WebGPU's guaranteed `maxComputeWorkgroupsPerDimension`). Larger grids fold into y. */
export const MAX_GROUPS_PER_DIM = 65535;

/**
 * Matmul tiling (shaders/matmul.wgsl). Each thread computes a tm×tn block of C; a workgroup
 * is wgx×wgy threads. `bk` picks the kernel: 0 keeps the block in registers and never uses
 * workgroup memory (CPU adapters), bk > 0 stages bk-deep tiles of A and B in workgroup
 * memory (hardware GPUs). The op shrinks tm/tn for matrices smaller than one workgroup's tile.
 */
export interface MatmulTiling {
  /** Rows of C per thread: a multiple of 4, at most 32 (8 with bk > 0). */
  tm: number;
  /** Columns of C per thread: a multiple of 4, at most 32 (8 with bk > 0). */
  tn: number;
  /** Threads per workgroup along N. */
  wgx: number;
  /** Threads per workgroup along M. */
  wgy: number;
  /** K-depth of the workgroup-memory tiles; 0 = register kernel. bk·wgy·tm and bk·wgx·tn at most 2048. */
  bk: number;
}

/**
 * Register tiling for lavapipe (SwiftShader: below). There every storage load is a
 * loop over the 8 SIMD lanes and dominates, so the kernel wants the most FMAs per load,
 * tm·tn/(tm+tn): 32×32 blocks. wgx = 8 fills one SIMD batch along N. bench/matmul_sweep.ts
 * (lavapipe, 1024³): 32×32 3.3 GFLOP/s, 16×32 2.5, 16×16 1.9, 8×8 1.0, 8×4 0.5. The cost
 * is compile time on a machine's first run: lavapipe compiles a pipeline in two halves, NIR
 * when it is created (Deno blocks in createComputePipeline, in every process: 0.3–0.6 s a
 * matmul variant) and LLVM at its first dispatch, which Mesa's disk cache keeps for later
 * processes; that second half is 1–2.5 s a 32×32 variant and about a third of that at 16×16.
 * 16×16 would bring a fresh machine's first gpt-nano step from 47 to 22 s, but slows its and
 * char-rnn's steps by 15–30%, so 32×32 stays (bench/README.md "Mesa's cache").
 */
export const MATMUL_CPU: MatmulTiling = { tm: 32, tn: 32, wgx: 8, wgy: 1, bk: 0 };
/**
 * SwiftShader's tiling (Chromium without a GPU): 16×16 blocks. There the block's compile time
 * decides a short run: the MLP's products compile in 83–111 s at 32×32 and in 10–15 s at
 * 16×16, which then runs them as fast (85–102 ms per step vs 77–114) and a 512³ product 14–31%
 * slower; 8×8 compiles in half 16×16's time but runs large products 1.4–2× slower.
 * bench/tiling_first_use.ts, bench/README.md "Tiling on first use".
 */
export const MATMUL_SWIFTSHADER: MatmulTiling = { tm: 16, tn: 16, wgx: 8, wgy: 1, bk: 0 };
/**
 * Largest register block when an operand is not vec4-aligned or N % 4 != 0 (element stores).
 * Compile time on CPU adapters grows steeply with the block (lavapipe: 32×32 with element
 * stores over 20 s, 16×8 about 1 s; 32×32 vec4 about 6 s), and such shapes are small ones.
 */
export const MATMUL_UNALIGNED = { tm: 16, tn: 8 };
/**
 * Tiling for hardware GPUs: 16×16 threads of 4×4 blocks, 64×64 tiles of C, k-slices of 16 in
 * workgroup memory. Checked on an NVIDIA H200 (Deno/wgpu on Vulkan): the matmul tests pass and
 * 1024³ runs at 166 GFLOP/s, but dispatch + sync has a ~12 ms floor there, so the sweep cannot
 * rank GPU tilings yet (it would need many dispatches per sync).
 */
export const MATMUL_GPU: MatmulTiling = { tm: 4, tn: 4, wgx: 16, wgy: 16, bk: 16 };

/**
 * Product classes that may get their own tiling (src/tensor/ops/matmul_plan.ts `matmulClass`):
 * - `wgrad`: Aᵀ·B, the weight gradient of a Linear (dW = dyᵀ·x: k is the batch, m·n the
 *   whole weight), and matmul's dB; many output blocks, few k-steps each.
 * - `skinny`: m ≤ {@link MATMUL_SKINNY_M} (a batch of rows times a weight: Linear's forward
 *   and dX), few output blocks, many k-steps each.
 * Every other product uses the device's `matmul` tiling.
 */
export type MatmulClass = "wgrad" | "skinny";
/** Largest m of a `skinny` product: the batch sizes a training step multiplies by a weight. */
export const MATMUL_SKINNY_M = 64;
/** A tiling per product class; a class left out uses the device's `matmul` tiling. */
export type MatmulClassTilings = Partial<Record<MatmulClass, MatmulTiling>>;

/**
 * The adapters the per-class table knows: lavapipe and SwiftShader (CPU adapters, each its
 * own compiler), and any hardware GPU.
 */
export type AdapterKind = "lavapipe" | "swiftshader" | "gpu";

/**
 * Per-class tilings chosen by `bench/matmul_sweep.ts --classes` on each adapter (the
 * winner of that run's interleaved medians; the lavapipe run's table is in bench/README.md,
 * "Native anchor, product-class tilings"). Empty where the default tiling won or the
 * adapter has not been swept: SwiftShader needs the sweep run in Chromium, a GPU needs a
 * GPU (bench/gpu.sh runs the sweep there and prints the row to paste).
 */
export const MATMUL_CLASS_TILINGS: Record<AdapterKind, MatmulClassTilings> = {
  lavapipe: {},
  swiftshader: {},
  gpu: {},
};

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

/**
 * Rows per workgroup of the fused attention kernels (shaders/attention.wgsl), one row per
 * thread: a workgroup owns this many query rows (key rows in the dK/dV kernel) of one head
 * and shares every staged block of K and V (Q and dO) among them. Larger blocks read K and V
 * fewer times but, under a causal mask, waste more of the diagonal block; 32 is one key
 * block (the shader's BK) and fills 8-wide SIMD on CPU adapters. bench/README.md
 * ("gpt-nano step … attention's share") has the measurements.
 */
export const ATTENTION_WG = 32;

/**
 * Largest P (B·H·Tq·Tk f32, saved for the backward) for which attention takes the scores
 * path on CPU adapters (src/tensor/ops/attention.ts `attentionKernel`); past it the fused
 * kernels, which never write the [Tq, Tk] matrix. 64 MiB: spec-scale gpt-nano (64 × 4 heads
 * × 128²) is 16 MiB a layer.
 */
export const ATTENTION_SCORES_MAX_BYTES = 64 << 20;

/**
 * Bind groups the device keeps for reuse (least recently used dropped first). In Deno a
 * GPUBindGroup's native memory (~1 KiB in wgpu) is freed only when V8 collects its wrapper,
 * and V8 does not count that memory, so one new bind group per dispatch grew the process by
 * tens of KiB per step (bench/README.md "Memory"). A training step reuses the same pooled
 * buffers at the same arena offsets, so its few hundred bind groups hit the cache from the
 * second step on; 4096 leaves room for an eval loop beside it.
 */
export const BIND_GROUP_CACHE = 4096;

/**
 * WebGPU objects that only a garbage collection frees in Deno (command encoders, passes,
 * command buffers, bind groups, readbacks) the device creates before it asks V8 for a
 * major collection (src/gpu/collect.ts says why). Each holds about 1 KiB of wgpu memory,
 * so this bounds the uncollected memory to about 1 MiB; the MNIST MLP step creates about
 * five, so a collection (a few ms with the engine's small JS heap) runs every ~200 steps.
 * At 4096 (~800 steps) a 2-rank trainer's RSS rose and fell by ~5 MiB between a rank's
 * collections and its peaks crept up (+3.8 MiB over 8,000 steps); at 1024 it is flat
 * (bench/README.md "Memory").
 */
export const NATIVE_OBJECTS_PER_COLLECT = 1024;
