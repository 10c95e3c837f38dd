/**
 * Walk-in ranks' pieces that need no GPU (src/distributed/serve/, issue 26):
 * - a bundled rank finds its builder by its ordinal among its module's `Trainer.builder()`
 *   calls, whatever the bundle's URL and lines; none with that ordinal: the one-line refusal;
 * - `callerSite` counts the calls per module;
 * - a pack in memory reads back what was packed (random rows, against the dataset itself);
 * - the HTTP side serves only the run's files: a wrong or missing access key (403),
 *   traversal and encoded paths (400), other names (404), each one line; Range and HEAD;
 * - the loader refuses a tampered bundle or pack (sha256 against the join token), naming
 *   the item, exit 1, before anything of it runs.
 */
import { buildWalkInLoaders } from "../../../src/walk_in_build.ts";
import { ArrayDataSet, createRunCredentials, joinTokenFor, packBytes, packDataset, serveWalkIn } from "../../../src/index.ts";
import { awaitBuilder, callerSite, type RankRole, register } from "../../../src/distributed/run/reentry.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

const bundled = (entry: string, ordinal: number): RankRole => ({
  rank: 1,
  world: 0,
  entry,
  site: { url: entry, line: 50, col: 30, ordinal },
  timeoutMs: 2000,
  session: "t",
  bundled: true,
});

Deno.test("awaitBuilder bundled: the builder with the token's ordinal, at any line:col; none: one line naming the call's number", async () => {
  const entry = "blob:null/4f0c6a0e-walk-in-a";
  register({ url: entry, line: 9001, col: 7, ordinal: 0 }, "first");
  register({ url: entry, line: 9100, col: 3, ordinal: 1 }, "second");
  register({ url: "blob:null/other", line: 50, col: 30, ordinal: 1 }, "another bundle's");
  assertEquals(await awaitBuilder<string>(bundled(entry, 1), Promise.resolve()), "second");
  assertEquals(await awaitBuilder<string>(bundled(entry, 0), Promise.resolve()), "first");
  const e = await assertRejects(() => awaitBuilder(bundled(entry, 2), Promise.resolve()), Error, "Trainer.builder() call #3 of the bundled program was not reached");
  assert(!e.message.includes("\n"), `one line: ${e.message}`);
});

Deno.test("callerSite: each call of a module is its next ordinal", () => {
  const site = () => callerSite(site);
  const [a, b] = [site(), site()];
  assertEquals(a.url, b.url);
  assertEquals(b.ordinal, a.ordinal! + 1);
});

/** Random rows of two fields, f32 [3, 2] and i32 []. */
function dataset(n: number): ArrayDataSet {
  const x = Float32Array.from({ length: n * 6 }, () => Math.random() * 2 - 1);
  const y = Int32Array.from({ length: n }, () => Math.floor(Math.random() * 1000) - 500);
  return new ArrayDataSet([{ data: x, shape: [n, 3, 2] }, { data: y, shape: [n] }]);
}

Deno.test("packDataset reads back what packBytes wrote: fields, length and random rows", async () => {
  const ds = dataset(101);
  const pack = packDataset(await packBytes(ds), "test pack");
  assertEquals(pack.len(), 101);
  assertEquals(pack.fields.map((f) => [f.dtype, f.shape]), ds.fields.map((f) => [f.dtype, f.shape]));
  const idx = Array.from({ length: 40 }, () => Math.floor(Math.random() * 101));
  const [got, want] = [pack.getBatch(idx), ds.getBatch(idx)];
  for (let k = 0; k < 2; k++) {
    assertEquals(got[k].shape, want[k].shape);
    assertEquals([...got[k].data], [...want[k].data], `field ${k}`);
  }
  let threw = "";
  try {
    pack.getBatch([101]);
  } catch (e) {
    threw = (e as Error).message;
  }
  assert(threw.includes("index 101 is out of range for 101 samples"), threw);
});

/** A raw HTTP/1.1 request (no client-side path normalization); the status line and body. */
async function raw(port: number, path: string): Promise<{ status: number; body: string }> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  await c.write(new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
  const text = await new Response(c.readable).text();
  return { status: Number(text.split(" ")[1]), body: text.split("\r\n\r\n").slice(1).join("\r\n\r\n") };
}

async function fixture(files: { bundle?: Uint8Array; train?: Uint8Array } = {}, loader?: Uint8Array) {
  const refused: string[] = [];
  const server = await serveWalkIn({
    loader: loader ?? new TextEncoder().encode("export {};"),
    bundle: files.bundle ?? new TextEncoder().encode("console.log('the bundle ran');"),
    packs: { train: files.train ?? await packBytes(dataset(8)) },
  }, { hostname: "127.0.0.1", onRefused: (l) => refused.push(l) });
  return { server, refused, port: Number(server.hostPort.split(":")[1]), key: new URL(server.url).pathname.split("/")[1] };
}

Deno.test("the walk-in server serves the run's files only: key, traversal, encoded paths, other names; Range and HEAD", async () => {
  const { server, refused, port, key } = await fixture();
  try {
    assertEquals((await raw(port, `/${key}/bundle.js`)).body, "console.log('the bundle ran');");
    const cases: [string, number, string][] = [
      [`/wrongkey/bundle.js`, 403, "wrong or missing access key"],
      [`/bundle.js`, 403, "wrong or missing access key"],
      [`/${key}/../../../etc/passwd`, 400, "traversal"],
      [`/${key}/%2e%2e/%2e%2e/etc/passwd`, 400, "encoded"],
      [`/${key}/..%2f..%2fetc%2fpasswd`, 400, "traversal"],
      [`/${key}/bundle.js/../../x`, 400, "traversal"],
      [`/${key}/walk_in_server.ts`, 404, "not one of this run's files"],
      [`/${key}/train.pack/x`, 404, "not one of this run's files"],
    ];
    for (const [path, status, says] of cases) {
      const r = await raw(port, path);
      // Deno may normalize `..` before the handler sees it: then it is a wrong key or a name not served.
      assert(r.status === status || (status === 400 && (r.status === 403 || r.status === 404)), `${path}: HTTP ${r.status} ${r.body}`);
      if (r.status === status) assert(r.body.includes(says), `${path}: ${r.body}`);
      assert(r.body.startsWith("flodl walk-in: ") && r.body.trim().split("\n").length === 1, `${path}: one line: ${r.body}`);
      assert(!r.body.includes("root:"), `${path} leaked a file: ${r.body}`);
    }
    assertEquals(refused.length, cases.length, refused.join("\n"));
    const base = `http://${server.hostPort}/${key}/train.pack`;
    const head = await fetch(base, { method: "HEAD" });
    const size = Number(head.headers.get("content-length"));
    const part = await fetch(base, { headers: { Range: "bytes=8-15" } });
    assertEquals(part.status, 206);
    assertEquals(part.headers.get("content-range"), `bytes 8-15/${size}`);
    assertEquals((await part.arrayBuffer()).byteLength, 8);
    const over = await fetch(base, { headers: { Range: `bytes=${size}-` } });
    assertEquals(over.status, 416);
    await over.body?.cancel();
  } finally {
    await server.close();
  }
});

/** Run the loader as a walk-in would, with `token`; its exit code and stderr. */
async function runLoader(url: string, allow: string, token: string) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", `--allow-net=${allow}`, url, token],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  return { code: out.code, out: new TextDecoder().decode(out.stdout), err: new TextDecoder().decode(out.stderr) };
}

Deno.test("the loader refuses a tampered bundle or pack, naming it, exit 1, and runs nothing", async () => {
  const loader = (await buildWalkInLoaders()).loader;
  const creds = await createRunCredentials(2);
  const join = joinTokenFor("ws://127.0.0.1:1", creds.ranks[1], { url: "file:///p/program.ts", line: 1, col: 1, ordinal: 0 }, {});
  const train = await packBytes(dataset(8));
  const honest = await fixture({ train }, loader);
  const tamperedPack = train.slice();
  tamperedPack[tamperedPack.length - 1] ^= 1;
  const cases = [
    { item: "bundle", files: { bundle: new TextEncoder().encode("console.log('the bundle ran'); // tampered"), train } },
    { item: "train pack", files: { train: tamperedPack } },
  ];
  try {
    for (const c of cases) {
      const evil = await fixture(c.files, loader);
      try {
        // The honest server's token (its digests), the tampered server's files.
        const r = await runLoader(evil.server.url, evil.server.hostPort, honest.server.token(join));
        assertEquals(r.code, 1, `${c.item}: exit code\n${r.out}\n${r.err}`);
        const line = r.err.trim().split("\n").filter((l) => l.startsWith("walk-in: "));
        assertEquals(line.length, 1, r.err);
        assert(line[0].includes(`the ${c.item} `) && line[0].includes("sha256") && line[0].includes("refused"), line[0]);
        assert(!r.out.includes("the bundle ran"), `nothing ran: ${r.out}`);
      } finally {
        await evil.server.close();
      }
    }
    // The honest files with their own token: checked, and the bundle runs.
    const ok = await runLoader(honest.server.url, honest.server.hostPort, honest.server.token(join));
    assert(ok.out.includes("the bundle ran") && ok.code === 0, `${ok.out}\n${ok.err}`);
    // A clone's --join token (no walk-in fields): one line, exit 2.
    const plain = await runLoader(honest.server.url, honest.server.hostPort, join);
    assertEquals(plain.code, 2, plain.err);
    assert(/walk-in: .*has no walk-in fields/.test(plain.err), plain.err);
  } finally {
    await honest.server.close();
  }
});

Deno.test("packDataset over unaligned bytes (a pack inside a larger buffer) reads the same rows", async () => {
  const ds = dataset(9);
  const bytes = await packBytes(ds);
  const shifted = new Uint8Array(bytes.length + 3);
  shifted.set(bytes, 3);
  const pack = packDataset(shifted.subarray(3), "shifted pack");
  const idx = [8, 0, 4, 4];
  assertEquals([...pack.getBatch(idx)[0].data], [...ds.getBatch(idx)[0].data]);
  assertEquals([...pack.getBatch(idx)[1].data], [...ds.getBatch(idx)[1].data]);
});
