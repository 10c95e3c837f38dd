/**
 * Walk-in ranks need nothing but Deno and the network (issue 26). Two network namespaces
 * joined by a veth pair (a /24): the coordinator (test/fixtures/walk_in_coordinator.ts: the
 * built-in MNIST MLP, one local worker rank, one remote slot, nats-server and the walk-in
 * server on its address) in one; in the other, the printed command, run as printed with
 * `env -i PATH=<a folder holding only a link to deno> HOME=<empty> DENO_DIR=<empty>`, cwd an
 * empty folder, and exactly the command's `--allow-net=<host:ports>`. It trains: every
 * sample of the epoch is trained exactly once across the local and the walk-in rank (the
 * coordinator's chunk ledger), and the walk-in trained some of them. Twice, the second time
 * with the first's DENO_DIR (warm): the time to the walk-in's first step and the bytes it
 * fetched are printed (bench/README.md "Walk-in ranks"). lavapipe needs no XDG_RUNTIME_DIR
 * (Mesa warns without one): none is passed. Skips, saying why, when not root or without `ip`.
 */
import { assert, assertEquals } from "../../util/assert.ts";

const FIXTURE = new URL("../../fixtures/walk_in_coordinator.ts", import.meta.url).pathname;
const ROOT = new URL("../../../", import.meta.url).pathname;

async function sh(...cmd: string[]): Promise<string> {
  const out = await new Deno.Command(cmd[0], { args: cmd.slice(1), stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd.join(" ")}: exit ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  return text;
}

/** Why the test cannot run here, or undefined. */
async function unable(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return "not root (network namespaces and veth pairs need CAP_NET_ADMIN)";
  try {
    await sh("ip", "-V");
  } catch {
    return "no `ip` command (iproute2)";
  }
  return undefined;
}

/** Two namespaces joined by a veth pair on 10.214.<k>.0/24, names unique to this process. */
async function namespaces() {
  const id = `${Deno.pid}${Math.floor(Math.random() * 1000)}`;
  const [a, b] = [`fwia${id}`, `fwib${id}`];
  const k = 1 + (Deno.pid % 250);
  const [ipA, ipB] = [`10.214.${k}.1`, `10.214.${k}.2`];
  const close = async () => {
    for (const ns of [a, b]) await sh("ip", "netns", "del", ns).catch(() => {});
  };
  try {
    await sh("ip", "netns", "add", a);
    await sh("ip", "netns", "add", b);
    await sh("ip", "link", "add", `${a}v`, "netns", a, "type", "veth", "peer", "name", `${b}v`, "netns", b);
    for (const [ns, ip] of [[a, ipA], [b, ipB]]) {
      await sh("ip", "netns", "exec", ns, "ip", "addr", "add", `${ip}/24`, "dev", `${ns}v`);
      await sh("ip", "netns", "exec", ns, "ip", "link", "set", `${ns}v`, "up");
      await sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { a, b, ipA, close };
}

/** Lines of a stream, each to `onLine`; resolves with all the text at its end. */
async function lines(stream: ReadableStream<Uint8Array<ArrayBuffer>>, onLine: (line: string) => void): Promise<string> {
  let all = "", rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    all += chunk;
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    parts.forEach(onLine);
  }
  if (rest) onLine(rest);
  return all;
}

const reason = await unable();
Deno.test({
  name: "a walk-in rank joins from another namespace with only deno, --allow-net and the printed command, and trains",
  ignore: reason !== undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const net = await namespaces();
    const dirs: string[] = [];
    const temp = async () => {
      const d = await Deno.makeTempDir({ prefix: "flodl-walk-in-" });
      dirs.push(d);
      return d;
    };
    const [bin, home, denoDir] = [await temp(), await temp(), await temp()];
    await Deno.symlink(Deno.execPath(), `${bin}/deno`);
    try {
      for (const pass of ["cold", "warm"]) {
        const cwd = await temp();
        const coordinator = new Deno.Command("ip", {
          args: ["netns", "exec", net.a, Deno.execPath(), "run", "-A", "--no-check", FIXTURE, net.ipA],
          cwd: ROOT,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const cErr = new Response(coordinator.stderr).text();
        let walkIn: Promise<Deno.CommandOutput> | undefined, t0 = 0, result: string | undefined;
        const cOut = await lines(coordinator.stdout, (line) => {
          const m = /^WALK-IN (deno run .*)$/.exec(line);
          if (m && !walkIn) {
            const argv = m[1].split(" ");
            assertEquals(argv.length, 5, `the printed command is deno run --allow-net=… <URL> <token>: ${m[1]}`);
            assert(/^--allow-net=10\.214\.\d+\.1:\d+,10\.214\.\d+\.1:\d+$/.test(argv[2]), `only the coordinator's two ports: ${argv[2]}`);
            t0 = performance.now();
            walkIn = new Deno.Command("ip", {
              args: ["netns", "exec", net.b, "env", "-i", `PATH=${bin}`, `HOME=${home}`, `DENO_DIR=${denoDir}`, ...argv],
              cwd,
              stdin: "null",
              stdout: "piped",
              stderr: "piped",
            }).output();
          }
          if (line.startsWith("RESULT ")) result = line.slice(7);
        });
        const code = (await coordinator.status).code;
        assert(walkIn !== undefined, `the coordinator printed a walk-in command:\n${cOut}\n${await cErr}`);
        const w = await walkIn;
        const wOut = new TextDecoder().decode(w.stdout), wErr = new TextDecoder().decode(w.stderr);
        assertEquals(code, 0, `coordinator exit code:\n${cOut}\n${await cErr}\nwalk-in:\n${wOut}\n${wErr}`);
        assert(result !== undefined, `the coordinator reported its ledger:\n${cOut}`);
        const r = JSON.parse(result) as { counts: number[]; ranks: number[]; lost: string[]; bytes: Record<string, number> };
        const wrong = r.counts.map((c, i) => [i, c]).filter(([, c]) => c !== 1);
        assertEquals(wrong.length, 0, `samples not trained exactly once (sample, times): ${JSON.stringify(wrong.slice(0, 10))}`);
        assertEquals(r.counts.length, 512, "ledger size");
        assertEquals([...r.ranks].sort(), [0, 1], `both ranks trained chunks; lost: ${r.lost.join("; ")}`);
        assertEquals(r.lost, [], "no rank lost");
        assert(/rank 1: joined run/.test(wOut) && /coordinator ended the run/.test(wOut), `the walk-in joined and stopped with the run:\n${wOut}\n${wErr}`);
        assertEquals(w.code, 0, `walk-in exit code:\n${wOut}\n${wErr}`);
        const first = /first step after (\d+) ms \((\d+) bytes fetched\)/.exec(wOut);
        assert(first !== null, `the walk-in reported its first step:\n${wOut}`);
        assertEquals(Number(first[2]), r.bytes.bundle + r.bytes.train + r.bytes.test, "bytes fetched = bundle + packs");
        console.log(
          `walk-in ${pass} DENO_DIR: first step ${first[1]} ms after its start, command to exit ${Math.round(performance.now() - t0)} ms; ` +
            `fetched ${first[2]} bytes (bundle ${r.bytes.bundle}, train pack ${r.bytes.train}, test pack ${r.bytes.test})`,
        );
      }
    } finally {
      await net.close();
      for (const d of dirs) await Deno.remove(d, { recursive: true }).catch(() => {});
    }
  },
});
