/**
 * Where our W2 step spends its time, without touching src/: the host side (recording the
 * step: autograd, bind groups, encoding, submit), the readback latency, and each kernel's
 * GPU time. Kernels are timed by capturing the dispatches of one step (wrapping
 * `device.dispatch`/`copy`/`clear` on the instance) and replaying each one K times in one
 * submit; an empty submit-and-wait is the baseline that is subtracted.
 *
 * NOTE: replayed kernels run on the step's live buffers (Adam updates its parameter K more
 * times); the profile uses its own model, never the timed ones.
 */
import type { Device } from "../src/index.ts";
import type { Dispatch } from "../src/engine.ts";
import { buildMlp } from "./ours.ts";
import { median, round } from "./workloads.ts";

/** One kernel of the step and its GPU time. */
export interface KernelTime {
  /** `<shader>/<entry>` or `copy` / `clear`. */
  kernel: string;
  /** Family: the shader file, or copy / clear. */
  family: string;
  /** Shapes that identify the launch (m,n,k of a matmul, the params of others). */
  detail: string;
  /** Floating-point operations of the launch where counted: matmul 2·m·n·k per output matrix;
   *  attention per visible (query, key) pair 4·d forward, 6·d dq, 8·d dk+dv (what the kernels
   *  execute, recomputed scores included). */
  flop?: number;
  ms: number;
}

/** The kernels of one captured step, each timed alone. */
export interface KernelProfile {
  /** Kernels (dispatches, copies, clears) per step. */
  launches: number;
  /** Σ kernel ms. */
  kernelMs: number;
  kernels: KernelTime[];
  /** kernelMs per family, largest first. */
  families: { family: string; launches: number; ms: number; share: number }[];
}

export interface StepProfile {
  /** Median wall ms of a step recorded, submitted and awaited alone (GPU idle before). */
  stepMs: number;
  /** Median host ms to record and submit one step (autograd, encoding, submit; no waiting). */
  hostMs: number;
  /** Median ms of an empty submit + onSubmittedWorkDone. */
  syncMs: number;
  /** Median ms to read the 4-byte loss back with the GPU idle (copy, submit, mapAsync). */
  readMs: number;
  /** Median ms to read every parameter back (200,710 floats: what a rank's snapshot for a reduce reads). */
  paramsReadMs: number;
  /** Kernels (dispatches, copies, clears) per step. */
  launches: number;
  /** Σ kernel ms; stepMs − kernelMs is what no kernel accounts for. */
  kernelMs: number;
  kernels: KernelTime[];
  /** kernelMs per family, largest first. */
  families: { family: string; launches: number; ms: number; share: number }[];
}

type Captured = { kind: "dispatch"; d: Dispatch } | { kind: "copy"; args: Parameters<Device["copy"]> } | {
  kind: "clear";
  args: Parameters<Device["clear"]>;
};

const REPEAT = 20;
const SAMPLES = 9;

/** Visible (query, key) pairs of an attention launch: all, or i + 1 keys per query row when causal. */
function attentionPairs(v: Record<string, number>): number {
  const bh = v.rows / v.tq;
  if (!v.causal) return bh * v.tq * v.tk;
  // Query i sees keys 0..min(i, tk - 1).
  return bh * (v.tq <= v.tk ? v.tq * (v.tq + 1) / 2 : v.tk * (v.tk + 1) / 2 + (v.tq - v.tk) * v.tk);
}

function flopOf(c: Captured): number | undefined {
  if (c.kind !== "dispatch") return undefined;
  const { shader, entry, params, groups } = c.d;
  const v = (params?.values ?? {}) as Record<string, number>;
  if (shader === "matmul") return 2 * v.m * v.n * v.k * (groups[2] ?? 1);
  if (shader === "attention") {
    // The dkv launch has one row per key: rows = B·H·Tk.
    const pairs = attentionPairs(entry === "attention_backward_dkv" ? { ...v, rows: (v.rows / v.tk) * v.tq } : v);
    const perPair = entry === "attention_forward"
      ? 4
      : entry === "attention_backward_dq"
      ? 6
      : entry === "attention_backward_dkv"
      ? 8
      : 0;
    return perPair ? perPair * v.d * pairs : undefined;
  }
  return undefined;
}

function describe(c: Captured): Omit<KernelTime, "ms"> {
  if (c.kind === "copy") return { kernel: "copy", family: "copy", detail: `${c.args[4]} B` };
  const flop = flopOf(c);
  if (c.kind === "clear") return { kernel: "clear", family: "clear", detail: `${c.args[2] ?? c.args[0].size} B` };
  const { shader, entry, params, groups, overrides } = c.d;
  const v = params?.values ?? {};
  const detail = shader === "matmul"
    ? `${v.m}×${v.k}·${v.k}×${v.n}${overrides?.TA ? " Aᵀ" : ""}${overrides?.TB ? " Bᵀ" : ""}${
      overrides?.ACT ? " +relu" : ""
    }${entry.includes("_mask") ? " ·relu′ mask" : ""}`
    : Object.entries(v).filter(([, x]) => x !== 0).slice(0, 4).map(([k, x]) =>
      `${k}=${Number.isInteger(x) ? x : +x.toPrecision(4)}`
    ).join(" ") ||
      `groups ${groups.join("×")}`;
  return { kernel: `${shader}/${entry}`, family: shader, detail, ...(flop ? { flop } : {}) };
}

export async function timeMedian(n: number, f: () => Promise<void>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await f();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

/** Profile our W2 step (batch 64, 784-256-10, Adam) on `device`. */
export async function profileOurs(device: Device): Promise<StepProfile> {
  const m = buildMlp(device);
  try {
    for (let i = 0; i < 3; i++) {
      m.record();
      await device.sync();
      device.endStep();
    }
    const syncMs = await timeMedian(SAMPLES, () => device.sync());
    const hosts: number[] = [];
    const stepMs = await timeMedian(SAMPLES, async () => {
      const t0 = performance.now();
      m.record();
      device.flush();
      hosts.push(performance.now() - t0);
      await device.sync();
      device.endStep();
    });
    const reads: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const loss = m.record();
      await device.sync();
      const t0 = performance.now();
      await loss.toArray();
      reads.push(performance.now() - t0);
      device.endStep();
    }

    const paramsReadMs = await timeMedian(SAMPLES, async () => {
      await Promise.all(m.model.parameters().map((p) => p.data.toArray()));
    });

    const { launches, kernelMs, kernels, families } = await profileKernels(device, () => m.record(), syncMs);
    return {
      stepMs: round(stepMs, 2),
      hostMs: round(median(hosts), 2),
      syncMs: round(syncMs, 2),
      readMs: round(median(reads), 2),
      paramsReadMs: round(paramsReadMs, 2),
      launches,
      kernelMs,
      kernels,
      families,
    };
  } finally {
    m.dispose();
    device.endStep();
  }
}

/**
 * Capture the launches (dispatches, copies, clears) of one `record()` (a step recorded on
 * `device`), then replay each one `repeat` (default 20) times in one submit on the live buffers and take
 * its GPU time (median of 3, minus `syncMs`, an empty submit-and-wait). Ends the step.
 * NOTE: replaying updates parameters again (an optimizer kernel runs REPEAT more times):
 * profile a model that is not being measured otherwise.
 */
export async function profileKernels(
  device: Device,
  record: () => unknown,
  syncMs: number,
  repeat = REPEAT,
): Promise<KernelProfile> {
  const captured: Captured[] = [];
  const dev = device as unknown as Record<string, unknown>;
  const orig = {
    dispatch: device.dispatch.bind(device),
    copy: device.copy.bind(device),
    clear: device.clear.bind(device),
  };
  dev.dispatch = (d: Dispatch) => (captured.push({ kind: "dispatch", d }), orig.dispatch(d));
  dev.copy = (...args: Parameters<Device["copy"]>) => (captured.push({ kind: "copy", args }), orig.copy(...args));
  dev.clear = (...args: Parameters<Device["clear"]>) => (captured.push({ kind: "clear", args }), orig.clear(...args));
  try {
    record();
  } finally {
    delete dev.dispatch;
    delete dev.copy;
    delete dev.clear;
  }
  await device.sync();
  const kernels: KernelTime[] = [];
  for (const c of captured) {
    const ms = await timeMedian(3, async () => {
      for (let r = 0; r < repeat; r++) {
        if (c.kind === "dispatch") orig.dispatch(c.d);
        else if (c.kind === "copy") orig.copy(...c.args);
        else orig.clear(...c.args);
      }
      await device.sync();
    });
    kernels.push({ ...describe(c), ms: round(Math.max(0, ms - syncMs) / repeat, 3) });
  }
  device.endStep();
  const kernelMs = kernels.reduce((a, k) => a + k.ms, 0);
  const fam = new Map<string, { launches: number; ms: number }>();
  for (const k of kernels) {
    const f = fam.get(k.family) ?? { launches: 0, ms: 0 };
    f.launches++;
    f.ms += k.ms;
    fam.set(k.family, f);
  }
  const families = [...fam].map(([family, f]) => ({
    family,
    launches: f.launches,
    ms: round(f.ms, 2),
    share: round(f.ms / kernelMs, 3),
  })).sort((a, b) => b.ms - a.ms);
  return { launches: captured.length, kernelMs: round(kernelMs, 2), kernels, families };
}
