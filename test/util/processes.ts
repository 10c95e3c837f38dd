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
