/**
 * The API reference, docs/API.md, written from the doc comments of the package's entries
 * (scripts/package_entries.ts) by `deno doc --json`: one page, readable where the code is
 * (a clone, the package's page, an editor), that changes only when a public signature or
 * its doc changes (no line numbers).
 *
 *   deno run -A scripts/api_reference.ts           # write docs/API.md
 *   deno run -A scripts/api_reference.ts --check   # the suite: `deno doc --lint` over the
 *                                                  # entries, and docs/API.md up to date
 *
 * `--check` prints one line per problem and exits 1: a public symbol without a doc comment
 * (or with a type the entries do not export) fails the suite, as does a stale page.
 */
import { PACKAGE_ENTRIES } from "./package_entries.ts";

const root = new URL("..", import.meta.url);
const OUT = "docs/API.md";

// ---- deno doc's JSON, as much of it as the page reads ----------------------------------

interface TsType {
  repr?: string;
  kind: string;
  // deno-lint-ignore no-explicit-any
  value?: any;
}
interface Param {
  kind: "identifier" | "assign" | "rest" | "object" | "array";
  name?: string;
  optional?: boolean;
  tsType?: TsType;
  left?: Param;
  right?: string;
  arg?: Param;
}
interface Tag {
  kind: string;
  name?: string;
  doc?: string;
  tsType?: TsType;
}
interface JsDoc {
  doc?: string;
  tags?: Tag[];
}
interface TypeParam {
  name: string;
  constraint?: TsType;
  default?: TsType;
}
interface FunctionDef {
  params: Param[];
  returnType?: TsType;
  isAsync?: boolean;
  typeParams?: TypeParam[];
}
interface Location {
  filename: string;
  line: number;
  col: number;
}
interface Declaration {
  declarationKind: string;
  kind: string;
  jsDoc?: JsDoc;
  location: Location;
  // deno-lint-ignore no-explicit-any
  def?: any;
}
interface DocSymbol {
  name: string;
  declarations: Declaration[];
}
interface DocModule {
  module_doc?: JsDoc;
  symbols: DocSymbol[];
}

async function denoDoc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = await new Deno.Command(Deno.execPath(), { args: ["doc", ...args], cwd: root, env: { NO_COLOR: "1" } }).output();
  const dec = new TextDecoder();
  return { code: p.code, out: dec.decode(p.stdout), err: dec.decode(p.stderr) };
}

// ---- types and signatures as TypeScript text -------------------------------------------

function paren(t: TsType): string {
  const s = type(t);
  return ["union", "intersection", "fnOrConstructor", "conditional"].includes(t.kind) ? `(${s})` : s;
}

function typeArgs(ts: TsType[] | undefined | null): string {
  return ts && ts.length ? `<${ts.map(type).join(", ")}>` : "";
}

function literal(v: { kind: string; string?: string; number?: number; boolean?: boolean; bigInt?: string }, repr?: string): string {
  switch (v.kind) {
    case "string":
      return JSON.stringify(v.string);
    case "number":
      return String(v.number);
    case "boolean":
      return String(v.boolean);
    case "bigInt":
      return `${v.bigInt}n`;
    default:
      return repr ?? "unknown";
  }
}

function members(v: {
  properties?: { name: string; optional?: boolean; readonly?: boolean; tsType?: TsType; computed?: boolean }[];
  methods?: { name: string; optional?: boolean; kind?: string; params: Param[]; returnType?: TsType; typeParams?: TypeParam[] }[];
  callSignatures?: { params: Param[]; tsType?: TsType; typeParams?: TypeParam[] }[];
  indexSignatures?: { params: Param[]; tsType?: TsType; readonly?: boolean }[];
}): string[] {
  const out: string[] = [];
  for (const s of v.callSignatures ?? []) out.push(`${typeParams(s.typeParams)}(${params(s.params)})${ret(s.tsType)}`);
  for (const s of v.indexSignatures ?? []) out.push(`${s.readonly ? "readonly " : ""}[${params(s.params)}]${ret(s.tsType)}`);
  for (const p of v.properties ?? []) out.push(`${p.readonly ? "readonly " : ""}${p.name}${p.optional ? "?" : ""}${ret(p.tsType)}`);
  for (const m of v.methods ?? []) {
    const pre = m.kind === "getter" ? "get " : m.kind === "setter" ? "set " : "";
    out.push(`${pre}${m.name}${m.optional ? "?" : ""}${typeParams(m.typeParams)}(${params(m.params)})${ret(m.returnType)}`);
  }
  return out;
}

function type(t: TsType | undefined | null): string {
  if (!t) return "unknown";
  const v = t.value;
  switch (t.kind) {
    case "keyword":
      return v;
    case "this":
      return "this";
    case "typeRef":
      return `${v.typeName}${typeArgs(v.typeParams)}`;
    case "literal":
      return v.kind === "template" ? (t.repr ?? "string") : literal(v, t.repr);
    case "array":
      return `${paren(v)}[]`;
    case "union":
      return (v as TsType[]).map(type).join(" | ");
    case "intersection":
      return (v as TsType[]).map(paren).join(" & ");
    case "typeOperator":
      return `${v.operator} ${paren(v.tsType)}`;
    case "tuple":
      return `[${(v as TsType[]).map(type).join(", ")}]`;
    case "parenthesized":
      return `(${type(v)})`;
    case "optional":
      return `${type(v)}?`;
    case "rest":
      return `...${type(v)}`;
    case "indexedAccess":
      return `${paren(v.objType)}[${type(v.indexType)}]`;
    case "typeQuery":
      return `typeof ${typeof v === "string" ? v : (v?.exprName ?? t.repr)}`;
    case "typePredicate":
      return `${v.asserts ? "asserts " : ""}${v.param?.name ?? "this"}${v.type ? ` is ${type(v.type)}` : ""}`;
    case "fnOrConstructor":
      return `${v.constructor ? "new " : ""}${typeParams(v.typeParams)}(${params(v.params)}) => ${type(v.tsType)}`;
    case "typeLiteral": {
      const m = members(v);
      return m.length ? `{ ${m.join("; ")} }` : "{}";
    }
    case "mapped":
      return `{ ${v.readonly ? "readonly " : ""}[${v.typeParam.name} in ${type(v.typeParam.constraint)}]${v.optional ? "?" : ""}: ${type(v.tsType)} }`;
    case "conditional":
      return `${type(v.checkType)} extends ${type(v.extendsType)} ? ${type(v.trueType)} : ${type(v.falseType)}`;
    case "infer":
      return `infer ${v.typeParam.name}`;
    case "importType":
      return `import(${JSON.stringify(v.specifier)})${v.qualifier ? `.${v.qualifier}` : ""}${typeArgs(v.typeParams)}`;
    default:
      return t.repr ?? t.kind;
  }
}

function ret(t: TsType | undefined | null): string {
  return t ? `: ${type(t)}` : "";
}

function param(p: Param): string {
  switch (p.kind) {
    case "identifier":
      return `${p.name}${p.optional ? "?" : ""}${ret(p.tsType)}`;
    case "assign": {
      // `x = 1` shows as `x?: T = 1`. deno doc gives a default as source text without the
      // quotes of a string, so only numbers, booleans and null are shown; the doc comments
      // say the others.
      const l = p.left!;
      const t = l.tsType ?? p.tsType;
      const shown = /^(-?[0-9][0-9_.e+-]*|true|false|null|-?Infinity)$/.test(p.right ?? "") ? ` = ${p.right}` : "";
      return `${l.kind === "identifier" ? l.name : param(l)}?${ret(t)}${shown}`;
    }
    case "rest":
      return `...${param(p.arg!)}${p.arg?.tsType ? "" : ret(p.tsType)}`;
    default:
      return `${p.kind === "object" ? "{…}" : "[…]"}${p.optional ? "?" : ""}${ret(p.tsType)}`;
  }
}

function params(ps: Param[] | undefined): string {
  return (ps ?? []).map(param).join(", ");
}

function typeParams(tps: TypeParam[] | undefined | null): string {
  if (!tps || !tps.length) return "";
  return `<${tps.map((p) => `${p.name}${p.constraint ? ` extends ${type(p.constraint)}` : ""}${p.default ? ` = ${type(p.default)}` : ""}`).join(", ")}>`;
}

function fnSig(name: string, f: FunctionDef): string {
  return `${f.isAsync ? "async " : ""}${name}${typeParams(f.typeParams)}(${params(f.params)})${ret(f.returnType)}`;
}

// ---- doc comments as Markdown ----------------------------------------------------------

/** `{@link X}` / `{@link X text}` → `X` / text. */
function links(s: string): string {
  return s.replace(/\{@link(?:code|plain)?\s+([^}\s|]+)(?:\s*[|\s]\s*([^}]+))?\}/g, (_, target, text) => text ? text.trim() : `\`${target}\``);
}

function doc(j: JsDoc | undefined): string {
  if (!j) return "";
  const parts: string[] = [];
  if (j.doc) parts.push(links(j.doc.trim()));
  const tags = j.tags ?? [];
  const ps = tags.filter((t) => t.kind === "param" && t.doc);
  if (ps.length) parts.push(ps.map((t) => `- \`${t.name}\`: ${links(t.doc!.trim())}`).join("\n"));
  for (const t of tags) {
    if (t.kind === "return" && t.doc) parts.push(`Returns ${links(t.doc.trim())}`);
    else if (t.kind === "throws") parts.push(`Throws${t.tsType ? ` \`${type(t.tsType)}\`` : ""}${t.doc ? `: ${links(t.doc.trim())}` : ""}`);
    else if (t.kind === "deprecated") parts.push(`**Deprecated.** ${links(t.doc?.trim() ?? "")}`);
    else if (t.kind === "example" && t.doc) parts.push(links(t.doc.trim()).replace(/```ts ignore/g, "```ts"));
  }
  return parts.join("\n\n");
}

const indent = (s: string, by = "  ") => s.split("\n").map((l) => (l ? by + l : l)).join("\n");

// ---- the page ----------------------------------------------------------------------------

/** Every declaration by where it is, for the `reference`s of a namespace (`export { f } from`). */
const declared = new Map<string, Declaration>();
const at = (l: Location) => `${l.filename}:${l.line}:${l.col}`;
function collect(syms: DocSymbol[]): void {
  for (const s of syms) {
    for (const d of s.declarations) {
      if (d.kind !== "reference") declared.set(at(d.location), d);
      if (d.kind === "namespace") collect(d.def?.elements ?? []);
    }
  }
}

/** A declaration's signature line and the list of its members (signature, doc). */
function render(name: string, decl: Declaration): { sig: string; items: [string, string][] } {
  const d = decl.kind === "reference" ? declared.get(at(decl.def.target)) ?? decl : decl;
  const def = d.def ?? {};
  const items: [string, string][] = [];
  switch (d.kind) {
    case "function":
      return { sig: `function ${fnSig(name, def)}`, items };
    case "variable":
      return { sig: `${def.kind ?? "const"} ${name}${ret(def.tsType)}`, items };
    case "typeAlias":
      return { sig: `type ${name}${typeParams(def.typeParams)} = ${type(def.tsType)}`, items };
    case "enum":
      for (const m of def.members ?? []) items.push([m.name, doc(m.jsDoc)]);
      return { sig: `enum ${name}`, items };
    case "interface": {
      const ext = (def.extends ?? []).map(type);
      for (const s of def.callSignatures ?? []) items.push([`${typeParams(s.typeParams)}(${params(s.params)})${ret(s.tsType)}`, doc(s.jsDoc)]);
      for (const s of def.indexSignatures ?? []) items.push([`[${params(s.params)}]${ret(s.tsType)}`, doc(s.jsDoc)]);
      for (const p of def.properties ?? []) items.push([`${p.readonly ? "readonly " : ""}${p.name}${p.optional ? "?" : ""}${ret(p.tsType)}`, doc(p.jsDoc)]);
      for (const m of def.methods ?? []) {
        const pre = m.kind === "getter" ? "get " : m.kind === "setter" ? "set " : "";
        items.push([`${pre}${m.name}${m.optional ? "?" : ""}${typeParams(m.typeParams)}(${params(m.params)})${ret(m.returnType)}`, doc(m.jsDoc)]);
      }
      return { sig: `interface ${name}${typeParams(def.typeParams)}${ext.length ? ` extends ${ext.join(", ")}` : ""}`, items };
    }
    case "class": {
      const ext = def.extends ? ` extends ${def.extends}${typeArgs(def.superTypeParams)}` : "";
      const impl = (def.implements ?? []).length ? ` implements ${def.implements.map(type).join(", ")}` : "";
      const visible = (m: { accessibility?: string }) => m.accessibility !== "private" && m.accessibility !== "protected";
      for (const c of (def.constructors ?? []).filter(visible)) items.push([`new ${name}(${params(c.params)})`, doc(c.jsDoc)]);
      for (const p of (def.properties ?? []).filter(visible)) {
        items.push([`${p.isStatic ? "static " : ""}${p.readonly ? "readonly " : ""}${p.name}${p.optional ? "?" : ""}${ret(p.tsType)}`, doc(p.jsDoc)]);
      }
      for (const m of (def.methods ?? []).filter(visible)) {
        const pre = `${m.isStatic ? "static " : ""}${m.kind === "getter" ? "get " : m.kind === "setter" ? "set " : ""}`;
        items.push([`${pre}${fnSig(m.name, m.functionDef)}`, doc(m.jsDoc)]);
      }
      return { sig: `${def.isAbstract ? "abstract " : ""}class ${name}${typeParams(def.typeParams)}${ext}${impl}`, items };
    }
    default:
      return { sig: `${d.kind} ${name}`, items };
  }
}

const relative = (file: string) => decodeURIComponent(new URL(file).pathname).slice(decodeURIComponent(root.pathname).length);
const anchor = (spec: string, name: string) => `${spec}-${name}`.toLowerCase().replace(/[^a-z0-9]+/g, "-");

function symbolSection(spec: string, s: DocSymbol, prefix = ""): string[] {
  const out: string[] = [];
  const decls = s.declarations.filter((d) => d.declarationKind !== "private");
  if (!decls.length) return out;
  const full = prefix + s.name;
  out.push(`<a id="${anchor(spec, full)}"></a>`, `### \`${full}\``, "");
  for (const d of decls) {
    if (d.kind === "namespace") {
      out.push(`Namespace (from \`${relative(d.location.filename)}\`).`, "");
      const text = doc(d.jsDoc);
      if (text) out.push(text, "");
      for (const e of [...(d.def?.elements ?? [])].sort(byName)) {
        for (const ed of e.declarations.filter((x: Declaration) => x.declarationKind !== "private")) {
          const { sig, items } = render(e.name, ed);
          out.push(`- \`${full}.${e.name}\`: \`${sig}\``);
          const t = doc(ed.jsDoc);
          if (t) out.push("", indent(t), "");
          for (const [isig, idoc] of items) out.push(indent(`- \`${isig}\``), ...(idoc ? ["", indent(idoc, "    "), ""] : []));
        }
      }
      out.push("");
      continue;
    }
    const { sig, items } = render(s.name, d);
    out.push("```ts", sig, "```", "");
    const text = doc(d.jsDoc);
    if (text) out.push(text, "");
    out.push(`<sub>${relative(d.location.filename)}</sub>`, "");
    for (const [isig, idoc] of items) {
      out.push(`- \`${isig}\``);
      if (idoc) out.push("", indent(idoc), "");
    }
    if (items.length) out.push("");
  }
  return out;
}

const byName = (a: DocSymbol, b: DocSymbol) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The page for `entries` (specifier → source file relative to the repository). */
export async function page(entries: Readonly<Record<string, string>> = PACKAGE_ENTRIES): Promise<string> {
  const specs = Object.entries(entries);
  const r = await denoDoc(["--json", ...specs.map(([, f]) => f)]);
  if (r.code !== 0) throw new Error(`deno doc --json failed: ${r.err.trim().split("\n")[0]}`);
  const nodes = JSON.parse(r.out).nodes as Record<string, DocModule>;
  for (const m of Object.values(nodes)) collect(m.symbols);
  const head = [
    "# API reference",
    "",
    "Generated from the doc comments by `npm run docs:api` (scripts/api_reference.ts); edit the",
    "comments, not this page. Each entry is an import specifier of the package; within an",
    "entry, names are in alphabetical order. A parameter with a default shows as `name?: T`,",
    "with the default when it is a number or a boolean (`dim?: number = -1`).",
    "",
  ];
  const toc: string[] = [];
  const body: string[] = [];
  for (const [spec, file] of specs) {
    const m = nodes[new URL(file, root).href];
    if (!m) throw new Error(`deno doc gave nothing for ${file}`);
    const syms = m.symbols.filter((s) => s.declarations.some((d) => d.declarationKind !== "private")).sort(byName);
    toc.push(`- [\`${spec}\`](#${anchor("entry", spec)}): ${syms.map((s) => `[${s.name}](#${anchor(spec, s.name)})`).join(", ")}`);
    body.push(`<a id="${anchor("entry", spec)}"></a>`, `## \`${spec}\``, "", `Source: \`${file}\`.`, "");
    const md = doc(m.module_doc);
    if (md) body.push(md, "");
    for (const s of syms) body.push(...symbolSection(spec, s));
  }
  return [...head, ...toc, "", ...body].join("\n").replace(/\n{3,}/g, "\n\n").trimEnd() + "\n";
}

/** `deno doc --lint` over `files`: one line per problem, `file:line:col: kind: message`. */
export async function lint(files: readonly string[] = Object.values(PACKAGE_ENTRIES)): Promise<string[]> {
  const r = await denoDoc(["--lint", ...files]);
  if (r.code === 0) return [];
  // deno doc --lint: "error[kind]: message" then "--> file:line:col"; one line each.
  const lines = (r.out + r.err).split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^error\[([^\]]+)\]: (.*)$/.exec(lines[i]);
    if (!m) continue;
    const at = lines.slice(i + 1, i + 4).map((l) => /-->\s*(\S+)/.exec(l)?.[1]).find(Boolean);
    out.push(`${at ? relative(at.startsWith("file:") ? at : new URL(at, root).href) : "?"}: ${m[1]}: ${m[2]}`);
  }
  return out.length ? out : [`deno doc --lint failed: ${(r.err || r.out).trim().split("\n")[0]}`];
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const unknown = Deno.args.filter((a) => a !== "--check");
  if (unknown.length) {
    console.error(`api_reference.ts: unknown argument ${unknown[0]} (want nothing, or --check)`);
    Deno.exit(2);
  }
  try {
    const text = await page();
    const path = new URL(OUT, root);
    if (!check) {
      await Deno.writeTextFile(path, text);
      console.log(`${OUT}: ${text.split("\n").length} lines`);
    } else {
      const problems = await lint();
      const old = await Deno.readTextFile(path).catch(() => "");
      if (old !== text) problems.push(`${OUT} is not what the doc comments give: run npm run docs:api and commit it`);
      for (const p of problems) console.error(p);
      if (problems.length) {
        console.error(`api reference: ${problems.length} problem(s)`);
        Deno.exit(1);
      }
      console.log(`api reference: ${Object.keys(PACKAGE_ENTRIES).length} entries documented, ${OUT} up to date`);
    }
  } catch (e) {
    console.error(`api_reference.ts: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
