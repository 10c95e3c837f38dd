/**
 * The sequence-model bench's models, contenders, default shapes and result record, with no
 * import: bench/seq.spec.ts reads them in Node without loading TF.js or jax-js.
 */

export const SEQ_MODELS = ["char-rnn", "gpt-nano", "bilstm", "encoder"] as const;
export type SeqModel = (typeof SEQ_MODELS)[number];
export type SeqContender = "ours" | "tf" | "jax";
export type SeqMode = "loss-at-end" | "loss-every-step";

/** The contenders each model is compared with. */
export const CONTENDERS: Record<SeqModel, SeqContender[]> = {
  "char-rnn": ["ours", "tf"],
  "gpt-nano": ["ours", "tf", "jax"],
  bilstm: ["ours", "tf"],
  encoder: ["ours", "tf", "jax"],
};

/**
 * The peers that have no such layer for a model, and are left out of it (a row in the
 * table says so): jax-js has no LSTM layer, and neither of its LSTM benches here writes one
 * from its array API.
 */
export const ABSENT: Partial<Record<SeqModel, SeqContender[]>> = { "char-rnn": ["jax"], bilstm: ["jax"] };

/** Each model's default batch B and sequence length T (the CLIs' defaults). */
export const DEFAULT_SHAPE: Record<SeqModel, { batch: number; seq: number }> = {
  "char-rnn": { batch: 32, seq: 64 },
  "gpt-nano": { batch: 8, seq: 64 },
  bilstm: { batch: 16, seq: 32 },
  encoder: { batch: 8, seq: 64 },
};

export interface SeqShape {
  model: SeqModel;
  /** Sequences per batch. */
  batch: number;
  /** Characters per sequence. */
  seq: number;
  /** Timed steps (after WARMUP). */
  steps: number;
}

/** Vocabulary: characters of the Brown Corpus, as ddp-bench's. */
export const V = 85;
/** Untimed steps before the timed ones (the first one's loss is a run's first loss). */
export const WARMUP = 2;

export interface SeqResult {
  model: SeqModel;
  contender: SeqContender;
  mode: SeqMode;
  round: number;
  msPerStep: number;
  firstLoss: number;
  lastLoss: number;
}

/** A run's timing and losses (what {@link timeSteps} measures). */
export interface StepTiming {
  msPerStep: number;
  firstLoss: number;
  lastLoss: number;
}
