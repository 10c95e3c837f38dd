/**
 * Writes the tiny program's blobs (test/fixtures/programs/tiny.ts) as a pack file, for the
 * browser data-plane checks (test/browser/dataplane.spec.ts runs it, then Vite serves the file):
 * `deno run -A --no-check test/util/write_tiny_pack.ts <out.safetensors>`.
 */
import { writePack } from "../../src/data/mod.ts";
import { data } from "../fixtures/programs/tiny.ts";

const out = Deno.args[0];
if (!out) throw new Error("usage: write_tiny_pack.ts <out.safetensors>");
await Deno.mkdir(out.replace(/\/[^/]*$/, ""), { recursive: true });
const file = await Deno.open(out, { write: true, create: true, truncate: true });
try {
  await writePack(data, async (bytes) => {
    for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
  });
} finally {
  file.close();
}
