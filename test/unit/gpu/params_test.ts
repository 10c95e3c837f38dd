/**
 * Every TS mirror of a WGSL uniform struct lists the same fields, types and order as
 * the struct text in shaders/, and every struct in shaders/ that
 * is bound as a uniform has a mirror.
 */
import "../../../src/index.ts";
import { registeredLayouts, shaderSources } from "../../../src/gpu/mod.ts";
import { assert, assertEquals } from "../../util/assert.ts";

function structFields(text: string, name: string): [string, string][] | undefined {
  const m = new RegExp(`struct\\s+${name}\\s*\\{([^}]*)\\}`).exec(text);
  if (!m) return undefined;
  const body = m[1].replace(/\/\/[^\n]*/g, "");
  return body.split(/[,;\n]/).map((f) => f.trim()).filter(Boolean).map((f) => {
    const [n, t] = f.split(":").map((s) => s.trim());
    return [n, t] as [string, string];
  });
}

Deno.test("every params mirror matches its WGSL struct field for field", () => {
  const layouts = registeredLayouts();
  assert(layouts.length >= 4, `only ${layouts.length} layouts registered`);
  for (const l of layouts) {
    const text = shaderSources().get(l.shader);
    assert(text !== undefined, `mirror of ${l.struct} names shaders/${l.shader}.wgsl, which does not exist`);
    const fields = structFields(text, l.struct);
    assert(fields, `shaders/${l.shader}.wgsl has no struct ${l.struct}`);
    assertEquals(fields, Object.entries(l.fields), `${l.shader}.wgsl ${l.struct}`);
  }
});

Deno.test("every uniform struct in shaders/ has a TS mirror", () => {
  for (const [shader, text] of shaderSources()) {
    for (const m of text.matchAll(/var<uniform>\s+\w+\s*:\s*(\w+)/g)) {
      const found = registeredLayouts().some((l) => l.shader === shader && l.struct === m[1]);
      assert(found, `shaders/${shader}.wgsl binds uniform struct ${m[1]} with no layout("${shader}", "${m[1]}", ...) mirror`);
    }
  }
});
