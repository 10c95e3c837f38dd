import { parseTrainArgs, programSettings, settingsOf } from "../../../examples/args.ts";
import { assertEquals, assertThrows } from "../../util/assert.ts";

Deno.test("npm start flags: defaults, every flag, and a derived run name", () => {
  const d = parseTrainArgs([]);
  assertEquals(
    [d.model, d.ranks, d.mode, d.epochs, d.bf16, d.normalize, d.batch, d.maxAnchor, d.name],
    ["mlp", 2, "cpu-cadence", 3, true, undefined, 64, 0, "mlp-cpu-cadence-2r"],
  );
  const a = parseTrainArgs(["--model", "lenet", "--ranks", "3", "--mode", "cpu-async", "--epochs", "1", "--no-bf16", "--subset", "500",
    "--slowdown", "2:3", "--out", "/tmp/x", "--name", "t1", "--lr", "0.01", "--batch", "32", "--test-subset", "100",
    "--no-normalize", "--max-anchor", "40"]);
  assertEquals(
    [a.model, a.ranks, a.mode, a.epochs, a.bf16, a.subset, a.slowRank, a.slowdownFactor, a.out, a.name, a.lr, a.batch, a.testSubset,
      a.normalize, a.maxAnchor],
    ["lenet", 3, "cpu-async", 1, false, 500, 2, 3, "/tmp/x", "t1", 0.01, 32, 100, false, 40],
  );
});

Deno.test("npm start flags: a bad value names the flag, what it takes and what it got", () => {
  assertThrows(() => parseTrainArgs(["--model", "resnet"]), RangeError, "--model", "logistic, mlp, lenet, conv-ae, char-rnn, gpt-nano", '"resnet"');
  assertThrows(() => parseTrainArgs(["--ranks", "0"]), RangeError, "--ranks", ">= 1", '"0"');
  assertThrows(() => parseTrainArgs(["--mode", "nccl-async"]), RangeError, "--mode", "nccl-cadence", '"nccl-async"');
  assertThrows(() => parseTrainArgs(["--slowdown", "5:3"]), RangeError, "--slowdown", "< --ranks 2", "5");
  assertThrows(() => parseTrainArgs(["--slowdown", "1x3"]), RangeError, "--slowdown", '"1x3"');
  assertThrows(() => parseTrainArgs(["--frobnicate"]), RangeError, "unknown flag", "--frobnicate");
  assertThrows(() => parseTrainArgs(["--epochs"]), RangeError, "--epochs", "nothing");
  assertThrows(() => parseTrainArgs(["--model", "conv-ae", "--normalize"]), RangeError, "--normalize", "conv-ae");
});

Deno.test("npm start flags: --serve, --nats-host and --join; --serve with --join refused", () => {
  const s = parseTrainArgs(["--ranks", "1", "--serve", "2", "--nats-host", "0.0.0.0"]);
  assertEquals([s.ranks, s.serve, s.natsHost, s.join, s.name], [1, 2, "0.0.0.0", "", "mlp-cpu-cadence-1r+2remote"]);
  const j = parseTrainArgs(["--join", "eyJ1cmwi-_x", "--subset", "500"]);
  assertEquals([j.join, j.serve, j.subset], ["eyJ1cmwi-_x", 0, 500]);
  assertThrows(() => parseTrainArgs(["--serve", "0"]), RangeError, "--serve", ">= 1", '"0"');
  assertThrows(() => parseTrainArgs(["--join", "a b"]), RangeError, "--join", "join token", '"a b"');
  assertThrows(() => parseTrainArgs(["--serve", "1", "--join", "abc"]), RangeError, "--serve", "--join");
  assertEquals(s.tabUrl, "http://localhost:5173/", "the demo page's default address");
  assertEquals(parseTrainArgs(["--serve", "1", "--tab-url", "https://lab.example:8443/flodl/"]).tabUrl, "https://lab.example:8443/flodl/");
  assertThrows(() => parseTrainArgs(["--tab-url", "ftp://x/"]), RangeError, "--tab-url", "http(s) URL", '"ftp://x/"');
  assertThrows(() => parseTrainArgs(["--tab-url"]), RangeError, "--tab-url", "got undefined");
});

Deno.test("npm start's program arguments: the flags' settings round-trip through JSON; a bad argument is named", () => {
  const a = parseTrainArgs(["--model", "lenet", "--subset", "1200", "--epochs", "2", "--batch", "24", "--no-normalize"]);
  const s = settingsOf(a);
  assertEquals(s, { model: "lenet", subset: 1200, testSubset: 0, normalize: false, lr: 1e-3, epochs: 2, batch: 24 });
  assertEquals(programSettings(JSON.parse(JSON.stringify(s))), s, "as a rank reads them from its token");
  assertEquals(settingsOf(parseTrainArgs(["--model", "gpt-nano"])).subset, 256, "the model's default subset filled in");
  assertThrows(() => programSettings({ ...s, model: "resnet" }), RangeError, '"model"', "mlp", '"resnet"');
  assertThrows(() => programSettings({ ...s, batch: 0 }), RangeError, '"batch"', ">= 1", "0");
  assertThrows(() => programSettings({ ...s, subset: 1.5 }), RangeError, '"subset"', "integer", "1.5");
  assertThrows(() => programSettings({ ...s, lr: -1 }), RangeError, '"lr"', "number", "-1");
  assertThrows(() => programSettings({ ...s, normalize: "yes" }), RangeError, '"normalize"', "boolean", '"yes"');
});

Deno.test("npm start flags: --spare opens spare remote slots (elastic), with or without --serve; not with --join", () => {
  const s = parseTrainArgs(["--ranks", "1", "--serve", "1", "--spare", "2"]);
  assertEquals([s.serve, s.spare, s.name], [1, 2, "mlp-cpu-cadence-1r+1remote+2spare"]);
  const o = parseTrainArgs(["--ranks", "2", "--spare", "1"]);
  assertEquals([o.serve, o.spare, o.name], [0, 1, "mlp-cpu-cadence-2r+1spare"]);
  assertEquals(parseTrainArgs([]).spare, 0);
  assertThrows(() => parseTrainArgs(["--spare", "0"]), RangeError, "--spare", ">= 1", '"0"');
  assertThrows(() => parseTrainArgs(["--spare", "1", "--join", "abc"]), RangeError, "--spare", "--join");
});
