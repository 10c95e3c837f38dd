/**
 * Every kernel family's bindings, declared by name beside its Params mirror (src/gpu/kernel.ts),
 * match the `@binding(n) var<storage, access> name` lines of its shader: same names, same
 * slots, same access, none missing on either side; and every shader that binds storage has
 * a declaration. Slot numbers live nowhere else, so this is what keeps call sites honest.
 */
import "../../../src/index.ts";
import { type Access, registeredKernels, shaderSources } from "../../../src/gpu/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

/** A storage binding as a WGSL line declares it. */
interface WgslBinding {
  slot: number;
  access: Access;
  line: number;
}

/** The storage bindings of a shader's text, by variable name (`var<storage>` alone is read). */
export function storageBindings(text: string): Map<string, WgslBinding> {
  const out = new Map<string, WgslBinding>();
  text.split("\n").forEach((line, i) => {
    const m = /@binding\((\d+)\)\s+var<storage(?:\s*,\s*(read|read_write))?>\s+(\w+)/.exec(line);
    if (m) out.set(m[3], { slot: Number(m[1]), access: (m[2] ?? "read") as Access, line: i + 1 });
  });
  return out;
}

Deno.test("storageBindings reads name, slot and access of each storage line", () => {
  const text = [
    "@group(0) @binding(0) var<uniform> p: Params;",
    "@group(0) @binding(1) var<storage, read> x: array<f32>;",
    "@group(0) @binding(2) var<storage, read_write> y: array<f32>;",
    "@group(0) @binding(3) var<storage> z: array<u32>;",
  ].join("\n");
  assertEquals([...storageBindings(text)], [
    ["x", { slot: 1, access: "read", line: 2 }],
    ["y", { slot: 2, access: "read_write", line: 3 }],
    ["z", { slot: 3, access: "read", line: 4 }],
  ]);
});

Deno.test("every kernel family's bindings match its shader's @binding lines", () => {
  const kernels = registeredKernels();
  assert(kernels.length >= 20, `only ${kernels.length} kernel families registered`);
  for (const k of kernels) {
    const text = shaderSources().get(k.shader);
    assert(text !== undefined, `kernel() names shaders/${k.shader}.wgsl, which does not exist`);
    const wgsl = storageBindings(text);
    for (const [name, [slot, access]] of Object.entries(k.bindings)) {
      const b = wgsl.get(name);
      assert(
        b,
        `${k.shader}: binding "${name}" is declared in TS but shaders/${k.shader}.wgsl has no storage var "${name}"`,
      );
      assert(
        b.slot === slot && b.access === access,
        `${k.shader}: binding "${name}" is [${slot}, "${access}"] in TS, ` +
          `shaders/${k.shader}.wgsl:${b.line} says @binding(${b.slot}) ${b.access}`,
      );
    }
    for (const [name, b] of wgsl) {
      assert(
        name in k.bindings,
        `shaders/${k.shader}.wgsl:${b.line} binds "${name}" at ${b.slot}, which the TS declaration of ${k.shader} lacks`,
      );
    }
  }
});

Deno.test("every shader that binds storage has a kernel() declaration", () => {
  for (const [shader, text] of shaderSources()) {
    if (storageBindings(text).size === 0) continue;
    const found = registeredKernels().some((k) => k.shader === shader);
    assert(found, `shaders/${shader}.wgsl binds storage buffers but no kernel(...) declares them`);
  }
});
