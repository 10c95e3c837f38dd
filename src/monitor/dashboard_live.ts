/**
 * The live dashboard for browser pages built by Vite (the demo): the same view script the
 * saved HTML inlines (dashboard_view.js), bound to npm's uPlot and its stylesheet.
 *
 * Browser-only (it imports a stylesheet), so src/monitor/mod.ts does not re-export it:
 * import this file directly from a page.
 * @example
 * ```ts ignore
 * import { DashboardView } from "/src/monitor/dashboard_live.ts"; // path from a page of the Vite root
 * const view = new DashboardView(document.getElementById("dash")!, { theme: "auto" });
 * observer.batch = (e) => view.appendBatch(e);
 * ```
 */
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { DashboardView as View, type DashboardViewOptions, type UPlotConstructor } from "./dashboard_view.js";

/** The dashboard view with npm's uPlot: `new DashboardView(container, { theme })`. */
export class DashboardView extends View {
  constructor(container: HTMLElement, options: Omit<DashboardViewOptions, "uPlot"> = {}) {
    super(container, { ...options, uPlot: uPlot as unknown as UPlotConstructor });
  }
}

export { DashboardView as LiveDashboard };
export type { DashboardViewOptions } from "./dashboard_view.js";
export type { BatchRow, DashboardData, DashboardTheme, EpochRow, EvalPoint, ReduceRow } from "./dashboard_data.ts";
