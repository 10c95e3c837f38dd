/**
 * `npm start`: data-parallel training of a ddp-bench model (MNIST classifiers,
 * the conv autoencoder, char-rnn and gpt-nano on the Brown Corpus) in Deno, several ranks
 * (Web Workers, each its own WebGPU device), progress on the terminal, and at the end a
 * dashboard, the record log, the timeline and the model under runs/<name>/.
 * `npm start -- --help` lists flags.
 *
 * This module is also every rank's entry: ranks re-run its top level (same Deno.args),
 * so the data are loaded and the builder is created here, at top level; console output is
 * coordinator-only.
 *
 * `--serve N` adds N remote ranks (a nats-server, or `--nats-cluster K` routed nodes that every
 * client fails over among; one printed join command per rank; for the MNIST models also a
 * walk-in command, `deno run --allow-net=… <URL> <token>`, served with the bundle and the data
 * from here: src/distributed/serve/; and a tab link, https, one link per slot that a machine
 * with only a browser opens: `--tls-cert/--tls-key` PEM files, else a self-signed certificate
 * for the advertised address whose fingerprint is printed);
 * `--spare N` N more slots that remote ranks may join while the run goes (elastic, admitted
 * at the next epoch boundary); `--join <token>` makes this process one of them (README
 * "Ranks on other machines").
 */
import {
  assignRelay,
  certificateDigests,
  createRunCredentials,
  Device,
  ElCheConfig,
  encodeSafetensors,
  fromArray,
  isRank,
  joinRun,
  observe,
  packBytes,
  readTlsFiles,
  selfSignedCertificate,
  serverAuthorization,
  serveWalkIn,
  setProgramArgs,
  Timeline,
} from "../src/index.ts";
import { HELP, parseTrainArgs, settingsOf, type TrainArgs } from "./args.ts";
import { exitNow } from "./exit.ts";
import { buildModel } from "../src/zoo/mod.ts";
import { Progress, sampleProgress } from "./progress.ts";
import type { Metric } from "../src/zoo/mod.ts";
import { sampleText } from "./sample.ts";
import { startNatsCluster } from "../scripts/nats_server.ts";
import { buildWalkIn } from "../src/vite_plugin.ts";

const enc = new TextEncoder();

/** The module ranks re-enter (worker ranks, `--join` processes, browser tabs): the builder is created there. */
const PROGRAM = new URL("./program.ts", import.meta.url);

/** `--tls-cert <pem>` / `--tls-key <pem>` (the walk-in server's https for tab links), taken out of what args.ts parses. */
const tlsFiles: { cert?: string; key?: string } = {};

function parse(): TrainArgs {
  try {
    const rest: string[] = [];
    for (let i = 0; i < Deno.args.length; i++) {
      const flag = Deno.args[i];
      if (flag !== "--tls-cert" && flag !== "--tls-key") {
        rest.push(flag);
        continue;
      }
      const v = Deno.args[++i];
      if (!v || v.startsWith("--")) throw new RangeError(`${flag} must be the path of a PEM file, got ${JSON.stringify(v ?? "")}`);
      tlsFiles[flag === "--tls-cert" ? "cert" : "key"] = v;
    }
    if ((tlsFiles.cert === undefined) !== (tlsFiles.key === undefined)) {
      throw new RangeError(`--tls-cert and --tls-key go together (a certificate and its key), got only ${tlsFiles.cert ? "--tls-cert" : "--tls-key"}`);
    }
    return parseTrainArgs(rest);
  } catch (e) {
    console.error(`npm start: ${(e as Error).message}`);
    Deno.exit(2);
  }
}

const args = parse();
if (args.join) {
  // A remote rank: the token carries the coordinator's program arguments; serve until the run ends.
  // A bad token is one line and exit 2 (bad input); a rank that never served (refused at
  // join, no answer, no server) one line and exit 1.
  let done: Promise<string>;
  try {
    done = joinRun(args.join, { entry: PROGRAM, log: (line) => console.log(line) }).done;
  } catch (e) {
    console.error(`npm start --join: ${(e as Error).message}`);
    Deno.exit(2);
  }
  done.then(
    () => exitNow(0),
    (e) => {
      console.error(`npm start --join: ${(e as Error).message}`);
      exitNow(1);
    },
  );
} else if (args.help) {
  console.log(HELP.trimEnd());
  console.log(`  --tls-cert <pem> --tls-key <pem>
                                 --serve's walk-in tab links (https): this certificate and key
                                 (default: a self-signed one for the advertised address, its
                                 fingerprint printed)`);
  Deno.exit(0);
} else {
  // The web's Deno.args: set before the program is imported; worker ranks see the same values.
  setProgramArgs({ ...settingsOf(args) });
  await makeRunDir(args);
}
const { builder, recipe, settings, train, test, vocab, vocabSize } = isRank()
  ? {} as typeof import("./program.ts")
  : await importProgram();

/** The run's folder, made before any data is read: a folder that cannot be made is one line naming --out, exit 2. */
async function makeRunDir(a: TrainArgs): Promise<void> {
  const dir = `${a.out}/${a.name}`;
  try {
    await Deno.mkdir(dir, { recursive: true });
  } catch (e) {
    const [out, why] = [JSON.stringify(a.out), (e as Error).message];
    console.error(`npm start: --out ${out}: cannot make the run folder ${JSON.stringify(dir)}: ${why}`);
    Deno.exit(2);
  }
}

/**
 * The program module, which loads the data: a bad subset (RangeError, naming the flag) is one
 * line and exit 2; data that cannot be read (the error names the file and how to get it) one
 * line and exit 1.
 */
async function importProgram(): Promise<typeof import("./program.ts")> {
  try {
    return await import("./program.ts");
  } catch (e) {
    console.error(`npm start: ${(e as Error).message}`);
    Deno.exit(e instanceof RangeError || e instanceof TypeError ? 2 : 1);
  }
}

/** The eval metric as the terminal shows it. */
const EVAL_TEXT: Record<Metric, (v: number) => string> = {
  accuracy: (v) => `test acc ${(v * 100).toFixed(2)}%`,
  mse: (v) => `test MSE ${v.toFixed(5)}`,
  ce: (v) => `validation CE ${v.toFixed(4)}`,
};

if (!isRank()) {
  const stopServer = args.serve || args.spare ? await serve(args) : undefined;
  try {
    await main(args);
  } finally {
    await stopServer?.();
  }
  exitNow(0); // every file is written: skip a teardown that can crash (examples/exit.ts)
}

/**
 * `--serve N` (and `--spare S`): a nats-server with this run's credentials, and N awaited
 * remote slots (plus S spare ones) on the builder whose join commands are printed. Returns
 * the server's stop.
 */
async function serve(a: TrainArgs): Promise<() => Promise<void>> {
  const world = a.ranks + a.serve + a.spare;
  const creds = await createRunCredentials(world + a.relays);
  // Relay j sums an even share of the awaited remote ranks, in order; its slot follows every rank's.
  for (let j = 0; j < a.relays; j++) {
    const from = a.ranks + Math.floor((j * a.serve) / a.relays), to = a.ranks + Math.floor(((j + 1) * a.serve) / a.relays);
    assignRelay(creds, world + j, Array.from({ length: to - from }, (_, i) => from + i));
  }
  const cluster = await startNatsCluster(a.natsCluster, { host: a.natsHost, authorization: serverAuthorization(creds) });
  const ports = cluster.wsUrls.map((u) => new URL(u).port);
  const any = a.natsHost === "0.0.0.0" || a.natsHost === "::";
  // The coordinator connects on this machine; remote ranks to the address they can reach. Every node's, for failover.
  const url = ports.map((p) => `ws://${any ? "127.0.0.1" : a.natsHost}:${p}`);
  const joinUrl = ports.map((p) => `ws://${any ? Deno.hostname() : a.natsHost}:${p}`);
  // A rank re-enters examples/program.ts with the program arguments in its token: the flags need not follow it.
  console.log(
    (a.natsCluster > 1
      ? `a NATS cluster of ${a.natsCluster} nodes (pids ${cluster.nodes.map((n) => n.pid).join(", ")}) on ${joinUrl.join(", ")}`
      : `nats-server pid ${cluster.nodes[0].pid} on ${joinUrl[0]}`) + `; waiting for ${a.serve} remote rank(s)` +
      (a.spare ? `, ${a.spare} spare slot(s) open while the run goes (joins are admitted at the next epoch boundary)` : "") +
      `. Each slot once, on any machine: a Deno process (a checkout of this repository), or a browser tab ` +
      `on the demo page (${a.tabUrl}: \`npm run demo\` there; WebGPU needs localhost or https):`,
  );
  const firstSpare = a.ranks + a.serve;
  const walkIn = recipe.data === "mnist" ? await startWalkIn(a.natsHost, any ? Deno.hostname() : a.natsHost) : undefined;
  const tab = (token: string) => {
    const u = new URL(a.tabUrl);
    u.searchParams.set("join", token);
    return u.href;
  };
  builder.remoteRanks({
    slots: a.serve,
    ...(a.spare ? { maxSlots: a.serve + a.spare } : {}),
    url,
    joinUrl,
    credentials: creds,
    onJoinToken: (rank, token) => {
      const link = walkIn?.link(token);
      if (link) console.log(`  ${rank >= firstSpare ? "spare " : ""}rank ${rank} walk-in tab (one link, once): ${link}`);
      if (walkIn) console.log(`  ${rank >= firstSpare ? "spare " : ""}rank ${rank} walk-in: ${walkIn.command(token)}`);
      console.log(`  ${rank >= firstSpare ? "spare " : ""}rank ${rank}: deno run -A --no-check examples/train.ts --join ${token}`);
      console.log(`     or tab: ${tab(token)}`);
    },
    onRelayToken: (slot, token, ranks) => {
      console.log(`  relay ${slot - world} (on the host of rank${ranks.length > 1 ? "s" : ""} ${ranks.join(", ")}): deno run -A --no-check scripts/relay.ts ${token}`);
    },
    onJoined: (rank, h) =>
      console.log(`rank ${rank} joined from ${h.host || "a remote host"} (${h.adapter})${rank >= firstSpare ? "; it trains from the next epoch" : ""}`),
  });
  return async () => {
    await walkIn?.close();
    await cluster.stop();
  };
}

/**
 * The walk-in side of `--serve` (MNIST models): the bundle of examples/program.ts and the
 * run's train and test sets as packs, served over HTTP on the NATS server's host.
 */
async function startWalkIn(hostname: string, advertise: string) {
  const t0 = performance.now();
  const [{ loader, page, bundle }, trainPack, testPack] = await Promise.all([buildWalkIn(PROGRAM), packBytes(train), packBytes(test)]);
  const tls = await walkInTls(advertise);
  const walkIn = await serveWalkIn(
    { loader, page, bundle, packs: { train: trainPack, test: testPack } },
    { hostname, advertise, tls: tls?.pair, onRefused: (line) => console.error(`walk-in server: refused ${line}`) },
  );
  const mb = (n: number) => (n / 2 ** 20).toFixed(1);
  console.log(
    `walk-in server on http://${walkIn.hostPort}/ (bundle ${mb(bundle.length)} MiB, data ${mb(trainPack.length + testPack.length)} MiB, ` +
      `ready in ${((performance.now() - t0) / 1000).toFixed(1)} s): a walk-in command needs only Deno on its machine`,
  );
  if (tls) {
    console.log(
      `walk-in tabs on https://${walkIn.httpsHostPort}/ (${tls.what}): a tab link needs only a browser with WebGPU. Certificate SHA-256 ` +
        `fingerprint ${tls.digests.fingerprint} (check it against the browser's), SPKI sha256 ${tls.digests.spki} ` +
        `(Chromium trusts it with --ignore-certificate-errors-spki-list=${tls.digests.spki})`,
    );
  }
  return walkIn;
}

/**
 * The walk-in server's certificate: `--tls-cert/--tls-key` (unreadable or not PEM: one line
 * naming the flag, exit 2), else a self-signed one for `advertise` (openssl; when it cannot
 * be made, one line and no tab links).
 */
async function walkInTls(advertise: string) {
  if (tlsFiles.cert && tlsFiles.key) {
    let pair;
    try {
      pair = await readTlsFiles(tlsFiles.cert, tlsFiles.key);
    } catch (e) {
      console.error(`npm start: ${(e as Error).message}`);
      Deno.exit(2);
    }
    return { pair, digests: await certificateDigests(pair.cert), what: `certificate ${tlsFiles.cert}` };
  }
  try {
    const pair = await selfSignedCertificate(advertise);
    return { pair, digests: await certificateDigests(pair.cert), what: `a self-signed certificate for ${advertise}, made now` };
  } catch (e) {
    console.error(`npm start: no walk-in tab links: ${(e as Error).message}`);
    return undefined;
  }
}

/** The bf16 wire is a cpu-* plane knob: nccl-* ranks reduce f32 in shared memory, with nothing on a wire. */
function bf16Wire(a: TrainArgs): boolean {
  return a.bf16 && a.ranks + a.serve + a.spare > 1 && !a.mode.startsWith("nccl");
}

async function main(a: TrainArgs): Promise<void> {
  const dir = `${a.out}/${a.name}`; // made by makeRunDir
  const timeline = new Timeline();
  builder
    .batchSize(a.batch)
    .numEpochs(a.epochs)
    .elche(ElCheConfig.defaultFor(a.mode))
    .bf16Wire(bf16Wire(a))
    .cluster({ ranks: Array.from({ length: a.ranks }, (_, r) => ({ slowdown: r === a.slowRank ? a.slowdownFactor : 1 })) })
    .timeline(timeline)
    .recordLog(`${dir}/log`, a.logBytes)
    .saveDashboard(`${dir}/dashboard.html`)
    .reportsPerEpoch(4);
  if (a.maxAnchor) builder.maxAnchor(a.maxAnchor);

  const progress = new Progress({
    epochs: a.epochs,
    samplesPerEpoch: Math.floor(train.len() / a.batch) * a.batch,
    tty: Deno.stdout.isTerminal(),
    formatEval: EVAL_TEXT[recipe.metric],
  });
  observe(builder, {
    batch: (e) => progress.batch(e),
    reduce: (e) => progress.reduce(e),
    rankJoined: (rank, epoch, p) => console.log(`rank ${rank} (${p.host || "remote"}) admitted: it trains from epoch ${epoch + 1} on`),
  });
  builder.evalResultFn((epoch, acc) => progress.eval(epoch, acc));

  if (a.batch > train.len()) {
    console.error(`npm start: --batch must be at most the ${train.len()} training samples (--subset), got ${a.batch}`);
    Deno.exit(2);
  }
  // What the loader did, read off the images (MnistDataSet.normalization; examples/program.ts →
  // loadTaskData: on unless --no-normalize, never for conv-ae): the header and the saved model's
  // metadata say the same.
  const norm = (train as { normalization?: { mean: number; std: number } }).normalization;
  const standardized = norm !== undefined && (norm.mean !== 0 || norm.std !== 1);
  const data = recipe.data === "mnist"
    ? `MNIST (${train.len()} train / ${test.len()} test)`
    : `the Brown Corpus (${train.len()} train / ${test.len()} validation sequences of 128 characters, vocabulary ${vocabSize})`;
  console.log(
    `flodl-webgpu: ${a.model} on ${data}, ${a.ranks} rank(s)` + (a.serve ? ` + ${a.serve} remote` : "") +
      (a.spare ? ` + ${a.spare} spare` : "") + `, ${a.mode}, ` +
      `bf16 wire ${bf16Wire(a) ? "on" : "off"}, ${a.epochs} epoch(s), batch ${a.batch}, lr ${settings.lr}` +
      (recipe.data === "mnist" ? (standardized ? ", pixels standardized" : ", pixels in [0, 1]") : "") +
      (a.slowRank >= 0 ? `, rank ${a.slowRank} ${a.slowdownFactor}× slower` : ""),
  );
  const dropped = train.len() % a.batch;
  if (dropped > 0) {
    console.log(
      `${train.len()} samples: ${Math.floor(train.len() / a.batch)} batches of ${a.batch} per epoch, ` +
        `the last ${dropped} samples are dropped (drop-last)`,
    );
  }
  const t0 = performance.now();
  const handle = await builder.run().catch((e) => {
    // A knob the trainer refuses before any rank starts (it names the knob and the value): bad input.
    if (!(e instanceof RangeError)) throw e;
    console.error(`npm start: ${e.message}`);
    Deno.exit(2);
  });
  console.log(`ranks: ${handle.devices().map((d, r) => `${r}: ${d}`).join(", ")}`);
  for await (const m of handle) progress.epoch(m);
  const state = await handle.join();
  const secs = (performance.now() - t0) / 1000;
  progress.done();

  const tensors: Parameters<typeof encodeSafetensors>[0] = {};
  for (const [name, t] of [...state.params, ...state.buffers]) tensors[name] = { dtype: "F32", shape: t.shape, data: t.data };
  await Deno.writeFile(`${dir}/model.safetensors`, encodeSafetensors(tensors, {
    model: a.model,
    format: "pt",
    input: vocab
      ? `character ids i32 [n, T], T <= 128, of the vocabulary ${JSON.stringify(vocab.itos.join(""))}`
      : norm && standardized
      ? `(x/255 - ${norm.mean}) / ${norm.std}`
      : "x/255",
  }));
  await Deno.writeTextFile(`${dir}/timeline.json`, JSON.stringify(timeline));
  await Deno.writeTextFile(`${dir}/timeline.csv`, timeline.toCSV());

  const final = handle.evals.filter((e) => e.value !== undefined).at(-1);
  const finalText = recipe.metric === "accuracy" ? (v: number) => `test accuracy ${(v * 100).toFixed(2)}%` : EVAL_TEXT[recipe.metric];
  console.log(`\nfinal ${final ? finalText(final.value!) : `${recipe.metric} n/a`} after ${a.epochs} epoch(s) in ${secs.toFixed(1)} s`);
  if (vocab && a.sample > 0) {
    // The consensus model on this process's own device: what the ranks agreed on, as text.
    const device = await Device.request();
    const m = buildModel(a.model, device, vocabSize);
    m.loadStateDict(new Map([...state.params].map(([k, t]) => [k, fromArray(t.data, t.shape, { device })])));
    const prompt = "The ";
    // Each character re-runs the model: progress on stderr, the text alone on stdout.
    const write = (s: string) => Deno.stderr.writeSync(enc.encode(s));
    const onProgress = sampleProgress({ tty: Deno.stderr.isTerminal(), write });
    const text = prompt + await sampleText(m, vocab, prompt, a.sample, 0.8, { onProgress });
    console.log(`sample (temperature 0.8): ${JSON.stringify(text)}`);
  }
  console.log(`dashboard:  ${dir}/dashboard.html`);
  console.log(`record log: ${dir}/log/ (root.log, root/<host>/rank<k>.log)`);
  console.log(`timeline:   ${dir}/timeline.json, ${dir}/timeline.csv`);
  console.log(`model:      ${dir}/model.safetensors`);
}
