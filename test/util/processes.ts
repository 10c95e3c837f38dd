/**
 * Deno child processes for the remote-rank tests (rank processes, relays): spawned with
 * their output kept for messages, and reaped without hanging.
 */

/** A child process and all it printed (stdout then stderr), once it ended. */
export interface Proc {
  child: Deno.ChildProcess;
  output: Promise<string>;
}

/** `deno run -A --no-check <script> ...args` with `env` added. */
export function spawnDeno(script: string, args: string[], env: Record<string, string> = {}): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", script, ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const text = (s: ReadableStream<Uint8Array>) => new Response(s).text();
  return { child, output: Promise.all([text(child.stdout), text(child.stderr)]).then(([o, e]) => o + e) };
}

/**
 * Wait for each process to end; one still running after `graceMs` is killed (SIGKILL).
 * @returns Whether each ended on its own.
 */
export async function reap(procs: Proc[], graceMs = 15_000): Promise<boolean[]> {
  const own: boolean[] = [];
  for (const p of procs) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([p.child.status.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
    clearTimeout(timer);
    own.push(ended);
    try {
      p.child.kill("SIGKILL");
    } catch { /* exited */ }
    await p.child.status;
    await p.output;
  }
  return own;
}

/**
 * `p`, or a loud error after `ms` naming what did not happen: a bound on a wait that must
 * end (never a hang), not a timing assertion.
 */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`hang: ${what} within ${ms / 1000} s`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A child's output read as it comes (a {@link Proc}'s `output` resolves only at its end). */
export interface Watched {
  /** Everything it printed so far, stdout and stderr interleaved as they came. */
  text(): string;
  /**
   * The first match of `re` in the output from character `from` on (its `index` counts from
   * the start); rejects when the process ends first, or (a hang) after `boundMs`.
   */
  until(re: RegExp, what: string, from?: number, boundMs?: number): Promise<RegExpExecArray>;
}

/** Watch a child spawned with piped stdout and stderr. */
export function watchOutput(child: Deno.ChildProcess): Watched {
  let text = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    const dec = new TextDecoder();
    for await (const chunk of s) text += dec.decode(chunk, { stream: true });
  };
  const done = Promise.all([pump(child.stdout), pump(child.stderr)]);
  return {
    text: () => text,
    until: (re, what, from = 0, boundMs = 240_000) =>
      within(
        (async () => {
          for (let gone = false;;) {
            const m = re.exec(text.slice(from));
            if (m) return Object.assign(m, { index: m.index + from });
            if (gone) throw new Error(`the process ended before ${what}:\n${text}`);
            gone = await Promise.race([done.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 100))]);
          }
        })(),
        boundMs,
        what,
      ),
  };
}
