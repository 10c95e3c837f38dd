/**
 * The in-process transport: a rank object (a `RankRuntime`, a test's fake rank) called
 * directly in this thread. Nothing is copied; events arrive synchronously.
 */
import type { RankApi } from "../../protocol/messages.ts";
import { dispatch, type RankCallName, type RankCalls, type RankListener, type RankTransport, sinkOf } from "../../protocol/transport.ts";

export class LocalTransport implements RankTransport {
  readonly messages = false;
  #listener?: RankListener;
  readonly #sink = sinkOf(() => this.#listener);

  constructor(readonly api: RankApi) {}

  listen(listener: RankListener): void {
    this.#listener = listener;
  }

  request<K extends RankCallName>(name: K, ...args: RankCalls[K]["args"]): Promise<RankCalls[K]["result"]> {
    return dispatch(this.api, this.#sink, name, args);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
