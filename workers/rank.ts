/**
 * The rank worker: takes its role from the worker's
 * `name`, attaches the comlink listener synchronously, says hello, then re-imports the
 * entry module (without awaiting it) to rebuild the builder's closures. No top-level
 * await anywhere in this module's static imports.
 */
import * as Comlink from "comlink";
import type { DdpBuilder } from "../src/distributed/run/builder.ts";
import { awaitBuilder, enterRankRole, type RankRole } from "../src/distributed/run/reentry.ts";
import { postHello } from "../src/distributed/protocol/messages.ts";
import type { CoordinatorSink, Frame, RankApi, RankSetup } from "../src/distributed/protocol/messages.ts";
import { forwardRankApi } from "../src/distributed/rank/rank_forward.ts";
import type { Module } from "../src/nn/mod.ts";

interface WorkerScope {
  name: string;
  postMessage(m: unknown): void;
}
const scope = globalThis as unknown as WorkerScope;
const role = JSON.parse(scope.name) as RankRole;
enterRankRole(role);

let runtime: RankApi | undefined;
let beat: ReturnType<typeof setInterval> | undefined;
const evaluation = import(/* @vite-ignore */ role.entry);
const ready = awaitBuilder<DdpBuilder<Module>>(role, evaluation);
ready.catch(() => {}); // reported through init()

function rt(): RankApi {
  if (!runtime) throw new Error(`rank ${role.rank}: not initialised`);
  return runtime;
}
const send = (f: Frame) => Comlink.transfer(f, [f.params.buffer, f.buffers.buffer]);

const api: RankApi = {
  async init(setup: RankSetup, sink: CoordinatorSink) {
    const builder = await ready;
    // The runtime class comes from the entry's copy of the library, so the model, its
    // tensors and the runtime share one set of classes even in a bundled build.
    runtime = builder.state.createRuntime();
    beat = setInterval(() => sink.heartbeat(role.rank), 1000);
    return runtime.init(setup, sink);
  },
  ...forwardRankApi(rt, send),
  async stop() {
    clearInterval(beat);
    await runtime?.stop();
  },
};

Comlink.expose(api);
postHello(scope, role.rank, role.session);
