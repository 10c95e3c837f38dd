/**
 * A Deno process of a browser spec (test/fixtures/tab_coordinator.ts, `examples/train.ts
 * --join`): spawned from the repository with lavapipe's XDG_RUNTIME_DIR, its output kept for
 * waits and messages, stopped by its pid (and the nats-server it printed). join.spec and
 * tab_freeze.spec use it. Node APIs only (Playwright runs the specs in Node).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "..");
const DENO = join(root, "node_modules", ".bin", "deno");
/** Deno needs a private XDG_RUNTIME_DIR on lavapipe (scripts/env.sh). */
const env = { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? "/tmp" };

/** A Deno process whose output is kept; killed by its pid in `stop`. */
export class Proc {
  readonly child: ChildProcess;
  out = "";
  readonly exited: Promise<number>;
  constructor(args: string[]) {
    this.child = spawn(DENO, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (d) => (this.out += d));
    this.child.stderr!.on("data", (d) => (this.out += d));
    this.exited = new Promise((r) => this.child.on("exit", (code) => r(code ?? -1)));
  }
  /** Resolves with the first match of `re` in the output; rejects when the process exits first. */
  async wait(re: RegExp, what: string): Promise<RegExpExecArray> {
    let gone = false;
    void this.exited.then(() => (gone = true));
    for (;;) {
      const m = re.exec(this.out);
      if (m) return m;
      if (gone) throw new Error(`the process exited before ${what}:\n${this.out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  /** Kill it unless it ended, and the nats-server it started (by the pid it printed) unless it reported. */
  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    const nats = /^nats (\d+)$/m.exec(this.out);
    if (nats && !/^report /m.test(this.out)) {
      try {
        process.kill(Number(nats[1]), "SIGKILL");
      } catch { /* it had stopped */ }
    }
  }
  /** Samples of `rank`'s chunks folded so far (a tab coordinator's `fold` lines). */
  folded(rank: number): number {
    return [...this.out.matchAll(new RegExp(`^fold ${rank} (\\d+)$`, "gm"))].reduce((a, m) => a + Number(m[1]), 0);
  }
}
