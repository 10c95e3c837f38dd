// The coordinator of your own program's run, with walk-in ranks: it bundles program.ts,
// serves the bundle and the data to the walk-ins, and prints one command per slot.
// Run: deno run -A coordinator.ts <credentials.json> <nats ws url> [walk-in slots]
// (the NATS server is yours: nats-server with serverAuthorization(credentials)).
import { observe, packBytes, type RunCredentials, serveWalkIn } from "flodl-webgpu";
import { buildWalkIn } from "flodl-webgpu/vite";
import { builder, test, train } from "./program.ts";

const [credsFile, url, slots = "2"] = Deno.args;
const credentials = JSON.parse(await Deno.readTextFile(credsFile)) as RunCredentials;
const files = await buildWalkIn(new URL("./program.ts", import.meta.url));
const walkIn = await serveWalkIn(
  { ...files, packs: { train: await packBytes(train), test: await packBytes(test) } },
  { hostname: new URL(url).hostname },
);
builder.batchSize(32).numEpochs(2).cluster({ ranks: [{}] }).remoteRanks({
  slots: Number(slots),
  url,
  credentials,
  joinTimeoutSecs: 120,
  onJoinToken: (rank, token) => console.log(`walk-in ${rank}: ${walkIn.command(token)}`),
});
observe(builder, {
  chunk: (epoch, rank, offset, size) => console.log(`chunk ${epoch} ${rank} ${offset} ${size}`),
  rankLost: (rank, why) => console.log(`lost ${rank}: ${why.split("\n")[0]}`),
});
try {
  const handle = await builder.run();
  await handle.join();
  const acc = handle.evals.filter((e) => e.value !== undefined).at(-1)?.value;
  console.log(`done ${JSON.stringify({ acc, devices: handle.devices() })}`);
} finally {
  await walkIn.close();
}
