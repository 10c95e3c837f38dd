/**
 * viewScript (src/monitor/dashboard_script.ts): the view's modules joined into the one
 * script the saved HTML inlines. The real modules join into a script that evaluates as a
 * module and exports what the page's boot code uses; a module it cannot join is refused,
 * naming the file and the statement.
 */
import { VIEW_ENTRY, viewScript } from "../../../src/monitor/dashboard_script.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const monitor = new URL("../../../src/monitor/", import.meta.url);
const fromDisk = (file: string) => Deno.readTextFileSync(new URL(file, monitor));

Deno.test("viewScript: every .js module of src/monitor, once each, each after the modules it imports", () => {
  const js = viewScript(fromDisk);
  const files = [...Deno.readDirSync(monitor)].map((e) => e.name).filter((n) => n.endsWith(".js")).sort();
  // Each module opens with its `// @ts-check` line: one per file, in the joined order.
  assertEquals(js.match(/^\/\/ @ts-check$/gm)?.length, files.length, `modules joined of ${files.join(", ")}`);
  assert(!/^\s*import\s*\{/m.test(js), "no import statement left");
  assert(!js.includes("@import"), "no JSDoc import tag left (the page's CSS test would take it for one)");
  // A module's place: its doc comment's first line (" * The dashboard's …"), one of its own.
  const at = (file: string) => js.indexOf(fromDisk(file).split("\n").find((l) => l.startsWith(" * "))!);
  for (const file of files) {
    for (const m of fromDisk(file).matchAll(/^import\s*\{[^}]*\}\s*from\s*"\.\/([a-z_]+\.js)";/gm)) {
      assert(at(m[1]) < at(file), `${m[1]} comes before ${file}, which imports it`);
    }
  }
  assert(js.trimEnd().endsWith(fromDisk(VIEW_ENTRY).trimEnd().split("\n").at(-1)!), `${VIEW_ENTRY} comes last`);
});

Deno.test("viewScript: the joined view evaluates as one module and exports what the saved page uses", async () => {
  const js = viewScript(fromDisk);
  const m = await import(`data:text/javascript;base64,${btoa(String.fromCharCode(...new TextEncoder().encode(js)))}`);
  for (const name of ["DashboardView", "reviveNonFinite", "BatchSeries", "RankActivity", "fitRange"]) {
    assertEquals(typeof m[name], "function", name);
  }
  assertEquals(m.fitRange([0.9], true), [0.88, 0.92], "a function of the joined script runs");
});

Deno.test("viewScript: refuses a renamed import, another import, a cycle and a missing module, naming the file", () => {
  const join = (files: Record<string, string>) => () => viewScript((f) => files[f]);
  assertThrows(
    join({ [VIEW_ENTRY]: 'import { a as b } from "./x.js";\n', "x.js": "export const a = 1;\n" }),
    Error,
    `Cannot inline ${VIEW_ENTRY}: a renamed import cannot be joined into one script: import { a as b }`,
  );
  assertThrows(
    join({ [VIEW_ENTRY]: 'import uPlot from "uplot";\n' }),
    Error,
    `Cannot inline ${VIEW_ENTRY}: only imports of sibling modules (import { a } from "./x.js";) can be joined, got import uPlot from "uplot";`,
  );
  assertThrows(
    join({ [VIEW_ENTRY]: 'export { a } from "./x.js";\n', "x.js": "export const a = 1;\n" }),
    Error,
    'got export { a } from "./x.js";',
  );
  assertThrows(
    join({ [VIEW_ENTRY]: 'import { a } from "./x.js";\n', "x.js": `import { b } from "./${VIEW_ENTRY}";\n` }),
    Error,
    `import cycle ${VIEW_ENTRY} -> x.js -> ${VIEW_ENTRY}`,
  );
  assertThrows(
    join({ [VIEW_ENTRY]: 'import { a } from "./gone.js";\n' }),
    Error,
    `no module "gone.js" (imported by ${VIEW_ENTRY})`,
  );
});
