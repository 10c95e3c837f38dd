/**
 * A user's own program travels (issue 26 item 4): a project outside the repository
 * (test/consumer/walk-in-project/: its own model and in-memory data, on the installed package
 * and Vite) runs a coordinator that bundles its program with `buildWalkIn` of
 * `flodl-webgpu/vite`, serves it with `serveWalkIn`, and prints one walk-in command per remote
 * slot. Each command runs as printed (`deno run --allow-net=… <URL> <token>`) from an empty
 * folder, with a cleared environment, an empty HOME and DENO_DIR, and no checkout, no
 * node_modules, no file permission. One of the two walk-ins is killed mid-epoch: the run
 * finishes on the others, every sample trained exactly once per epoch (the coordinator's
 * completed chunks), the dead rank reported lost. The NATS server is the test's (as a user
 * runs their own).
 */
import { startNatsServer } from "../../scripts/nats_server.ts";
import { createRunCredentials, serverAuthorization } from "../../src/index.ts";
import { consumerProject, pinned, removeProject, run } from "./project.ts";
import { assert, assertEquals } from "../util/assert.ts";
import { Ledger } from "../util/ledger.ts";
import { watchOutput } from "../util/processes.ts";

/** program.ts's training set size and the run's epochs (coordinator.ts). */
const SAMPLES = 1536, EPOCHS = 2;

/** A printed walk-in command run as printed, from an empty folder with a cleared environment. */
async function walkIn(command: string) {
  const m = /^deno run (--allow-net=\S+) (\S+) (\S+)$/.exec(command);
  assert(m, `a walk-in command of the form "deno run --allow-net=… <URL> <token>": ${command}`);
  const [home, denoDir, cwd] = await Promise.all(["home", "deno-dir", "cwd"].map((p) => Deno.makeTempDir({ prefix: `flodl-walk-in-${p}-` })));
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", m[1], m[2], m[3]],
    cwd,
    clearEnv: true,
    // XDG_RUNTIME_DIR is Mesa's Vulkan loader's (lavapipe), not a permission.
    env: { HOME: home, DENO_DIR: denoDir, XDG_RUNTIME_DIR: Deno.env.get("XDG_RUNTIME_DIR") ?? "/tmp" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return { child, ...watchOutput(child), dirs: [home, denoDir, cwd] };
}

Deno.test("a project outside the repository serves its own program to two walk-in ranks; one killed mid-epoch: every sample once, the run finishes", async () => {
  const dir = consumerProject("walk-in-project", [pinned("vite")]);
  run(Deno.execPath(), ["check", "coordinator.ts"], dir); // the package's types, buildWalkIn's included
  const creds = await createRunCredentials(3);
  const server = await startNatsServer({ authorization: serverAuthorization(creds) });
  await Deno.writeTextFile(`${dir}/credentials.json`, JSON.stringify(creds), { mode: 0o600 });
  const coordinator = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "coordinator.ts", "credentials.json", server.wsUrl, "2"],
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const c = watchOutput(coordinator);
  const ranks: Awaited<ReturnType<typeof walkIn>>[] = [];
  try {
    for (const k of [1, 2]) ranks.push(await walkIn((await c.until(new RegExp(`^walk-in ${k}: (.+)$`, "m"), `walk-in command ${k}`))[1]));
    // Rank 2 dies once it has completed a chunk: mid-epoch, work in flight.
    await c.until(/^chunk 0 2 /m, "a chunk of rank 2");
    ranks[1].child.kill("SIGKILL");
    const done = JSON.parse((await c.until(/^done (.*)$/m, "the run's end"))[1]) as { acc?: number; devices: string[] };
    const ledger = new Ledger(SAMPLES, EPOCHS, 42);
    for (const m of c.text().matchAll(/^chunk (\d+) (\d+) (\d+) (\d+)$/gm)) ledger.chunk(...(m.slice(1).map(Number) as [number, number, number, number]));
    ledger.exactlyOnce("a walk-in killed mid-epoch");
    assertEquals(done.devices.length, 3, "three ranks: one local, two walk-ins");
    assert(ledger.ranks[0].has(1) && ledger.ranks[0].has(2), `both walk-ins trained in epoch 1 (ranks ${[...ledger.ranks[0]]})`);
    assert(/^lost 2: /m.test(c.text()) && !/^lost [01]: /m.test(c.text()), `rank 2 lost, no other:\n${c.text()}`);
    assert(done.acc !== undefined && done.acc > 0.9, `test accuracy ${done.acc}`);
    assertEquals((await ranks[0].child.status).code, 0, `walk-in 1's exit (its output:\n${ranks[0].text()})`);
    assert(/coordinator ended the run/.test(ranks[0].text()), `walk-in 1 stayed to the end:\n${ranks[0].text()}`);
  } finally {
    for (const p of [coordinator, ...ranks.map((r) => r.child)]) {
      try {
        p.kill("SIGKILL");
      } catch { /* ended */ }
      await p.status;
    }
    await server.stop();
    for (const r of ranks) for (const d of r.dirs) await Deno.remove(d, { recursive: true });
    removeProject(dir);
  }
});
