/**
 * What a remote rank says when it joins a run (the NATS link's hello), and the
 * coordinator's check of it. A worker rank re-enters the coordinator's own module, so it
 * cannot run another program; a remote rank is a process or tab elsewhere that may run
 * another version of the program, another model size or another data subset. Each of
 * these is refused at join, naming the rank and the item, before the rank is sent any work.
 */
import type { LayoutTable } from "./messages.ts";

/** The hello of a remote rank (plain data; it crosses the link as JSON). */
export interface RemoteHello {
  /** The machine's host name ("" when the runtime does not tell, as in a browser tab). */
  host: string;
  /** Adapter description of the rank's GPU. */
  adapter: string;
  /** The program: the entry module's file name and the builder's line:col in it. */
  program: string;
  /** Parameter and buffer counts and a hash of every tensor's name and shape. */
  layout: LayoutDigest;
  /** Training samples of the rank's dataset. */
  datasetLen: number;
  /** The wire dtypes the rank can pack frames in. */
  wire: ("bf16" | "f32")[];
}

/** A layout in a few fields: equal digests mean the same tensors in the same order. */
export interface LayoutDigest {
  /** Parameter values of the model, all tensors together (elements). */
  paramCount: number;
  /** Buffer values of the model (BatchNorm running stats), all tensors together (elements). */
  bufferCount: number;
  /** FNV-1a (32-bit, hex) of the tensors' names and shapes, parameters then buffers. */
  hash: string;
}

/** What the coordinator expects of every joining rank. */
export interface JoinExpectation {
  program: string;
  layout: LayoutDigest;
  datasetLen: number;
  wire: "bf16" | "f32";
}

/** FNV-1a, 32-bit: a digest for equality (not security: the link's HMAC is that). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** The digest of a layout table. */
export function layoutDigest(l: LayoutTable): LayoutDigest {
  const text = JSON.stringify([l.params.map((e) => [e.name, e.shape]), l.buffers.map((e) => [e.name, e.shape])]);
  return { paramCount: l.paramCount, bufferCount: l.bufferCount, hash: fnv1a(text) };
}

/** `file.ts:line:col` of a call site URL: the same program on two machines has two paths but one name. */
export function programId(site: { url: string; line: number; col: number }): string {
  const file = site.url.replace(/[?#].*$/, "").split("/").pop() || site.url;
  return `${file}:${site.line}:${site.col}`;
}

/**
 * Check a remote rank's hello against the run.
 * @returns Why the rank is refused (naming the rank and the item: expected vs sent), or undefined.
 * @example
 * ```ts
 * import { checkRemoteHello } from "./remote_hello.ts";
 * const want = { program: "train.ts:50:30", layout: { paramCount: 10, bufferCount: 0, hash: "0badcafe" }, datasetLen: 100, wire: "bf16" as const };
 * const why = checkRemoteHello(2, { ...want, host: "box", adapter: "gpu", wire: ["bf16", "f32"], datasetLen: 99 }, want);
 * if (!why?.includes("rank 2") || !why.includes("datasetLen")) throw new Error(why);
 * ```
 */
export function checkRemoteHello(rank: number, hello: unknown, want: JoinExpectation): string | undefined {
  const who = `rank ${rank}`;
  if (hello === null || typeof hello !== "object") return `${who}: refused at join: its hello is ${JSON.stringify(hello)}, not a rank's hello`;
  const h = hello as Partial<RemoteHello>;
  const at = h.host ? ` (host ${h.host})` : "";
  if (h.program !== want.program) {
    return `${who}${at}: refused at join: program ${JSON.stringify(h.program)}, the run's is ${JSON.stringify(want.program)} ` +
      "(a remote rank must run the coordinator's program: same entry module, builder at the same line)";
  }
  if (h.datasetLen !== want.datasetLen) {
    return `${who}${at}: refused at join: datasetLen ${h.datasetLen}, the run's is ${want.datasetLen} (same data and subset flags on every rank)`;
  }
  const l = h.layout;
  if (!l || l.paramCount !== want.layout.paramCount || l.bufferCount !== want.layout.bufferCount || l.hash !== want.layout.hash) {
    return `${who}${at}: refused at join: model layout ${JSON.stringify(l)}, the run's is ${JSON.stringify(want.layout)} ` +
      "(parameter/buffer counts or shapes differ: same model flags on every rank)";
  }
  if (!Array.isArray(h.wire) || !h.wire.includes(want.wire)) {
    return `${who}${at}: refused at join: wire dtypes ${JSON.stringify(h.wire)}, the run's wire is "${want.wire}"`;
  }
  return undefined;
}
