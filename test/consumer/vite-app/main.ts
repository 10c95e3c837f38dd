// The page: runs the program's builder and shows each epoch.
import { builder } from "./program.ts";

const status = document.querySelector<HTMLElement>("#status")!;
const log = document.querySelector<HTMLElement>("#log")!;
const show = (state: string, text: string) => {
  status.dataset.state = state;
  status.textContent = text;
};

try {
  show("training", "Training…");
  const handle = await builder.run();
  for await (const m of handle) {
    log.textContent += `${JSON.stringify({ epoch: m.epoch, loss: m.avgLoss, samplesPerRank: m.perRankSamples })}\n`;
  }
  const { params } = await handle.join();
  show("done", `Trained ${params.size} tensors`);
} catch (e) {
  show("failed", String(e));
}
