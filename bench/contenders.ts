/** The contenders and their display names (no imports: the Playwright driver loads this in Node). */
export const CONTENDERS = ["ours", "tf", "jax"] as const;
export type Contender = (typeof CONTENDERS)[number];
export const LABELS: Record<Contender, string> = { ours: "flodl-webgpu", tf: "TF.js webgpu", jax: "jax-js" };
