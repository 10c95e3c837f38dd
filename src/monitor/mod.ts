/**
 * Monitor outputs: the record stream and its log, sub-epoch report cadence,
 * the timeline, and the self-contained dashboard. Imports nothing above src/io.
 *
 * The live (Vite) dashboard binding, `dashboard_live.ts`, is browser-only and is imported
 * directly by pages, not re-exported here.
 */
export { decodeNumber, encodeNumber, NON_FINITE_STRINGS, stringifyFinite } from "./json.ts";
export { CORE_REDUCTIONS, Reduction, reductionFor, REDUCTIONS, rollUp, type RollUpChild } from "./roll_up.ts";
export {
  encodeRecord,
  type InteriorRecord,
  type LeafRecord,
  type MetaRecord,
  type MonitorRecord,
  type NodeRecord,
  type NodeRecordBase,
  parseRecord,
  type Resources,
  type Severity,
} from "./record.ts";
export {
  type EpochMetricsLike,
  type LeafValues,
  RecordTree,
  type RecordTreeOptions,
  rollUpResources,
  type TreeRow,
} from "./record_tree.ts";
export { DEFAULT_RECORD_LOG_BYTES, RecordLog, type RecordLogOptions } from "./record_log.ts";
export { ReportSchedule, reportTick } from "./reports.ts";
export {
  Timeline,
  TIMELINE_CSV_COLUMNS,
  type TimelineEntry,
  type TimelineEvent,
  type TimelineSample,
  type TimelineSummary,
} from "./timeline.ts";
export {
  type BatchPoint,
  type BatchRow,
  type DashboardData,
  DashboardRecorder,
  type DashboardRecorderOptions,
  type DashboardTheme,
  type EpochRow,
  type EvalPoint,
  type MembershipRow,
  type RankActivityData,
  type RankActivityRank,
  type RankRow,
  type ReduceRow,
} from "./dashboard_data.ts";
export { type DashboardAssets, dashboardAssets } from "./dashboard_assets.ts";
export { type DashboardHtmlOptions, renderDashboardHtml, saveDashboard } from "./dashboard_html.ts";
export { BatchSeries } from "./batch_series.js";
export { fitRange, reviveNonFinite } from "./dashboard_format.js";
export { RankActivity } from "./rank_activity.js";
export { DashboardView, type DashboardViewOptions, type UPlotConstructor } from "./dashboard_view.js";
