import { MemoryStorage } from "../../../src/io/mod.ts";
import {
  BatchSeries,
  type DashboardData,
  DashboardRecorder,
  renderDashboardHtml,
  reviveNonFinite,
  saveDashboard,
} from "../../../src/monitor/mod.ts";
import { viewScript } from "../../../src/monitor/dashboard_script.ts";
import { syntheticRun } from "../../fixtures/make_dashboard.ts";
import { assert, assertEquals, assertThrows } from "../../util/assert.ts";

const uplotJs = Deno.readTextFileSync(new URL("../../../node_modules/uplot/dist/uPlot.iife.min.js", import.meta.url));
const uplotCss = Deno.readTextFileSync(new URL("../../../node_modules/uplot/dist/uPlot.min.css", import.meta.url));
const viewJs = viewScript((file) => Deno.readTextFileSync(new URL(`../../../src/monitor/${file}`, import.meta.url)));

function embedded(html: string): DashboardData {
  const m = html.match(/<script type="application\/json" id="flodl-dashboard-data">([\s\S]*?)<\/script>/);
  assert(m, "data script present");
  return JSON.parse(m[1], reviveNonFinite);
}

Deno.test("renderDashboardHtml: one self-contained page with the data, uPlot and the view inlined", () => {
  const data = syntheticRun();
  const html = renderDashboardHtml(data, { theme: "dark" });
  assert(!/src\s*=\s*["']?https?:/i.test(html), "no external script");
  assert(!/<link[^>]+href\s*=\s*["']?https?:/i.test(html), "no external link");
  assert(!/@import|url\(\s*["']?https?:/i.test(html), "no external CSS");
  assert(!/<script[^>]*\ssrc=/i.test(html), "no script loaded by src at all");
  assert(html.includes(`<script>${uplotJs}</script>`), "uPlot's IIFE build inlined verbatim");
  assert(html.includes(uplotCss), "uPlot's stylesheet inlined");
  assert(html.includes(viewJs), "the view modules inlined, joined into one script");
  assert(html.includes("default-src 'none'"), "a CSP forbids any fetch");
  assert(html.includes('{ theme: "dark", title: "synthetic run"'), "theme pinned");
  assertEquals(JSON.stringify(embedded(html)), JSON.stringify(data), "embedded data");
  assertEquals(embedded(html).epochs.length, 3);
});

Deno.test("renderDashboardHtml: NaN survives, </script> in data cannot break out, unset theme is auto", () => {
  const data: DashboardData = {
    title: 'evil </script><script>alert(1)</script> & "co"',
    worldSize: 1,
    epochs: [{
      epoch: 0,
      avgLoss: NaN,
      epochMs: 1,
      perRankLoss: [NaN],
      perRankSamples: [1],
      perRankThroughput: [Infinity],
      perRankBatchShare: [1],
    }],
  };
  const html = renderDashboardHtml(data);
  assertEquals(html.match(/<\/script>/g)!.length, 3, "only the three real closing tags");
  assert(html.includes("<title>evil &#60;/script&#62;"), "title escaped");
  const back = embedded(html);
  assertEquals(back.title, data.title);
  assert(Number.isNaN(back.epochs[0].avgLoss) && Number.isNaN(back.epochs[0].perRankLoss[0]), "NaN loss kept");
  assertEquals(back.epochs[0].perRankThroughput[0], Infinity);
  assert(html.includes('{ theme: "auto"'), "unset theme follows prefers-color-scheme");
});

Deno.test("renderDashboardHtml/saveDashboard validate before writing", async () => {
  // deno-lint-ignore no-explicit-any
  assertThrows(
    () => renderDashboardHtml({ worldSize: 1, epochs: [] }, { theme: "blue" as any }),
    RangeError,
    "theme",
    '"blue"',
  );
  assertThrows(() => renderDashboardHtml({ worldSize: 0, epochs: [] }), TypeError, "worldSize", "0");
  const s = new MemoryStorage();
  let err: unknown;
  await saveDashboard(s, "../out.html", { worldSize: 1, epochs: [] }).catch((e) => (err = e));
  assert(err instanceof RangeError && err.message.includes("../out.html"), String(err));
  await saveDashboard(s, "runs/a/dashboard.html", syntheticRun(), { theme: "light" });
  assertEquals([...s.files.keys()], ["runs/a/dashboard.html"]);
  assertEquals(
    new TextDecoder().decode(s.files.get("runs/a/dashboard.html")),
    renderDashboardHtml(syntheticRun(), { theme: "light" }),
  );
});

Deno.test("BatchSeries keeps at most maxPerRank points per rank with batch-weighted means", () => {
  const s = new BatchSeries(4);
  for (let i = 1; i <= 37; i++) s.add({ rank: 0, epoch: 0, loss: i });
  s.add({ rank: 1, epoch: 0, loss: NaN });
  const pts = s.points().filter((p) => p.rank === 0);
  assert(pts.length <= 5, `${pts.length} points (4 + one partial bucket)`);
  assertEquals(pts.reduce((a, p) => a + p.n, 0), 37, "every batch counted once");
  assertEquals(pts.reduce((a, p) => a + p.loss * p.n, 0) / 37, 19, "mean of 1..37");
  assertEquals(pts.at(-1)!.index, 37);
  assert(Number.isNaN(s.points().find((p) => p.rank === 1)!.loss), "NaN kept");
  assert(Number.isNaN(s.takeWindowLoss()!), "window with a NaN batch");
  assertEquals(s.takeWindowLoss(), undefined);
});

Deno.test("DashboardRecorder: bound observer methods, window loss per reduce, bounded records", () => {
  let t = 10;
  const rec = new DashboardRecorder({ worldSize: 2, maxRecords: 3, now: () => t });
  const { batch, reduce, epoch } = rec; // handed out unbound, as an observer would
  batch({ rank: 0, epoch: 0, loss: 1 });
  batch({ rank: 1, epoch: 0, loss: 3 });
  reduce({ round: 0, epoch: 0, ms: 4 });
  batch({ rank: 0, epoch: 0, loss: 5 });
  reduce({ round: 1, epoch: 0, ms: 4 });
  reduce({ round: 2, epoch: 0, ms: 4 });
  epoch({
    epoch: 0,
    avgLoss: 3,
    epochMs: 5,
    perRankLoss: [3, 3],
    perRankSamples: [2, 1],
    perRankThroughput: [1, 1],
    perRankBatchShare: [0.6, 0.4],
  });
  for (let i = 0; i < 5; i++) {
    rec.record({
      v: 1,
      ts: i,
      sev: "info",
      path: "root",
      kind: "node",
      epoch: 0,
      metrics: {},
      work: i,
      children: 1,
      alive: 1,
    });
  }
  t = 99;
  rec.finish();
  const d = rec.data();
  assertEquals(d.reduces!.map((r) => r.loss), [2, 5, undefined]);
  assertEquals(d.records!.map((r) => r.ts), [2, 3, 4]);
  assertEquals([d.startedAt, d.finishedAt, d.epochs.length, d.batches!.length], [10, 99, 1, 3]); // rank 0: two points, rank 1: one
  assertThrows(() => new DashboardRecorder({ worldSize: 0 }), RangeError, "worldSize", "0");
});
