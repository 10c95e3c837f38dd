/**
 * An emulated slow link for bench/slow_link.ts: a network namespace for the remote ranks,
 * joined to this host's namespace by a veth pair, with a tbf qdisc on both ends (the rate,
 * each direction). Latency is not here: this machine's kernel has no netem
 * (`tc qdisc add ... netem` → "Specified qdisc kind is unknown"), so bench/delay_proxy.ts
 * adds it in userspace.
 *
 * Everything is created under names that carry this process's pid (`flodl-nb-<pid>`,
 * `fnb<pid>h` / `fnb<pid>n`) and removed by those names: on `close()`, on SIGINT/SIGTERM,
 * and at the next start for a pid that no longer runs (a bench killed with SIGKILL). On a
 * signal, `onSignal` runs first (the caller kills its processes by pid), then whatever still
 * runs inside the namespace is killed (only the bench's ranks run there).
 * Needs root (CAP_NET_ADMIN); refuses clearly otherwise.
 */

const NS_PREFIX = "flodl-nb-";

/** A namespace behind a rate-limited veth pair. */
export interface SlowLink {
  /** The namespace's name (`ip netns exec <ns> ...`). */
  readonly ns: string;
  /** This host's end of the pair (what the ranks connect to) and the namespace's end. */
  readonly hostIp: string;
  readonly nsIp: string;
  /** The tbf rate, Mbit/s, each direction. */
  readonly mbit: number;
  /** Remove the namespace and the pair (idempotent). */
  close(): Promise<void>;
}

/** Run a command; throws naming the command and its stderr when it fails. */
async function sh(cmd: string, ...args: string[]): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    throw new Error(`bench/netns.ts: cannot run ${cmd} (${(e as Error).message}); it needs iproute2 (ip, tc)`, {
      cause: e,
    });
  }
  const dec = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `bench/netns.ts: \`${cmd} ${args.join(" ")}\` failed (exit ${out.code}): ${dec.decode(out.stderr).trim()}`,
    );
  }
  return dec.decode(out.stdout);
}

const quiet = (p: Promise<unknown>) => p.then(() => {}, () => {});

/** Refuse unless root: namespaces, veth pairs and qdiscs need CAP_NET_ADMIN. */
export function requireRoot(what: string): void {
  const uid = Deno.uid();
  if (uid !== 0) {
    throw new Error(
      `${what} must run as root: it creates a network namespace, a veth pair and tbf qdiscs (CAP_NET_ADMIN), ` +
        `and removes them after; got uid ${uid}. Run it with sudo, or skip it (bench/README.md, "A slow link").`,
    );
  }
}

function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Remove what an earlier bench process left behind (its pid no longer runs), by name. */
async function removeStale(): Promise<string[]> {
  const removed: string[] = [];
  for (const line of (await sh("ip", "netns", "list")).split("\n")) {
    const m = new RegExp(`^${NS_PREFIX}(\\d+)\\b`).exec(line.trim());
    if (m && !alive(Number(m[1]))) {
      await quiet(sh("ip", "netns", "del", `${NS_PREFIX}${m[1]}`));
      removed.push(`${NS_PREFIX}${m[1]}`);
    }
  }
  for (const line of (await sh("ip", "-o", "link", "show")).split("\n")) {
    const m = /^\d+:\s+fnb(\d+)h[@:]/.exec(line);
    if (m && !alive(Number(m[1]))) {
      await quiet(sh("ip", "link", "del", `fnb${m[1]}h`));
      removed.push(`fnb${m[1]}h`);
    }
  }
  return removed;
}

/** A /30 in 10.213.0.0/16 that no interface here uses. */
async function freeSubnet(): Promise<number> {
  const used = await sh("ip", "-4", "-o", "addr", "show");
  for (let i = 0; i < 64; i++) {
    const k = (Deno.pid + i) % 64;
    if (!used.includes(`10.213.${k}.`)) return k;
  }
  throw new Error("bench/netns.ts: no free /30 in 10.213.0.0/18 (every 10.213.k. is in use)");
}

/**
 * Create the namespace and the pair, rate-limit both ends to `mbit` Mbit/s.
 * @param log Progress lines (what was created or removed).
 */
export async function createSlowLink(
  mbit: number,
  log: (line: string) => void = () => {},
  onSignal: () => void = () => {},
): Promise<SlowLink> {
  requireRoot("bench/netns.ts createSlowLink");
  if (!(Number.isFinite(mbit) && mbit > 0 && mbit <= 10_000)) {
    throw new RangeError(`createSlowLink: mbit must be in (0, 10000], got ${mbit}`);
  }
  const stale = await removeStale();
  if (stale.length) log(`removed leftovers of a dead bench: ${stale.join(", ")}`);
  const ns = `${NS_PREFIX}${Deno.pid}`, host = `fnb${Deno.pid}h`, peer = `fnb${Deno.pid}n`;
  const k = await freeSubnet();
  const hostIp = `10.213.${k}.1`, nsIp = `10.213.${k}.2`;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    // Deleting the namespace deletes its end of the pair, and with it the host's end; the
    // second command is for a failure between `link add` and `set netns`.
    await quiet(sh("ip", "netns", "del", ns));
    await quiet(sh("ip", "link", "del", host));
    for (const s of signals) Deno.removeSignalListener(s.sig, s.fn);
    log(`removed ${ns} and ${host}`);
  };
  const killNamespace = async () => {
    const pids = await sh("ip", "netns", "pids", ns).catch(() => "");
    for (const pid of pids.split(/\s+/).filter(Boolean).map(Number)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  };
  const signals = (["SIGINT", "SIGTERM"] as const).map((sig) => ({
    sig,
    fn: () => {
      log(`${sig}: stopping the bench's processes and removing ${ns}`);
      onSignal();
      // Whatever still runs in the namespace is this bench's (ranks); a namespace with
      // processes in it outlives its name.
      killNamespace().then(close).finally(() => Deno.exit(130));
    },
  }));
  for (const s of signals) Deno.addSignalListener(s.sig, s.fn);
  // tbf: `burst` must hold a jiffy's worth at this rate; `latency` bounds the queue to about
  // one 20 ms RTT's bandwidth-delay product (a deeper queue would add bufferbloat delay).
  const burst = `${Math.max(32, Math.ceil((mbit * 1e6) / 8 / 1000 / 1024) * 2)}kb`;
  const tbf = ["root", "tbf", "rate", `${mbit}mbit`, "burst", burst, "latency", "25ms"];
  try {
    await sh("ip", "netns", "add", ns);
    await sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer);
    await sh("ip", "link", "set", peer, "netns", ns);
    await sh("ip", "addr", "add", `${hostIp}/30`, "dev", host);
    await sh("ip", "link", "set", host, "up");
    await sh("ip", "netns", "exec", ns, "ip", "addr", "add", `${nsIp}/30`, "dev", peer);
    await sh("ip", "netns", "exec", ns, "ip", "link", "set", peer, "up");
    await sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
    await sh("tc", "qdisc", "add", "dev", host, ...tbf);
    await sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", peer, ...tbf);
  } catch (e) {
    await close();
    throw e;
  }
  log(`created ${ns}: ${host} ${hostIp} <-> ${peer} ${nsIp} (in ${ns}), tbf ${mbit} Mbit/s burst ${burst} each way`);
  return { ns, hostIp, nsIp, mbit, close };
}

if (import.meta.main) {
  // `sudo deno run -A bench/netns.ts`: remove leftovers of dead benches (their pid no longer runs) and exit.
  requireRoot("bench/netns.ts");
  const removed = await removeStale();
  console.log(removed.length ? `removed ${removed.join(", ")}` : "nothing to remove");
}
