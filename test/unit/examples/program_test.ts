/**
 * examples/program.ts (npm start's builder, which every rank re-enters) names its eval after
 * the metric, so the saved dashboard says "Final validation CE", not "Final eval metric".
 */
import { setProgramArgs } from "../../../src/index.ts";
import { runMonitor } from "../../../src/distributed/run/run_monitor.ts";
import { resolveConfig } from "../../../src/distributed/run/validate_config.ts";
import { assertEquals } from "../../util/assert.ts";

Deno.test("examples/program.ts: the dashboard data name gpt-nano's eval 'validation CE'", async () => {
  setProgramArgs({ model: "gpt-nano", subset: 8, testSubset: 4, lr: 3e-4, epochs: 1, batch: 4 });
  const { builder, EVAL_LABELS } = await import("../../../examples/program.ts");
  builder.batchSize(4).numEpochs(1).saveDashboard("/nonexistent/dashboard.html");
  const state = builder.state;
  const monitor = runMonitor(state, resolveConfig(state.config, { worldSize: 1, datasetLen: 8 }), 1, ["fake adapter"]);
  assertEquals(monitor?.data().evalLabel, "validation CE", "the saved dashboard's eval label");
  assertEquals(
    EVAL_LABELS,
    { accuracy: "test accuracy", mse: "reconstruction MSE", ce: "validation CE" },
    "the other models'",
  );
});
