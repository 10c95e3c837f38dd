/**
 * Demo program: gpt-nano (spec §11.1: 4 pre-norm blocks, 4 heads, d = 128, causal) on the
 * Brown Corpus as characters, sequences of 128, next-character cross-entropy; the eval is
 * the validation CE. Subsets spread over each split (`?seqs=&valSeqs=` in the page's
 * address; defaults small, since a software adapter takes seconds per step).
 *
 * Adam at 1e-3 without the bench's warmup + cosine schedule (bench/ddp-bench uses the
 * recipe's 3e-4): a demo's few epochs should show the text getting better.
 *
 * Runs in the page and in every rank worker (re-entered): no DOM access here.
 */
import { Adam, EvalCadence, loadBrown, programArgs, Trainer } from "../../src/index.ts";
import { buildModel } from "../../examples/models.ts";
import { meanLoss, nextCharLoss, spreadSubset } from "../../examples/recipes.ts";
import type { TextData } from "./common.ts";

/** Where the page's server puts the Brown Corpus (vite.config.ts serves /brown/). */
export const BROWN_BASE_URL = "/brown/";

/** Sequence counts when the address does not say. */
export const DEFAULT_SEQS = { seqs: 128, valSeqs: 32 };

/** Train and validation sequence counts from the program arguments, validated. */
export function seqCounts(args: Record<string, unknown> = programArgs()): { seqs: number; valSeqs: number } {
  const pick = (key: "seqs" | "valSeqs") => {
    const v = args[key] ?? DEFAULT_SEQS[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 40_000) {
      throw new RangeError(`demo gpt-nano: "${key}" must be an integer in [1, 40000], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  return { seqs: pick("seqs"), valSeqs: pick("valSeqs") };
}

async function loadText(): Promise<TextData> {
  const { seqs, valSeqs } = seqCounts();
  const corpus = await loadBrown({ baseUrl: BROWN_BASE_URL });
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
