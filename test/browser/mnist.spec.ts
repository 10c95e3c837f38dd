/**
 * MNIST in Chromium (WebGPU on SwiftShader without a GPU): the engine alone, and the
 * data-parallel trainer with 2 rank workers, each trained on a 5,000-image subset, reach
 * >= 90% on 1,000 held-out test images.
 */
import { expect, test } from "@playwright/test";

for (const [name, query] of [
  ["the engine (one device, plain loop)", "mode=engine"],
  ["the trainer (2 ranks, cpu-cadence, bf16 wire)", "mode=trainer&ranks=2"],
] as const) {
  test(`MNIST MLP in Chromium, ${name}: >= 90% on 1,000 test images after training on 5,000`, async ({ page }) => {
    test.setTimeout(900_000);
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`/test/browser/mnist.html?${query}&train=5000&test=1000&epochs=6`);
    await page.waitForFunction(() => (globalThis as any).__mnist?.done === true, null, { timeout: 900_000 });
    const r = await page.evaluate(() => (globalThis as any).__mnist);
    console.log(`${name}: accuracy ${r.accuracy}, ${r.samplesPerSec?.toFixed(0)} samples/s on ${r.adapter}`);
    expect(r.error, "run error").toBeUndefined();
    expect(errors, "page errors").toEqual([]);
    expect(r.accuracy).toBeGreaterThanOrEqual(0.9);
  });
}
