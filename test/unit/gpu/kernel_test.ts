/**
 * launch() (src/gpu/kernel.ts), without an adapter: names become slots, params are the
 * family's defaults overridden by the call, tensors bind their buffer, an empty grid records
 * nothing, and bad declarations or names are refused naming the shader and the name.
 */
import { type Device, type Dispatch, kernel, launch, layout } from "../../../src/gpu/mod.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

const P = layout("unit_kernel_test", "Params", { n: "u32", scale: "f32" });
const K = kernel(P, { x: [1, "read"], y: [2, "read_write"], dy: [5, "read"] }, { scale: 1 });

/** A device that only records what it was asked to dispatch. */
function recorder(): { device: Device; seen: Dispatch[] } {
  const seen: Dispatch[] = [];
  return { device: { dispatch: (d: Dispatch) => seen.push(d) } as unknown as Device, seen };
}
const buf = (label: string) => ({ label }) as unknown as GPUBuffer;

Deno.test("launch binds by name at the declared slots, over the family's default params", () => {
  const { device, seen } = recorder();
  const x = buf("x"), y = buf("y"), dy = buf("dy");
  launch(device, K, {
    entry: "k_forward",
    params: { n: 7 },
    io: { x: { buffer: x }, y, dy },
    groups: [3],
    overrides: { WG: 32 },
  });
  assertEquals(seen.length, 1);
  const d = seen[0];
  assertEquals([d.shader, d.entry, d.overrides, d.groups], ["unit_kernel_test", "k_forward", { WG: 32 }, [3]]);
  assertEquals(d.params?.values, { scale: 1, n: 7 });
  assertEquals([d.buffers[1] === x, d.buffers[2] === y, d.buffers[5] === dy], [true, true, true]);
  assertEquals(Object.keys(d.buffers), ["1", "2", "5"]);
});

Deno.test("launch records nothing for an empty grid and binds no uniform without params", () => {
  const { device, seen } = recorder();
  launch(device, K, { entry: "k_forward", params: { n: 0 }, io: { x: buf("x") }, groups: [0, 1] });
  assertEquals(seen.length, 0);
  launch(device, K, { entry: "k_pick", io: { x: buf("x") }, groups: [1] });
  assertEquals(seen[0].params, undefined);
});

Deno.test("launch refuses a binding name the family does not declare, naming shader, entry and name", () => {
  const { device } = recorder();
  const io = { x: buf("x"), dx: buf("dx") } as unknown as Record<"x", GPUBuffer>;
  assertThrows(
    () => launch(device, K, { entry: "k_backward", params: { n: 1 }, io, groups: [1] }),
    TypeError,
    'unit_kernel_test/k_backward: no binding "dx" in shaders/unit_kernel_test.wgsl (known: x, y, dy)',
  );
});

Deno.test("kernel refuses two names on one slot and a second, different declaration of a family", () => {
  const Q = layout("unit_kernel_test_q", "Params", { n: "u32" });
  assertThrows(
    () => kernel(Q, { a: [1, "read"], b: [1, "read_write"] }),
    Error,
    'shaders/unit_kernel_test_q.wgsl: bindings "a" and "b" both declare slot 1',
  );
  assertThrows(
    () => kernel(P, { x: [1, "read"] }),
    Error,
    "Two different binding declarations of shaders/unit_kernel_test.wgsl",
  );
});
