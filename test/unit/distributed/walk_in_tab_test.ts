/**
 * Walk-in tabs' pieces that need no GPU (src/distributed/serve/, issue 26 items 3 and 5):
 * - a slot's ticket serves once: the first claim takes it, any later claim and any later
 *   open of its join page is refused (409), one line, and `onRefused` is told; a second
 *   Deno walk-in with the same token is refused by its loader, one line, exit 1;
 * - the tab's token carries the same ticket as the Deno command's and the same origin's
 *   `wss://…/nats` URL; the page is served with its CSP and the token inside, never in a URL;
 * - https with a self-signed certificate for 127.0.0.1 (a client trusting only it);
 *   its SPKI hash against openssl's own pipeline;
 * - the NATS proxy pipes frames both ways, the upstream's first frame before the page spoke;
 * - the page's check refuses a tampered bundle, naming it;
 * - `--tls-cert/--tls-key` that cannot be read or are not PEM: one line naming the flag.
 */
import { buildWalkInLoaders } from "../../../src/walk_in_build.ts";
import { createRunCredentials, joinTokenFor, packBytes, serveWalkIn } from "../../../src/index.ts";
import { decodeJoinToken } from "../../../src/distributed/nats/mod.ts";
import { fetchChecked, WalkInRefusal } from "../../../src/distributed/serve/walk_in_check.ts";
import { certificateDigests, readTlsFiles, selfSignedCertificate } from "../../../src/distributed/serve/walk_in_tls.ts";
import { ArrayDataSet } from "../../../src/index.ts";
import { assert, assertEquals, assertRejects } from "../../util/assert.ts";

const enc = new TextEncoder();
const pack = () =>
  packBytes(new ArrayDataSet([{ data: Float32Array.from({ length: 12 }, () => Math.random()), shape: [4, 3] }]));

async function joinToken(nats = "ws://127.0.0.1:1") {
  const creds = await createRunCredentials(2);
  return joinTokenFor(nats, creds.ranks[1], { url: "file:///p/program.ts", line: 1, col: 1, ordinal: 0 }, {});
}

async function server(opts: { tls?: { cert: string; key: string }; bundle?: Uint8Array; loader?: Uint8Array } = {}) {
  const refused: string[] = [];
  const s = await serveWalkIn({
    loader: opts.loader ?? enc.encode("export {};"),
    page: enc.encode("export {};"),
    bundle: opts.bundle ?? enc.encode("console.log('the bundle ran');"),
    packs: { train: await pack() },
  }, { hostname: "127.0.0.1", tls: opts.tls, onRefused: (l) => refused.push(l) });
  return { s, refused, key: new URL(s.url).pathname.split("/")[1] };
}

const walkInOf = (token: string) => (decodeJoinToken(token) as unknown as { walkIn: { ticket: string } }).walkIn;
const oneLine = (body: string) => body.startsWith("flodl walk-in: ") && body.trim().split("\n").length === 1;

Deno.test("a slot's ticket serves once: claim, join page, both tokens; later claims and opens are one-line 409s", async () => {
  const cert = await selfSignedCertificate("127.0.0.1");
  const { s, refused, key } = await server({ tls: cert });
  const client = Deno.createHttpClient({ caCerts: [cert.cert] });
  try {
    const join = await joinToken();
    const link = s.link(join)!;
    assert(link.startsWith(`https://${s.httpsHostPort}/${key}/join/`), link);
    const ticket = link.split("/").pop()!;
    assertEquals(walkInOf(s.token(join)).ticket, ticket, "the Deno command's token carries the link's ticket");
    const page = await fetch(link, { client });
    const html = await page.text();
    assertEquals(page.status, 200, html);
    assert(page.headers.get("content-security-policy")!.includes("connect-src 'self'"), "the page's CSP");
    const tabToken = /<script id="walk-in-token" type="application\/json">([^<]+)<\/script>/.exec(html)![1];
    assertEquals(
      decodeJoinToken(tabToken).url,
      `wss://${s.httpsHostPort}/${key}/nats`,
      "the tab's NATS link is the same origin's",
    );
    assertEquals(walkInOf(tabToken).ticket, ticket);
    assert(!link.includes(tabToken.slice(0, 20)), "the token is not in the link");

    const claim = (t = ticket) =>
      fetch(`http://${s.hostPort}/${key}/claim/${t}`, { method: "POST", headers: { "user-agent": "Deno/2" } });
    const first = await claim();
    assertEquals(first.status, 200, await first.text());
    for (const again of [() => claim(), () => fetch(link, { client })]) {
      const r = await again();
      const body = await r.text();
      assertEquals(r.status, 409, body);
      assert(
        oneLine(body) &&
          /slot 1 is already taken \(by a Deno walk-in at [\d:]+ UTC\); each join link serves once/.test(body),
        body,
      );
    }
    assertEquals(refused.filter((l) => l.includes("already taken")).length, 2, refused.join("\n"));
    const other = await claim("0".repeat(32));
    assertEquals(other.status, 404);
    assert(oneLine(await other.text()));
    const get = await fetch(`http://${s.hostPort}/${key}/claim/${ticket}`);
    assertEquals(get.status, 405);
    assert(oneLine(await get.text()));
  } finally {
    client.close();
    await s.close();
  }
});

Deno.test("a second Deno walk-in on a taken slot: its loader says so in one line, exit 1, nothing run", async () => {
  const { s } = await server({ loader: (await buildWalkInLoaders()).loader });
  try {
    const token = s.token(await joinToken());
    const run = async () => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", `--allow-net=${s.hostPort}`, s.url, token],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      return { code: out.code, out: new TextDecoder().decode(out.stdout), err: new TextDecoder().decode(out.stderr) };
    };
    const first = await run();
    assert(first.code === 0 && first.out.includes("the bundle ran"), `${first.out}\n${first.err}`);
    const second = await run();
    assertEquals(second.code, 1, second.err);
    assertEquals(second.err.trim().split("\n").length, 1, second.err);
    assert(/^walk-in: slot 1 is already taken \(by a Deno walk-in at/.test(second.err.trim()), second.err);
    assert(!second.out.includes("the bundle ran"), second.out);
  } finally {
    await s.close();
  }
});

Deno.test("the certificate's SPKI hash and fingerprint match openssl's own pipeline", async () => {
  const { cert } = await selfSignedCertificate("127.0.0.1");
  const d = await certificateDigests(cert);
  const sh = async (cmd: string) => {
    const out = await new Deno.Command("sh", { args: ["-c", cmd], stdin: "piped", stdout: "piped" }).spawn();
    const w = out.stdin.getWriter();
    await w.write(enc.encode(cert));
    await w.close();
    return new TextDecoder().decode((await out.output()).stdout).trim();
  };
  assertEquals(
    d.spki,
    await sh("openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"),
  );
  assertEquals(`sha256 Fingerprint=${d.fingerprint}`, await sh("openssl x509 -noout -fingerprint -sha256"));
  assert(/IP Address:127\.0\.0\.1/.test(await sh("openssl x509 -noout -ext subjectAltName")), "SAN is the address");
});

Deno.test("the NATS proxy pipes binary frames both ways, the upstream's greeting first", async () => {
  // An upstream that greets first (as nats-server's INFO) and echoes every frame reversed.
  const up = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => socket.send(enc.encode("INFO"));
    socket.onmessage = (e) => socket.send(new Uint8Array(e.data as ArrayBuffer).reverse());
    return response;
  });
  const { s, key } = await server();
  try {
    s.token(await joinToken(`ws://127.0.0.1:${up.addr.port}`)); // the upstream is the tokens' NATS URL
    const ws = new WebSocket(`ws://${s.hostPort}/${key}/nats`);
    ws.binaryType = "arraybuffer";
    const got: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      ws.onerror = () => reject(new Error("the proxy's socket failed"));
      ws.onmessage = (e) => {
        got.push(new TextDecoder().decode(e.data as ArrayBuffer));
        if (got.length === 1) ws.send(enc.encode("abc\u0000xyz"));
        else resolve();
      };
    });
    await done;
    assertEquals(got, ["INFO", "zyx\u0000cba"]);
    const closed = new Promise((r) => (ws.onclose = r));
    ws.close();
    await closed;
  } finally {
    await s.close();
    await up.shutdown();
  }
});

Deno.test("the page's check refuses a tampered bundle, naming it, before anything runs", async () => {
  const bundle = enc.encode("globalThis.ran = true;");
  const { s, key } = await server({ bundle });
  try {
    const want = s.digests.bundle;
    bundle[0] ^= 1; // the served bytes change after their digest was taken
    const base = `http://${s.hostPort}/${key}/page.js`;
    const e = await assertRejects(() => fetchChecked(base, "bundle", "bundle.js", want), WalkInRefusal, "the bundle ");
    assert(
      /has sha256 [0-9a-f]{64}, the join token says [0-9a-f]{64}: refused/.test(e.message) && !e.message.includes("\n"),
      e.message,
    );
    bundle[0] ^= 1;
    assertEquals((await fetchChecked(base, "bundle", "bundle.js", want)).length, bundle.length);
  } finally {
    await s.close();
  }
});

Deno.test("--tls-cert/--tls-key: unreadable or not PEM is one line naming the flag", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { cert, key } = await selfSignedCertificate("localhost");
    await Deno.writeTextFile(`${dir}/c.pem`, cert);
    await Deno.writeTextFile(`${dir}/k.pem`, key);
    await Deno.writeTextFile(`${dir}/junk`, "hello");
    assertEquals((await readTlsFiles(`${dir}/c.pem`, `${dir}/k.pem`)).cert, cert);
    const cases: [string, string, string][] = [
      [`${dir}/none.pem`, `${dir}/k.pem`, `--tls-cert "${dir}/none.pem": cannot read it`],
      [`${dir}/junk`, `${dir}/k.pem`, `--tls-cert "${dir}/junk": not a PEM certificate`],
      [`${dir}/c.pem`, `${dir}/c.pem`, `--tls-key "${dir}/c.pem": not a PEM private key`],
    ];
    for (const [c, k, says] of cases) {
      const e = await assertRejects(() => readTlsFiles(c, k), TypeError, says);
      assert(!e.message.includes("\n"), e.message);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
