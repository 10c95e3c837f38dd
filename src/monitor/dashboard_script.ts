/**
 * The dashboard view as one script: its modules (the `.js` files of this folder, from
 * dashboard_view.js down its imports) joined into the text the saved HTML inlines in one
 * `<script type="module">` (a page whose CSP fetches nothing cannot import a second
 * module). Each module comes after the modules it imports, without its import lines: in
 * one script their exports are simply names in scope.
 *
 * That asks the modules for little (dashboard_view.js states it): imports between them
 * as `import { a, b } from "./x.js";`, nothing renamed, no other import or re-export, and
 * top-level names unique across all of them (a clash would be a SyntaxError in the page;
 * test/unit/monitor/dashboard_script_test.ts evaluates the joined text as a module).
 */

/** The module the page's boot code uses (`DashboardView`, `reviveNonFinite` in scope). */
export const VIEW_ENTRY = "dashboard_view.js";

/** An import of a sibling view module: names in braces (possibly over several lines), then the file. */
const SIBLING_IMPORT = /^import\s*\{([^}]*)\}\s*from\s*"\.\/([a-z_]+\.js)";[ \t]*\r?\n/gm;
/** A one-line doc comment holding a JSDoc import tag: types for the checker, nothing for the page. */
const TYPE_IMPORT = /^\/\*\* @import [^\n]*\*\/[ \t]*\r?\n/gm;
/** Any other import or re-export statement at the start of a line (lines of a doc comment start with `*`). */
const OTHER_MODULE_SYNTAX = /^\s*(import\b|export\s*(\*|\{[^}]*\}\s*from\b))/m;

/**
 * Join the view's modules into one script, each after the modules it imports.
 * @param read The text of a view module by file name ("dashboard_view.js"); it throws or
 *   returns undefined for a file it does not have.
 * @returns The script: every module reached from {@link VIEW_ENTRY}, without its sibling
 *   imports and its JSDoc import tags (the page has no use for types).
 * @throws {Error} For a missing module, an import cycle, a renamed import, or an import the
 *   joined script could not keep, naming the file and the statement.
 * @example
 * ```ts ignore
 * const js = viewScript((file) => Deno.readTextFileSync(new URL(file, import.meta.url)));
 * ```
 */
export function viewScript(read: (file: string) => string | undefined): string {
  const done = new Set<string>();
  const out: string[] = [];
  const visit = (file: string, from: string[]) => {
    if (done.has(file)) return;
    if (from.includes(file)) {
      throw new Error(`Cannot inline the dashboard view: import cycle ${[...from, file].join(" -> ")}`);
    }
    const text = read(file);
    if (text === undefined) {
      throw new Error(
        `Cannot inline the dashboard view: no module "${file}" (imported by ${from.at(-1) ?? "the page"})`,
      );
    }
    const body = text.replace(TYPE_IMPORT, "").replace(SIBLING_IMPORT, (statement, names: string, dep: string) => {
      if (/\bas\b/.test(names)) {
        throw new Error(
          `Cannot inline ${file}: a renamed import cannot be joined into one script: ${statement.trim()}`,
        );
      }
      visit(dep, [...from, file]);
      return "";
    });
    const other = body.match(OTHER_MODULE_SYNTAX);
    if (other) {
      const line = body.slice(other.index).split("\n", 1)[0];
      throw new Error(
        `Cannot inline ${file}: only imports of sibling modules (import { a } from "./x.js";) can be joined, got ${line.trim()}`,
      );
    }
    done.add(file);
    out.push(body);
  };
  visit(VIEW_ENTRY, []);
  return out.join("\n");
}
