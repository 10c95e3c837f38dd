/**
 * The worker transport: a rank in a Web Worker (`workers/rank.ts`) reached through
 * comlink. The only file of the coordinator that knows comlink: the rank's sink crosses as
 * a `Comlink.proxy` here, and nowhere else does a proxy or function cross the seam.
 */
import * as Comlink from "comlink";
import type { Hello, RankApi } from "../../protocol/messages.ts";
import { dispatch, type RankCallName, type RankCalls, type RankListener, type RankTransport, sinkOf } from "../../protocol/transport.ts";

export class WorkerTransport implements RankTransport {
  readonly messages = true;
  #listener?: RankListener;
  #remote: RankApi;
  #closed = false;
  readonly #sink = Comlink.proxy(sinkOf(() => this.#listener));

  /**
   * @param remote The rank's API; default a comlink wrap of `worker` (tests pass their own).
   */
  constructor(readonly rank: number, readonly worker: Worker, remote?: RankApi) {
    this.#remote = remote ?? Comlink.wrap<RankApi>(worker) as unknown as RankApi;
    worker.addEventListener("error", (e: ErrorEvent) => {
      e.preventDefault();
      this.#listener?.down(`rank ${rank}: its worker died: ${e.message}`);
    });
    worker.addEventListener("messageerror", () => {
      this.#listener?.down(`rank ${rank}: a message from its worker could not be deserialized`);
    });
  }

  listen(listener: RankListener): void {
    this.#listener = listener;
  }

  request<K extends RankCallName>(name: K, ...args: RankCalls[K]["args"]): Promise<RankCalls[K]["result"]> {
    return dispatch(this.#remote, this.#sink, name, args);
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    (this.#remote as unknown as { [Comlink.releaseProxy]?: () => void })[Comlink.releaseProxy]?.();
    this.worker.terminate();
    return Promise.resolve();
  }
}

/** Resolve on the worker's hello (its comlink listener is attached), reject on a worker error or timeout. */
export function awaitHello(worker: Worker, rank: number, session: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      worker.removeEventListener("message", onMessage);
      worker.removeEventListener("error", onError);
      if (err) reject(err);
      else resolve();
    };
    const onMessage = (e: MessageEvent) => {
      const m = e.data as Partial<Hello>;
      if (m?.flodlHello && m.rank === rank && m.session === session) done();
    };
    const onError = (e: ErrorEvent) => {
      e.preventDefault();
      done(new Error(`rank ${rank}: the worker failed to load: ${e.message}`));
    };
    const timer = setTimeout(
      () => done(new Error(`rank ${rank}: the worker did not start within ${timeoutMs} ms (no hello)`)),
      timeoutMs,
    );
    worker.addEventListener("message", onMessage);
    worker.addEventListener("error", onError);
  });
}
