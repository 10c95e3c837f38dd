/**
 * Command-line flags of the Deno benches (`--name value`), one parser for all of them, with
 * errors that name the bench and the flag.
 */

const bench = () => {
  const main = (globalThis as { Deno?: { mainModule?: string } }).Deno?.mainModule ?? "";
  return main ? `bench/${main.slice(main.lastIndexOf("/") + 1)}` : "bench";
};

/** The value after `--name`, or `fallback` when the flag is absent. */
export function arg(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Deno.args[i + 1] : fallback;
}

/**
 * A positive integer flag.
 * @throws {RangeError} Naming the bench and the flag when the value is not an integer >= 1.
 */
export function flag(name: string, fallback: number): number {
  const i = Deno.args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(Deno.args[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    throw new RangeError(`${bench()}: --${name} must be a positive integer, got ${Deno.args[i + 1]}`);
  }
  return v;
}
