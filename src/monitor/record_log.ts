/**
 * flodl's `record_log(dir, max_bytes)`: the record stream appended as JSONL,
 * one file per tree node, bounded, rotating, and never able to stop training.
 */
import { checkPath, type FileStore } from "../io/mod.ts";
import { encodeRecord, type MonitorRecord } from "./record.ts";

/** Default per-node cap when `maxBytes` is 0: 32 MiB, as in flodl. */
export const DEFAULT_RECORD_LOG_BYTES = 32 * 1024 * 1024;

interface NodeLog {
  file: string;
  /** Bytes in the active segment; undefined until read from storage (or after an I/O error). */
  bytes: number | undefined;
  chain: Promise<void>;
  warned: boolean;
}

/** Options of {@link RecordLog}. */
export interface RecordLogOptions {
  /** Where swallowed errors are reported (default `console.warn`); called once per node. */
  warn?: (message: string) => void;
}

const enc = new TextEncoder();

/**
 * Append-only JSONL per node at `<dir>/<path>.log` (`.log` is appended, so a dotted host
 * name like `gpu1.lab` keeps its dots). Each node holds at most `maxBytes` in two
 * segments, the active `<path>.log` and the older `<path>.log.1`: before a line would
 * take the active segment past `maxBytes / 2`, the older segment is dropped and the
 * active one becomes `.1`. The byte count resumes from files already there.
 *
 * After construction nothing throws: an I/O error (or a record whose path is unsafe, or
 * a line longer than half the cap) is reported once per node through `warn` and the
 * line is dropped: monitoring can never kill training. Writes to one node are applied
 * in order (a promise chain); {@link flush} waits for all of them.
 *
 * @param storage Where the files go (Deno file system, OPFS, memory).
 * @param dir Folder of the logs, relative to the storage root.
 * @param maxBytes Per-node cap in bytes; 0 means 32 MiB.
 * @throws {RangeError} When `dir` is empty, absolute or has ""/"."/".." parts, or when
 *   `maxBytes` is not a non-negative integer.
 * @example
 * ```ts
 * import { MemoryStorage } from "../io/mod.ts";
 * import { RecordLog } from "./record_log.ts";
 * const log = new RecordLog(new MemoryStorage(), "runs/mnist/records", 1 << 20);
 * log.write({ v: 1, ts: 0, sev: "info", path: "root", kind: "node", epoch: 0, metrics: { loss: 1 },
 *   work: 4, children: 1, alive: 1 });
 * await log.flush(); // runs/mnist/records/root.log holds one line
 * ```
 */
export class RecordLog {
  /** Per-node cap in bytes over both segments (32 MiB when constructed with 0). */
  readonly maxBytes: number;
  readonly #storage: FileStore;
  readonly #dir: string;
  readonly #warn: (message: string) => void;
  readonly #nodes = new Map<string, NodeLog>();

  /** A log under `dir` of `storage`; nothing is read or written until the first record. */
  constructor(storage: FileStore, dir: string, maxBytes = 0, options: RecordLogOptions = {}) {
    checkPath(dir, "RecordLog dir");
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new RangeError(`RecordLog: maxBytes must be a non-negative integer (0 = 32 MiB), got ${maxBytes}`);
    }
    this.#storage = storage;
    this.#dir = dir.replace(/\/$/, "");
    this.maxBytes = maxBytes === 0 ? DEFAULT_RECORD_LOG_BYTES : maxBytes;
    this.#warn = options.warn ?? ((m) => console.warn(m));
  }

  /** The active segment's file for a node path (`<dir>/<path>.log`). */
  fileOf(path: string): string {
    return `${this.#dir}/${path}.log`;
  }

  /** Queue one record (never throws, never rejects). */
  write(record: MonitorRecord): void {
    const node = this.#node(record.path);
    if (!node) return;
    let line: Uint8Array;
    try {
      line = enc.encode(encodeRecord(record) + "\n");
    } catch (e) {
      this.#fail(node, `cannot encode a record for ${record.path}`, e);
      return;
    }
    node.chain = node.chain.then(() => this.#append(node, line));
  }

  /** Queue several records. */
  writeAll(records: Iterable<MonitorRecord>): void {
    for (const r of records) this.write(r);
  }

  /** Wait until every queued line is written (or dropped). Never rejects. */
  async flush(): Promise<void> {
    await Promise.all([...this.#nodes.values()].map((n) => n.chain));
  }

  #node(path: string): NodeLog | undefined {
    let node = this.#nodes.get(path);
    if (node) return node;
    let file: string;
    try {
      file = this.fileOf(path);
      checkPath(file, "record path");
    } catch (e) {
      node = { file: "", bytes: 0, chain: Promise.resolve(), warned: false };
      this.#nodes.set(path, node);
      this.#fail(node, `RecordLog: refusing record path ${JSON.stringify(path)}`, e);
      return undefined;
    }
    node = { file, bytes: undefined, chain: Promise.resolve(), warned: false };
    this.#nodes.set(path, node);
    return node;
  }

  async #append(node: NodeLog, line: Uint8Array): Promise<void> {
    const half = Math.floor(this.maxBytes / 2);
    if (line.length > half) {
      this.#fail(
        node,
        `RecordLog: a ${line.length}-byte record does not fit half the ${this.maxBytes}-byte cap of ${node.file}`,
      );
      return;
    }
    try {
      node.bytes ??= (await this.#storage.size(node.file)) ?? 0;
      if (node.bytes + line.length > half) {
        await this.#storage.remove(`${node.file}.1`);
        await this.#storage.rename(node.file, `${node.file}.1`);
        node.bytes = 0;
      }
      await this.#storage.append(node.file, line);
      node.bytes += line.length;
    } catch (e) {
      node.bytes = undefined; // unknown after a failure: read it again next time
      this.#fail(node, `RecordLog: cannot write ${node.file} in ${this.#storage.where}`, e);
    }
  }

  #fail(node: NodeLog, message: string, cause?: unknown): void {
    if (node.warned) return;
    node.warned = true;
    const why = cause instanceof Error ? `: ${cause.message}` : cause !== undefined ? `: ${String(cause)}` : "";
    try {
      this.#warn(`${message}${why} (further errors for this node are not reported; training continues)`);
    } catch {
      // a throwing warn hook must not reach training either
    }
  }
}
