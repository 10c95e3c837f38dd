/**
 * scripts/nats_server.ts leaves nothing behind (issue 22, item 4), with a real nats-server
 * started by a child process (test/fixtures/nats_server_child.ts, as `--serve` starts it):
 * the server's config (the run's passwords) is in no file and in no argument while it runs,
 * and the server is gone once its parent ended, whether the parent was killed (SIGTERM,
 * SIGINT, SIGKILL) or stopped it and exited. A control run with `diesWithParent: false`
 * shows the server would outlive a SIGKILLed parent otherwise. Waits are bounded polls of
 * /proc, never asserted as times.
 */
import { assert, assertEquals } from "../../util/assert.ts";
import { until } from "../../util/nats_server.ts";
import { within } from "../../util/processes.ts";

const FIXTURE = new URL("../../fixtures/nats_server_child.ts", import.meta.url).pathname;

/** Whether `pid` is a live process (a zombie left for init to reap counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** The fixture, its server's pid and a password of its run, once the server accepts; TMPDIR is a fresh dir. */
async function parent(flags: string[]) {
  const tmp = await Deno.makeTempDir({ prefix: "flodl-nats-test-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", FIXTURE, ...flags],
    env: { TMPDIR: tmp },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const line = await within(
    (async () => {
      for (;;) {
        const m = /^nats (\d+) (\S+)$/m.exec(out);
        if (m) return m;
        const { value, done } = await reader.read();
        if (done) throw new Error(`the fixture ended before its server started:\n${out}\n${await stderr}`);
        out += value;
      }
    })(),
    60_000,
    "the fixture's server starts",
  );
  reader.releaseLock();
  child.stdout.cancel().catch(() => {});
  return { child, tmp, pid: Number(line[1]), pass: line[2], stderr };
}

/** Kill the fixture and its server (by their pids) when a check failed before the test's own kill. */
function end(p: { child: Deno.ChildProcess; pid: number }) {
  try {
    p.child.kill("SIGKILL");
  } catch { /* ended */ }
  if (alive(p.pid)) Deno.kill(p.pid, "SIGKILL");
}

/** The server holds no file that could keep its config, and its command line has no password. */
function checkNoCredentialFile(pid: number, pass: string, tmp: string) {
  const cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  assert(cmdline.includes("-c /dev/stdin") && !cmdline.includes(pass), `server command line: ${cmdline}`);
  for (const fd of Deno.readDirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = Deno.readLinkSync(`/proc/${pid}/fd/${fd.name}`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) continue; // closed since the listing (the server's own short-lived fds)
      throw e;
    }
    assert(!target.startsWith("/") || target.startsWith("/dev/"), `server fd ${fd.name} is a file: ${target}`);
  }
  assertEquals([...Deno.readDirSync(tmp)].map((e) => e.name), [], `files under the parent's TMPDIR ${tmp}`);
}

for (const signal of ["SIGTERM", "SIGINT", "SIGKILL"] as const) {
  Deno.test(`startNatsServer: a parent killed by ${signal} leaves no nats-server and no config file`, async () => {
    const p = await parent([]);
    try {
      assert(alive(p.pid), `server pid ${p.pid} runs`);
      checkNoCredentialFile(p.pid, p.pass, p.tmp);
      p.child.kill(signal);
      const status = await within(p.child.status, 20_000, `the parent ends on ${signal}`);
      assert(!status.success, `the parent was killed (${JSON.stringify(status)})`);
      await until(`server pid ${p.pid} gone after its parent's ${signal}`, () => alive(p.pid) ? undefined : true, 10_000);
      assertEquals([...Deno.readDirSync(p.tmp)].map((e) => e.name), [], "files left under TMPDIR");
    } finally {
      end(p);
      await p.stderr;
      await Deno.remove(p.tmp, { recursive: true });
    }
  });
}

Deno.test("startNatsServer: a parent that stops its server and exits 0 leaves no nats-server and no config file", async () => {
  const p = await parent(["--exit"]);
  try {
    const status = await within(p.child.status, 20_000, "the parent exits");
    assertEquals(status.code, 0, `exit code (stderr: ${await p.stderr})`);
    await until(`server pid ${p.pid} gone`, () => alive(p.pid) ? undefined : true, 10_000);
    assertEquals([...Deno.readDirSync(p.tmp)].map((e) => e.name), [], "files left under TMPDIR");
  } finally {
    end(p);
    await p.stderr;
    await Deno.remove(p.tmp, { recursive: true });
  }
});

Deno.test("startNatsServer: control: with diesWithParent false the server outlives a SIGKILLed parent (stopped here by its pid)", async () => {
  const p = await parent(["--outlive"]);
  try {
    p.child.kill("SIGKILL");
    await within(p.child.status, 20_000, "the parent ends");
    // The kernel kills a tied server as its parent dies; this one is not tied, so it still runs.
    assert(alive(p.pid), `server pid ${p.pid} outlived its parent`);
  } finally {
    end(p);
    await until(`server pid ${p.pid} gone`, () => alive(p.pid) ? undefined : true, 10_000);
    await p.stderr;
    await Deno.remove(p.tmp, { recursive: true });
  }
});
