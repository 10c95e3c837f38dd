/**
 * The demo's controls as one value: read from the form, preset from the page's URL query
 * (`?program=lenet&ranks=3&mode=cpu-async&epochs=2&batch=64&anchor=4&bf16=0&slow=1:3`), and
 * the data sizes (the "Data" controls, `?subset=2000&test=500`) that become the program
 * arguments.
 */
import type { ElCheMode } from "../src/index.ts";

export const PROGRAM_NAMES = ["logistic", "mlp", "lenet", "gpt-nano"] as const;
export type ProgramName = (typeof PROGRAM_NAMES)[number];
export const MODES = ["cpu-sync", "cpu-cadence", "cpu-async"] as const satisfies readonly ElCheMode[];
export type DemoMode = (typeof MODES)[number];
export const MAX_RANKS = 4;

export interface Settings {
  program: ProgramName;
  ranks: number;
  mode: DemoMode;
  epochs: number;
  batch: number;
  /** ElChe's initial anchor: batches of the slowest rank between reduces. */
  anchor: number;
  bf16: boolean;
  /** Rank made slower, or -1. */
  slowRank: number;
  slowFactor: number;
}

/** Train and test sample counts (the program arguments). */
export interface DataSizes {
  subset: number;
  test: number;
}

/** Images in MNIST's train and test files. */
const MNIST_TRAIN = 60_000, MNIST_TEST = 10_000;

/** Sizes when the URL does not say (shared with the program modules, which read them in each rank). */
export const DEFAULT_SIZES: DataSizes = { subset: 10_000, test: 1_000 };

function field<T extends HTMLElement>(form: HTMLFormElement, name: string): T {
  const el = form.elements.namedItem(name);
  if (!el) throw new Error(`demo: the form has no control named "${name}"`);
  return el as unknown as T;
}

function intIn(name: string, raw: string, min: number, max: number): number {
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
  }
  return v;
}

/**
 * The settings in the form.
 * @throws {RangeError} Naming the control whose value is out of range.
 */
export function readSettings(form: HTMLFormElement): Settings {
  const v = (name: string) => field<HTMLInputElement>(form, name).value;
  const ranks = intIn("Ranks", v("ranks"), 1, MAX_RANKS);
  const slow = v("slowRank");
  const slowRank = slow === "" ? -1 : intIn("Slow rank", slow, 0, MAX_RANKS - 1);
  if (slowRank >= ranks) {
    throw new RangeError(`Slow rank must be below the number of ranks (${ranks}), got ${slowRank}`);
  }
  const slowFactor = Number(v("slowFactor"));
  if (!(slowFactor >= 1 && slowFactor <= 20)) {
    throw new RangeError(`Slowdown factor must be in [1, 20], got ${JSON.stringify(v("slowFactor"))}`);
  }
  return {
    program: v("program") as ProgramName,
    ranks,
    mode: v("mode") as DemoMode,
    epochs: intIn("Epochs", v("epochs"), 1, 100),
    batch: intIn("Batch size", v("batch"), 1, 4096),
    anchor: intIn("Anchor", v("anchor"), 1, 1000),
    bf16: field<HTMLInputElement>(form, "bf16").checked,
    slowRank,
    slowFactor,
  };
}

/** Preset the form from the URL query (unknown or bad values are left at the form's defaults). */
export function presetFromQuery(form: HTMLFormElement, query: URLSearchParams): void {
  const set = (name: string, value: string | null, ok: (s: string) => boolean) => {
    if (value !== null && ok(value)) field<HTMLInputElement>(form, name).value = value;
  };
  const int = (lo: number, hi: number) => (s: string) => Number.isInteger(Number(s)) && +s >= lo && +s <= hi;
  set("program", query.get("program"), (s) => (PROGRAM_NAMES as readonly string[]).includes(s));
  set("ranks", query.get("ranks"), int(1, MAX_RANKS));
  set("mode", query.get("mode"), (s) => (MODES as readonly string[]).includes(s));
  set("epochs", query.get("epochs"), int(1, 100));
  set("batch", query.get("batch"), int(1, 4096));
  set("anchor", query.get("anchor"), int(1, 1000));
  const bf16 = query.get("bf16");
  if (bf16 !== null) field<HTMLInputElement>(form, "bf16").checked = bf16 !== "0" && bf16 !== "false";
  const slow = /^(\d):(\d+(?:\.\d+)?)$/.exec(query.get("slow") ?? "");
  if (slow) {
    field<HTMLSelectElement>(form, "slowRank").value = slow[1];
    field<HTMLInputElement>(form, "slowFactor").value = slow[2];
  }
  set("subset", query.get("subset"), int(1, MNIST_TRAIN));
  set("test", query.get("test"), int(1, MNIST_TEST));
}

/**
 * The data sizes in the form's "Data" controls.
 * @throws {RangeError} Naming the control whose value is not an integer in MNIST's range.
 */
export function readSizes(form: HTMLFormElement): DataSizes {
  const v = (name: string) => field<HTMLInputElement>(form, name).value;
  return {
    subset: intIn("Train images", v("subset"), 1, MNIST_TRAIN),
    test: intIn("Test images", v("test"), 1, MNIST_TEST),
  };
}

/**
 * The page's address for `s` and `sizes`: the query {@link presetFromQuery} and
 * {@link dataSizes} read back, other keys of `query` (`seqs`, `sampleChars`, …) kept. The page
 * reloads with it when the data sizes change after a program module loaded its data.
 */
export function settingsQuery(s: Settings, sizes: DataSizes, query: URLSearchParams): URLSearchParams {
  const q = new URLSearchParams(query);
  q.delete("join");
  const set: Record<string, string> = {
    program: s.program,
    ranks: String(s.ranks),
    mode: s.mode,
    epochs: String(s.epochs),
    batch: String(s.batch),
    anchor: String(s.anchor),
    bf16: s.bf16 ? "1" : "0",
    subset: String(sizes.subset),
    test: String(sizes.test),
  };
  for (const [k, v] of Object.entries(set)) q.set(k, v);
  if (s.slowRank >= 0) q.set("slow", `${s.slowRank}:${s.slowFactor}`);
  else q.delete("slow");
  return q;
}

/**
 * Train/test sizes from `?subset=&test=`.
 * @throws {RangeError} When one is given but not an integer in MNIST's range.
 */
export function dataSizes(query: URLSearchParams): DataSizes {
  const get = (key: keyof DataSizes, max: number) => {
    const raw = query.get(key);
    return raw === null ? DEFAULT_SIZES[key] : intIn(`?${key}=`, raw, 1, max);
  };
  return { subset: get("subset", MNIST_TRAIN), test: get("test", MNIST_TEST) };
}

/** A short description of a run for titles and file names. */
export function runName(s: Settings): string {
  return `${s.program}-${s.mode}-${s.ranks}r`;
}
