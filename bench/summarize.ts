/**
 * Tables of one sitting from bench/results/: the Deno and Chromium engine results and the
 * Deno and Chromium trainer results with the same tag (the newest date that has it), as markdown.
 *
 *   npx deno run -A bench/summarize.ts [--tag run1]
 */
import { type DdpResult, ddpLines, reportLines } from "./report.ts";
import type { SuiteResult } from "./suite.ts";

const i = Deno.args.indexOf("--tag");
const tag = i >= 0 ? Deno.args[i + 1] : "";
const dir = new URL("./results/", import.meta.url);
const names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".json")).sort();
const suffix = tag ? `-${tag}.json` : ".json";

function newest(kind: string): { name: string; data: any } | undefined {
  const re = new RegExp(`^\\d{4}-\\d{2}-\\d{2}-${kind}${suffix.replace(".", "\\.")}$`);
  const name = names.filter((n) => re.test(n)).at(-1);
  return name ? { name, data: JSON.parse(Deno.readTextFileSync(new URL(name, dir))) } : undefined;
}

for (const kind of ["deno", "chromium"]) {
  const f = newest(kind);
  if (!f) {
    console.log(`(no ${kind} result${tag ? ` tagged ${tag}` : ""})\n`);
    continue;
  }
  const r = f.data as SuiteResult & { runtime: string; date: string; adapter?: string; load?: { before: number[]; after: number[] } };
  const load = r.load ? `, load average ${r.load.before.map((x) => x.toFixed(1)).join(" ")} → ${r.load.after.map((x) => x.toFixed(1)).join(" ")}` : "";
  console.log(reportLines(r, `${r.runtime}, ${r.date.slice(0, 16)}Z (${f.name}${load}, ${r.totalS} s)`).join("\n") + "\n");
}
for (const [kind, runtime] of [["ddp", "Deno"], ["chromium-ddp", "Chromium"]]) {
  const d = newest(kind);
  if (d) console.log(ddpLines(d.data as DdpResult, `Trainer, ${runtime}, ${(d.data as DdpResult).date.slice(0, 16)}Z (${d.name})`).join("\n") + "\n");
  else console.log(`(no ${kind} result${tag ? ` tagged ${tag}` : ""})\n`);
}
