/**
 * A participant of slab_test.ts's barrier tests: takes a slab and a list of barrier
 * generations to meet, answers with each outcome. A Web Worker, because `Atomics.wait`
 * blocks the thread that waits.
 */
import { barrier, type Slab, slabViews } from "../../../src/distributed/protocol/slab.ts";

const scope = globalThis as unknown as { onmessage: (e: MessageEvent) => void; postMessage(m: unknown): void };
scope.onmessage = async (e: MessageEvent) => {
  const { slab, generations, timeoutMs } = e.data as { slab: Slab; generations: number[]; timeoutMs: number };
  const ctrl = slabViews(slab).ctrl;
  const outcomes: string[] = [];
  for (const g of generations) {
    const o = await barrier(ctrl, slab.world, g, timeoutMs);
    outcomes.push(o);
    if (o !== "passed") break;
  }
  scope.postMessage(outcomes);
};
