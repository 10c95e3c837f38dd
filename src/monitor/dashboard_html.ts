/**
 * flodl's `save_dashboard(path)` and `dashboard_theme`: one self-contained HTML
 * file holding the data (JSON), uPlot, the view script and every style inline. It opens
 * from file:// without a server and makes no request: its Content-Security-Policy is
 * `default-src 'none'`, so even a stray URL could not be fetched.
 */
import { checkPath, type FileStore } from "../io/mod.ts";
import { dashboardAssets } from "./dashboard_assets.ts";
import type { DashboardData, DashboardTheme } from "./dashboard_data.ts";
import { stringifyFinite } from "./json.ts";

/** Options of {@link renderDashboardHtml} and {@link saveDashboard}. */
export interface DashboardHtmlOptions {
  /** "light" | "dark" pin the theme; "auto" or unset follow `prefers-color-scheme`. */
  theme?: DashboardTheme;
  /** Page title and heading when the data has none. */
  title?: string;
}

const THEMES: readonly string[] = ["light", "dark", "auto"];
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Script text safe inside `<script>`: `</script` cannot close the element early.
 * NOTE: `<\/` means the same as `</` inside JS strings, templates and regexes, where
 * such text can occur; `<!--` would switch the HTML parser's script state, so refuse it.
 */
function scriptText(js: string, what: string): string {
  if (js.includes("<!--")) throw new Error(`Cannot inline ${what}: it contains "<!--"`);
  return js.replace(/<\/(script)/gi, "<\\/$1");
}

/** JSON safe inside `<script type="application/json">` (no `<` at all; same value once parsed). */
function jsonText(data: unknown): string {
  return stringifyFinite(data).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/**
 * Render the dashboard as one self-contained HTML page.
 * @throws {RangeError} When `theme` is not "light", "dark" or "auto".
 * @throws {TypeError} When `data.worldSize` is not an integer >= 1 or `data.epochs` is not an array.
 * @example
 * ```ts
 * import { renderDashboardHtml } from "./dashboard_html.ts";
 * const html = renderDashboardHtml({ worldSize: 1, epochs: [] }, { theme: "dark", title: "mnist" });
 * html.startsWith("<!doctype html>"); // true
 * ```
 */
export function renderDashboardHtml(data: DashboardData, options: DashboardHtmlOptions = {}): string {
  const theme = options.theme ?? "auto";
  if (!THEMES.includes(theme)) {
    throw new RangeError(`renderDashboardHtml: theme must be "light", "dark" or "auto", got ${JSON.stringify(theme)}`);
  }
  if (!Number.isInteger(data?.worldSize) || data.worldSize < 1) {
    throw new TypeError(`renderDashboardHtml: data.worldSize must be an integer >= 1, got ${data?.worldSize}`);
  }
  if (!Array.isArray(data.epochs)) {
    throw new TypeError(`renderDashboardHtml: data.epochs must be an array, got ${typeof data.epochs}`);
  }
  const a = dashboardAssets();
  const title = data.title ?? options.title ?? "flodl training run";
  const boot = `
const node = document.getElementById("flodl-dashboard-data");
const data = JSON.parse(node.textContent, reviveNonFinite);
const view = new DashboardView(document.getElementById("flodl-dashboard"),
  { theme: ${jsonText(theme)}, title: ${jsonText(title)}, uPlot: globalThis.uPlot });
view.setData(data);
globalThis.flodlDashboard = view;
`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="flodl-webgpu monitor">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>body{margin:0}</style>
<style>${a.uplotCss.replace(/<\/(style)/gi, "<\\/$1")}</style>
<script>${scriptText(a.uplotJs, "uPlot")}</script>
</head>
<body>
<main id="flodl-dashboard"></main>
<script type="application/json" id="flodl-dashboard-data">${jsonText(data)}</script>
<script type="module">
${scriptText(a.viewJs, "the dashboard view script")}
${boot}</script>
<noscript><p>This dashboard draws its charts with JavaScript; the data is in the script element "flodl-dashboard-data".</p></noscript>
</body>
</html>
`;
}

/**
 * Write the dashboard to `path` through `storage`, atomically (a temporary name, then a
 * rename), so a crash never leaves half a page.
 * @throws {RangeError} For an unsafe path or a bad theme (before anything is written).
 * @example
 * ```ts
 * import { MemoryStorage } from "../io/mod.ts";
 * import { saveDashboard } from "./dashboard_html.ts";
 * await saveDashboard(new MemoryStorage(), "runs/mnist/dashboard.html", { worldSize: 1, epochs: [] });
 * ```
 */
export async function saveDashboard(
  storage: FileStore,
  path: string,
  data: DashboardData,
  options: DashboardHtmlOptions = {},
): Promise<void> {
  checkPath(path, "saveDashboard path");
  await storage.write(path, renderDashboardHtml(data, options));
}
