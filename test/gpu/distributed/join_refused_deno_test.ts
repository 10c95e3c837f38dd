/**
 * `examples/train.ts --join` with a token whose key is not the slot's (issue 22, item 2):
 * the rank process builds its model (a WebGPU device, hence a GPU test), says hello, is told
 * it was refused, never says "joined", and exits 1 with one line on stderr; the coordinator
 * (its NATS side, in this process, against a real nats-server) reports the refusal once.
 * A rank whose hello fails the run's checks (another data set size) is told why, never says
 * "joined" either (it says so at the coordinator's first call, which a refused rank never
 * gets), and exits 1. Under a second on lavapipe each: no training.
 */
import { gpuTest } from "../../util/gpu.ts";
import { assert, assertEquals } from "../../util/assert.ts";
import { startRunServer } from "../../util/nats_server.ts";
import { within } from "../../util/processes.ts";
import { openCoordinator } from "../../../src/distributed/nats/mod.ts";
import { checkRemoteHello, type RemoteHello } from "../../../src/distributed/protocol/remote_hello.ts";
import { joinTokenFor } from "../../../src/distributed/run/join.ts";
import { parseTrainArgs, settingsOf } from "../../../examples/args.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

/** Where examples/program.ts creates its builder (the token's line:col, as the coordinator's would be). */
function builderSite() {
  const lines = Deno.readTextFileSync(`${ROOT}examples/program.ts`).split("\n");
  const line = lines.findIndex((l) => l.includes("Trainer.builder("));
  return { url: `${ROOT}examples/program.ts`, line: line + 1, col: lines[line].indexOf("Trainer.builder(") + "Trainer.".length + 1 };
}

gpuTest("examples/train.ts --join with another slot's key: refused at join, exit 1, one line, never joined; reported once", async () => {
  const rs = await startRunServer(2);
  try {
    const coord = await openCoordinator({
      connection: await rs.connectCoordinator(),
      run: rs.creds.run,
      runKey: rs.creds.runKey,
      passwords: rs.creds.ranks.map((r) => r.pass),
    });
    const refused: string[] = [];
    await coord.link(1, { onRefused: (e) => void refused.push(e.message) });
    const args = settingsOf(parseTrainArgs(["--subset", "200", "--test-subset", "100"]));
    const token = joinTokenFor(rs.server.wsUrl, { ...rs.creds.ranks[1], key: rs.creds.ranks[0].key }, builderSite(), { ...args });
    const out = await within(
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-check", "examples/train.ts", "--join", token],
        cwd: ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output(),
      120_000,
      "the refused rank process ends",
    );
    const stdout = new TextDecoder().decode(out.stdout), stderr = new TextDecoder().decode(out.stderr).trim();
    assertEquals(out.code, 1, `exit code (stdout:\n${stdout}\nstderr:\n${stderr})`);
    assertEquals(stderr.split("\n").length, 1, `one line on stderr:\n${stderr}`);
    assert(
      stderr.startsWith("npm start --join: rank 1: the coordinator refused it at join: its hello does not verify (HMAC does not match") &&
        stderr.includes("the join token's key is not slot 1's key in this run"),
      stderr,
    );
    assert(!/joined run/.test(stdout) && !/^\s*at .*:\d+:\d+/m.test(stderr), `never joined, no stack:\n${stdout}\n${stderr}`);
    assertEquals(refused.length, 1, `refusals reported: ${refused.join(" | ")}`);
    await coord.close();
  } finally {
    await rs.stop();
  }
});

gpuTest("examples/train.ts --join whose hello fails the run's checks (datasetLen): refused, exit 1, one line naming datasetLen, never joined", async () => {
  const rs = await startRunServer(2);
  try {
    const coord = await openCoordinator({
      connection: await rs.connectCoordinator(),
      run: rs.creds.run,
      runKey: rs.creds.runKey,
      passwords: rs.creds.ranks.map((r) => r.pass),
    });
    const link = await coord.link(1);
    // The run's side as remote_slots.ts does it: check the hello, refuse with the reason.
    const checked = link.ready.then(async (h) => {
      const hello = h as RemoteHello;
      const why = checkRemoteHello(1, hello, { program: hello.program, layout: hello.layout, datasetLen: hello.datasetLen + 1, wire: "bf16" });
      assert(why !== undefined, "the hello fails the check");
      await link.refuse(why!);
      return why!;
    });
    const args = settingsOf(parseTrainArgs(["--subset", "200", "--test-subset", "100"]));
    const token = joinTokenFor(rs.server.wsUrl, rs.creds.ranks[1], builderSite(), { ...args });
    const out = await within(
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-check", "examples/train.ts", "--join", token],
        cwd: ROOT,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output(),
      120_000,
      "the refused rank process ends",
    );
    const why = await checked;
    const stdout = new TextDecoder().decode(out.stdout), stderr = new TextDecoder().decode(out.stderr).trim();
    assertEquals(out.code, 1, `exit code (stdout:\n${stdout}\nstderr:\n${stderr})`);
    assertEquals(stderr.split("\n").length, 1, `one line on stderr:\n${stderr}`);
    assert(stderr.includes("refused at join: datasetLen 200, the run's is 201") && stderr.includes(why), stderr);
    assert(!/joined run/.test(stdout) && !/^\s*at .*:\d+:\d+/m.test(stderr), `never joined, no stack:\n${stdout}\n${stderr}`);
    await coord.close();
  } finally {
    await rs.stop();
  }
});
