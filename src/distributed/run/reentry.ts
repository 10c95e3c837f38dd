/**
 * SPMD re-entry: a rank worker re-imports the module
 * that called `Trainer.builder()`, and the builder created at the same call site
 * (URL:line:col) is the rank's. Role and registry live on `globalThis` under
 * `Symbol.for` keys, because a production build can hold two copies of this library
 * in one worker.
 *
 * A bundle moves lines, so a site also carries its ordinal: how many `Trainer.builder()`
 * calls its module made before it. A bundled rank (a walk-in, src/distributed/serve/) finds
 * its builder by that ordinal alone, whatever the bundle's URL, line and column; what makes
 * it the coordinator's program is the bundle's sha256, checked before it runs, and the
 * layout digest of the hello.
 */

/** Where `Trainer.builder()` was called. */
export interface CallSite {
  /** URL of the calling module (`file://`, `https://` or `blob:`). */
  url: string;
  /** Line of the call in that module, 1-based. */
  line: number;
  /** Column of the call, 1-based. */
  col: number;
  /**
   * The call's place among the `Trainer.builder()` calls its module made, 0-based, counted
   * as they run: what survives a bundler (absent on a site made by hand: taken as 0).
   */
  ordinal?: number;
}

/** What a rank worker knows about itself, from the worker's `name`. */
export interface RankRole {
  rank: number;
  world: number;
  /** Module the worker imports. */
  entry: string;
  /** Call site of the coordinator's builder. */
  site: CallSite;
  /** Milliseconds to wait for the builder before failing init. */
  timeoutMs: number;
  /** Run id, so stale workers of an earlier run cannot be confused with this one. */
  session: string;
  /** The coordinator's program arguments ({@link programArgs}), set before the entry is imported. */
  args?: Record<string, unknown>;
  /**
   * A remote rank whose entry is a transformed copy of the coordinator's module (a browser
   * tab through Vite): the single builder created in the entry module is this rank's,
   * whatever its line:col (joinRun's `anyLine`).
   */
  anyLine?: boolean;
  /**
   * The program is a bundle (a walk-in): the builder is the one whose ordinal is
   * `site.ordinal` among those created at the entry's URL, at any line:col.
   */
  bundled?: boolean;
}

/** A builder as the registry sees it: its site, and a promise-free view of its readiness. */
export interface Registered<B> {
  site: CallSite;
  builder: B;
  /** True once `.run()` was called on it in the rank role. */
  ran: boolean;
}

interface Registry {
  builders: Registered<unknown>[];
  onChange?: () => void;
  /** `Trainer.builder()` calls so far per module URL (the next site's ordinal). */
  calls?: Map<string, number>;
}

const ROLE = Symbol.for("flodl-webgpu.rankRole");
const ARGS = Symbol.for("flodl-webgpu.programArgs");
const REGISTRY = Symbol.for("flodl-webgpu.builderRegistry");
const g = globalThis as { [k: symbol]: unknown };

/** True inside a rank worker (guard DOM work in entry modules with `if (!isRank())`). */
export function isRank(): boolean {
  return g[ROLE] !== undefined;
}

/** The rank role of this worker, if any. */
export function rankRole(): RankRole | undefined {
  return g[ROLE] as RankRole | undefined;
}

/** Enter the rank role (workers/rank.ts does this before importing the entry). */
export function enterRankRole(role: RankRole): void {
  g[ROLE] = role;
  g[ARGS] = role.args ?? {};
}

/**
 * Program arguments a page passes to its entry module, the web's `Deno.args`: set them
 * with {@link setProgramArgs} before importing the module that calls `Trainer.builder()`;
 * every rank sees the same values while it re-runs that module. JSON-serializable.
 */
export function programArgs(): Record<string, unknown> {
  return (g[ARGS] as Record<string, unknown> | undefined) ?? {};
}

/** Set the program arguments ranks will see (coordinator side, before importing the entry). */
export function setProgramArgs(args: Record<string, unknown>): void {
  g[ARGS] = JSON.parse(JSON.stringify(args));
}

function registry(): Registry {
  return (g[REGISTRY] ??= { builders: [] }) as Registry;
}

/** Record a builder created in the rank role. */
export function register<B>(site: CallSite, builder: B): Registered<B> {
  const r: Registered<B> = { site, builder, ran: false };
  registry().builders.push(r as Registered<unknown>);
  registry().onChange?.();
  return r;
}

/** True once a builder was created at `site` in the rank role (a program that joins a run from its own top level). */
export function registeredAt(site: CallSite): boolean {
  return registry().builders.some((b) => sameSite(b.site, site));
}

/** True once the builder of `role` was created (by its site, or by its ordinal when bundled). */
export function registeredFor(role: RankRole): boolean {
  return findBuilder(role) !== undefined;
}

/** Mark a registered builder as run (its entry module has attached everything). */
export function markRan(builder: unknown): void {
  const r = registry().builders.find((x) => x.builder === builder);
  if (r) {
    r.ran = true;
    registry().onChange?.();
  }
}

/** `url:line:col`. */
export function siteString(s: CallSite): string {
  return `${s.url}:${s.line}:${s.col}`;
}

/** How a refusal names the builder a rank looks for: its site, or its ordinal in a bundle. */
function wanted(role: RankRole): string {
  return role.bundled ? `Trainer.builder() call #${(role.site.ordinal ?? 0) + 1} of the bundled program` : `Trainer.builder() call at ${siteString(role.site)}`;
}

// NOTE: Deno names a module imported from a Blob `blob:null/<uuid>` (no `//`): a walk-in's bundle.
const FRAME = /^\s*at (?:async )?(?:.*? \()?((?:https?|file):\/\/[^\s()]+?|blob:[^\s()]+?):(\d+):(\d+)\)?\s*$/;

/** Parse one V8 stack frame into a call site. */
export function parseFrame(line: string): CallSite | undefined {
  const m = FRAME.exec(line);
  return m ? { url: m[1], line: Number(m[2]), col: Number(m[3]) } : undefined;
}

/**
 * The call site of the function that called `fn` (V8: Chromium and Deno). Firefox and
 * Safari have no `captureStackTrace`; there the first frame outside this library is used.
 * Each call counts as one more call of its module: the site's `ordinal` is the count before it.
 */
export function callerSite(fn: (...args: never[]) => unknown): CallSite {
  const holder: { stack?: string } = {};
  const E = Error as unknown as { captureStackTrace?: (o: object, f: unknown) => void };
  if (E.captureStackTrace) E.captureStackTrace(holder, fn);
  else holder.stack = new Error().stack;
  for (const line of (holder.stack ?? "").split("\n")) {
    const site = parseFrame(line) ?? parseFirefox(line);
    if (site && (E.captureStackTrace || !site.url.includes("/src/distributed/"))) {
      const calls = registry().calls ??= new Map();
      const key = stripT(site.url);
      const ordinal = calls.get(key) ?? 0;
      calls.set(key, ordinal + 1);
      site.ordinal = ordinal;
      return site;
    }
  }
  throw new Error(`Trainer.builder: cannot read the caller's location from the stack:\n${holder.stack}`);
}

function parseFirefox(line: string): CallSite | undefined {
  const m = /@((?:https?|file|blob):\/\/[^\s]+?):(\d+):(\d+)$/.exec(line.trim());
  return m ? { url: m[1], line: Number(m[2]), col: Number(m[3]) } : undefined;
}

function sameSite(a: CallSite, b: CallSite): boolean {
  return a.url === b.url && a.line === b.line && a.col === b.col;
}

/** A module URL without Vite's `?t=` cache-busting query. */
function stripT(u: string): string {
  return u.replace(/[?&]t=\d+/, "").replace(/\?$/, "");
}

/** URLs differ only by Vite's `?t=` cache-busting query. */
function sameModule(a: string, b: string): boolean {
  return stripT(a) === stripT(b);
}

/**
 * The builder of `role` among those registered: at the coordinator's call site; or, in a
 * bundle, the one of the entry with the site's ordinal; or (explicit entry of another
 * bundle, or `anyLine`) the entry's single builder.
 */
function findBuilder(role: RankRole): Registered<unknown> | undefined {
  const reg = registry();
  const inEntry = () => reg.builders.filter((b) => sameModule(b.site.url, role.entry));
  if (role.bundled) return inEntry().find((b) => (b.site.ordinal ?? 0) === (role.site.ordinal ?? 0));
  const explicit = !sameModule(role.entry, role.site.url);
  return reg.builders.find((b) => sameSite(b.site, role.site)) ??
    reg.builders.find((b) => sameModule(b.site.url, role.site.url) && b.site.line === role.site.line && b.site.col === role.site.col) ??
    (explicit && reg.builders.length === 1 ? reg.builders[0] : undefined) ??
    (role.anyLine && inEntry().length === 1 ? inEntry()[0] : undefined);
}

/**
 * Wait for this rank's builder: the one created at the coordinator's call site (or,
 * when the entry was given explicitly and is another bundle, the single builder that
 * entry created). Resolves when its `.run()` is called or the entry import settles;
 * rejects (never hangs) when the import settles without it or after `timeoutMs`.
 */
export function awaitBuilder<B>(role: RankRole, evaluation: Promise<unknown>): Promise<B> {
  const reg = registry();
  const find = () => findBuilder(role);
  return new Promise<B>((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reg.onChange = undefined;
      if (err) reject(err);
      else resolve(find()!.builder as B);
    };
    reg.onChange = () => {
      if (find()?.ran) finish();
    };
    const timer = setTimeout(() => {
      finish(find() ? undefined : new Error(notReached(role, `the entry module was still running after ${role.timeoutMs} ms`)));
    }, role.timeoutMs);
    evaluation.then(
      () => finish(find() ? undefined : new Error(notReached(role, "the entry module finished"))),
      (e) => finish(new Error(`rank ${role.rank}: importing the entry module ${role.entry} failed: ${e?.name ?? "Error"}: ${e?.message ?? e}`)),
    );
    reg.onChange();
  });
}

function notReached(role: RankRole, why: string): string {
  const seen = registry().builders.map((b) => siteString(b.site));
  return `rank ${role.rank}: the ${wanted(role)} was not reached when ${why} ` +
    `(entry module ${role.entry}; builders this rank saw: ${seen.length ? seen.join(", ") : "none"}). ` +
    "A rank re-runs the entry module's top level: create the builder there (not inside a function, an event " +
    "handler or after an await that never settles in a worker), or pass .entry(url) of a module that does";
}
