/**
 * Command-line flags of `npm start` (examples/train.ts): parsed and validated with
 * errors that name the flag, the expected values and the value given.
 */
import { MODELS, type ModelName } from "./models.ts";

export const MODES = ["cpu-sync", "cpu-cadence", "cpu-async", "nccl-sync", "nccl-cadence"] as const;
export type Mode = (typeof MODES)[number];

export interface TrainArgs {
  model: ModelName;
  ranks: number;
  mode: Mode;
  epochs: number;
  bf16: boolean;
  /** Standardize pixels with MNIST's mean and std (torchvision's Normalize). */
  normalize: boolean;
  /** Training samples to use (0 = all 60,000). */
  subset: number;
  /** Test samples to evaluate on (0 = all 10,000). */
  testSubset: number;
  batch: number;
  lr: number;
  /** Rank index made slower by `slowdownFactor` (-1 = none). */
  slowRank: number;
  slowdownFactor: number;
  out: string;
  name: string;
  /** Per-node record-log cap in bytes (0 = 32 MiB). */
  logBytes: number;
  /** ElChe's maxAnchor (0 = flodl's default, 1000). */
  maxAnchor: number;
  help: boolean;
}

export const HELP = `flodl-webgpu: data-parallel MNIST training on WebGPU (Deno)

Usage: npm start -- [flags]

  --model <logistic|mlp|lenet>   model (default mlp)
  --ranks <n>                    ranks, one Web Worker each (default 2; 1 = single device)
  --mode <cpu-sync|cpu-cadence|cpu-async|nccl-sync|nccl-cadence>
                                 averaging mode (default cpu-cadence; nccl-*: the ranks'
                                 shared-memory collective)
  --epochs <n>                   epochs (default 3)
  --bf16 / --no-bf16             bf16 wire for the averaging plane (default on)
  --normalize / --no-normalize   standardize pixels, (x/255 - 0.1307) / 0.3081 as torchvision's
                                 MNIST examples (default on; off: pixels in [0, 1])
  --subset <n>                   train on the first n samples (default all 60000)
  --test-subset <n>              evaluate on the first n test samples (default all 10000)
  --batch <n>                    per-rank batch size (default 64)
  --lr <x>                       Adam learning rate (default 0.001)
  --slowdown <rank>:<factor>     make one rank's steps <factor> times slower (e.g. 1:3)
  --out <dir>                    output folder (default runs)
  --name <name>                  run name (default <model>-<mode>-<ranks>r)
  --log-bytes <n>                cap of each node's record log in bytes (default 32 MiB)
  --max-anchor <n>               cap ElChe's reduce window, in batches of the slowest rank
                                 (default 0: the trainer's default, 1000)
  --help                         this text

Writes <out>/<name>/dashboard.html, the record log under <out>/<name>/log/, and the
trained model as <out>/<name>/model.safetensors (its inputs: images [n, 1, 28, 28],
standardized unless --no-normalize).`;

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
    normalize: true,
    subset: 0,
    testSubset: 0,
    batch: 64,
    lr: 1e-3,
    slowRank: -1,
    slowdownFactor: 1,
    out: "runs",
    name: "",
    logBytes: 0,
    maxAnchor: 0,
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
      case "--help":
      case "-h":
        a.help = true;
        break;
      default:
        throw new RangeError(`unknown flag ${JSON.stringify(flag)} (see --help)`);
    }
  }
  if (a.slowRank >= a.ranks) throw new RangeError(`--slowdown rank must be < --ranks ${a.ranks}, got ${a.slowRank}`);
  a.name ||= `${a.model}-${a.mode}-${a.ranks}r`;
  return a;
}
