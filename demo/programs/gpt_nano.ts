/**
 * Demo program: gpt-nano (4 pre-norm blocks, 4 heads, d = 128, causal) on the
 * Brown Corpus as characters, sequences of 128, next-character cross-entropy; the eval is
 * the validation CE. Subsets spread over each split (`?seqs=&valSeqs=&seqLen=` in the
 * page's address; defaults small, since a software adapter takes seconds per step).
 *
 * Adam at 1e-3 without the bench's warmup + cosine schedule (bench/ddp-bench uses the
 * recipe's 3e-4): a demo's few epochs should show the text getting better.
 *
 * Runs in the page and in every rank worker (re-entered): no DOM access here.
 */
import { Adam, EvalCadence, loadBrown, programArgs, Trainer } from "../../src/index.ts";
import { buildModel } from "../../src/zoo/mod.ts";
import { meanLoss, nextCharLoss, spreadSubset } from "../../src/zoo/mod.ts";
import type { TextData } from "./common.ts";

/** Where the page's server puts the Brown Corpus (vite.config.ts serves /brown/). */
export const BROWN_BASE_URL = "/brown/";

/** Sequence counts and length when the address does not say. */
export const DEFAULT_SEQS = { seqs: 128, valSeqs: 32, seqLen: 128 };

/** Train and validation sequence counts and the sequence length from the program arguments, validated. */
export function seqCounts(args: Record<string, unknown> = programArgs()): typeof DEFAULT_SEQS {
  const pick = (key: keyof typeof DEFAULT_SEQS, max: number) => {
    const v = args[key] ?? DEFAULT_SEQS[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 2 || v > max) {
      throw new RangeError(`demo gpt-nano: "${key}" must be an integer in [2, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  // gpt-nano's learned positions cover 128 characters.
  return { seqs: pick("seqs", 40_000), valSeqs: pick("valSeqs", 4_000), seqLen: pick("seqLen", 128) };
}

async function loadText(): Promise<TextData> {
  const { seqs, valSeqs, seqLen } = seqCounts();
  const corpus = await loadBrown({ baseUrl: BROWN_BASE_URL, seqLen });
  return {
    kind: "text",
    train: spreadSubset(corpus.train, seqs, "?seqs= (train sequences)"),
    test: spreadSubset(corpus.validation, valSeqs, "?valSeqs= (validation sequences)"),
    vocab: corpus.vocab,
  };
}

export const data = await loadText();

/** Builds the model on a device (the page rebuilds it to sample text from the consensus). */
export const makeModel = (device: Parameters<typeof buildModel>[1]) => buildModel("gpt-nano", device, data.vocab.itos.length);

export const builder = Trainer.builder(makeModel, (params) => new Adam(params, { lr: 1e-3 }), nextCharLoss)
  .dataset(data.train)
  .evalDataset(data.test)
  .evalFn((model, held) => meanLoss(model, held, nextCharLoss, 16))
  .evalEvery(EvalCadence.epochs(1))
  // A rank is silent while its step runs; on a software adapter a gpt-nano step takes seconds.
  .heartbeatTimeoutSecs(600)
  .batchSize(16)
  .numEpochs(2);
