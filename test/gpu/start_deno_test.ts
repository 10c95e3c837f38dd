/**
 * `npm start` end to end (scripts/start.sh → examples/train.ts): a 2-rank run on a tiny
 * MNIST subset finishes and leaves a self-contained dashboard with the run's data, a
 * record log of valid monitor records per node kept under its cap, a timeline and the model.
 */
import { decodeSafetensors, parseRecord } from "../../src/index.ts";
import { assert, assertEquals } from "../util/assert.ts";
import { gpuTest } from "../util/gpu.ts";

async function* files(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* files(p);
    else yield p;
  }
}

gpuTest("npm start on a tiny subset: progress, a dashboard with the run's data, a capped record log, the model", async () => {
  const out = await Deno.makeTempDir({ prefix: "flodl-start-" });
  try {
    const cap = 8192;
    const cmd = new Deno.Command("sh", {
      args: ["scripts/start.sh", "--subset", "1280", "--test-subset", "200", "--epochs", "2", "--out", out, "--name", "t", "--log-bytes", String(cap)],
      stdout: "piped",
      stderr: "piped",
    });
    const res = await cmd.output();
    const stdout = new TextDecoder().decode(res.stdout), stderr = new TextDecoder().decode(res.stderr);
    assertEquals(res.code, 0, `exit code (stderr: ${stderr.slice(-2000)})`);
    for (const want of ["epoch 1/2", "epoch 2/2", "test acc", "final test accuracy", "dashboard:", "model:"]) {
      assert(stdout.includes(want), `terminal output lacks "${want}":\n${stdout}`);
    }
    const dir = `${out}/t`;
    const html = await Deno.readTextFile(`${dir}/dashboard.html`);
    assert(/^<!doctype html>/i.test(html) && html.includes("</html>"), "dashboard is an HTML document");
    assert(!/(src|href)="https?:/.test(html), "dashboard loads nothing from the network");
    const json = /<script type="application\/json"[^>]*>([\s\S]*?)<\/script>/.exec(html);
    assert(json, "dashboard embeds its data");
    const data = JSON.parse(json[1].replace(/\\u003c/g, "<"));
    assertEquals(data.epochs.length, 2, "epochs in the dashboard");
    assertEquals(data.worldSize, 2, "world size in the dashboard");
    assert(data.reduces.length > 0 && data.evals.length === 2, "reduces and evals in the dashboard");
    let logs = 0, records = 0;
    for await (const f of files(`${dir}/log`)) {
      logs++;
      const size = (await Deno.stat(f)).size;
      assert(size <= cap / 2, `${f} is ${size} bytes, over half the ${cap}-byte cap`);
      for (const line of (await Deno.readTextFile(f)).split("\n").filter(Boolean)) {
        const r = parseRecord(line);
        records++;
        assertEquals([r.v, typeof r.ts, typeof r.sev, typeof r.path], [1, "number", "string", "string"], "record envelope");
        if (r.kind === "node") assert(typeof r.epoch === "number" && typeof r.metrics === "object", `node record fields: ${line}`);
      }
    }
    assert(logs >= 4 && records > 0, `record log files (root, host, 2 ranks and rotated segments): ${logs}`);
    const model = decodeSafetensors(await Deno.readFile(`${dir}/model.safetensors`), "model.safetensors");
    assertEquals(Object.keys(model.tensors).length, 4, "MLP tensors in the saved model");
    assert((await Deno.readTextFile(`${dir}/timeline.csv`)).startsWith("ts_ms,kind"), "timeline CSV");
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
