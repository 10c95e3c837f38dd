/**
 * `npm start` (examples/train.ts) as a new user meets it: a bad flag value is one line on
 * stderr naming the flag, exit 2, no stack; the run's first line says what was done to the
 * pixels. Both are read before any rank starts (the process is killed at the first line), so
 * no GPU work happens here.
 */
import { assert, assertEquals } from "../../util/assert.ts";

const root = new URL("../../../", import.meta.url).pathname;

function command(args: string[], stdout: "piped" | "null"): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", "examples/train.ts", ...args],
    cwd: root,
    stdin: "null",
    stdout,
    stderr: "piped",
  });
}

/** Run to its end: the exit code and stderr. */
async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  const out = await command(args, "null").output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
}

/** The run's first line on stdout (the header), then the process is killed before training. */
async function header(args: string[]): Promise<string> {
  const child = command(args, "piped").spawn();
  const stderr = new Response(child.stderr).text();
  let text = "";
  try {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      if (text.includes("\n")) break;
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already exited */ }
    await child.status;
  }
  const line = text.split("\n")[0];
  assert(
    line.startsWith("flodl-webgpu: "),
    `header line of ${args.join(" ")}: ${JSON.stringify(line)} (stderr: ${await stderr})`,
  );
  return line;
}

Deno.test("examples/train.ts: a bad --out, --subset, --test-subset or --batch is one line naming the flag, exit 2, no stack", async () => {
  const out = await Deno.makeTempDir({ prefix: "flodl-cli-" });
  try {
    const cases: [string[], string[]][] = [
      [["--out", "/proc/forbidden"], ["--out", '"/proc/forbidden"', "cannot make the run folder"]],
      [["--subset", "99999999", "--out", out], ["--subset", "at most 60000", "99999999"]],
      [["--test-subset", "20000", "--out", out], ["--test-subset", "at most 10000", "20000"]],
      [["--model", "char-rnn", "--subset", "99999999", "--out", out], ["--subset", "42032", "99999999"]],
      [["--subset", "640", "--batch", "1000", "--out", out], ["--batch", "at most the 640 training samples", "1000"]],
    ];
    for (const [args, want] of cases) {
      const { code, stderr } = await cli(args);
      const what = args.join(" ");
      assertEquals(code, 2, `${what}: exit code (stderr: ${stderr})`);
      assert(!stderr.includes("\n") && stderr.startsWith("npm start: "), `${what}: one line:\n${stderr}`);
      for (const w of want) assert(stderr.includes(w), `${what}: the line names ${JSON.stringify(w)}:\n${stderr}`);
      assert(
        !/^\s*at .*:\d+:\d+/m.test(stderr) && !/Uncaught|error: /.test(stderr),
        `${what}: no stack frame:\n${stderr}`,
      );
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("examples/train.ts: the header says pixels standardized by default, in [0, 1] with --no-normalize or conv-ae, nothing for text", async () => {
  const out = await Deno.makeTempDir({ prefix: "flodl-cli-" });
  try {
    const common = ["--subset", "128", "--test-subset", "64", "--out", out];
    const byDefault = await header(["--model", "logistic", ...common]);
    assert(byDefault.endsWith(", pixels standardized"), `default (the saved model says standardized): ${byDefault}`);
    assert(!byDefault.includes("not standardized"), byDefault);
    assert(
      (await header(["--model", "logistic", "--no-normalize", ...common])).endsWith(", pixels in [0, 1]"),
      "--no-normalize",
    );
    assert((await header(["--model", "conv-ae", ...common])).endsWith(", pixels in [0, 1]"), "conv-ae");
    const text = await header(["--model", "char-rnn", ...common]);
    assert(!text.includes("pixels"), `char-rnn has no pixels: ${text}`);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
