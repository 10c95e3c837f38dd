/**
 * The demo page: controls → a training run (session.ts) with live charts, the 3-D drift
 * view, a digit pad that asks the trained model, and downloads of the dashboard and the
 * model. Program modules are imported on demand; this module never runs in a rank worker.
 * "Join a run" (join.ts, `?join=<token>`) makes this tab a remote rank of another run.
 */
import "./style.css";
import { Device, encodeSafetensors, programArgs, setProgramArgs, type TrainedState } from "../src/index.ts";
import { renderDashboardHtml } from "../src/monitor/mod.ts";
import { DigitPad } from "./digit_pad.ts";
import { download } from "./downloads.ts";
import { DriftView } from "./drift_view.ts";
import { HOW_TO_ENABLE, probeAdapter } from "./gpu_info.ts";
import { Predictor } from "./predict.ts";
import { TextSampler } from "./text_sample.ts";
import { PROGRAMS, Session } from "./session.ts";
import { dataSizes, MAX_RANKS, presetFromQuery, readSettings, readSizes, runName, settingsQuery } from "./settings.ts";
import { RankShares } from "./rank_share.ts";
import { Bars } from "./bars.ts";
import { RunProgress } from "./progress.ts";
import { RANK_COLORS } from "./drift_scene.ts";
import { idleJoin, joinFromPage, joinText, programUrl } from "./join.ts";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = $<HTMLFormElement>("controls");
const startBtn = $<HTMLButtonElement>("start");
const stopBtn = $<HTMLButtonElement>("stop");
const statusEl = $("status");
const errorEl = $("error");
const dashboardEl = $("dashboard");
const gpuEl = $("gpu");
const joinForm = $<HTMLFormElement>("join-form");
const joinBtn = $<HTMLButtonElement>("join");
const joinToken = $<HTMLTextAreaElement>("join-token");

/** What tests and the curious read from the console: `__demo`. */
const demo = {
  state: "idle" as "idle" | "loading" | "running" | "done" | "stopped" | "error" | "no-webgpu",
  runs: 0,
  epochs: 0,
  reduces: 0,
  evals: [] as { epoch: number; value: number }[],
  probabilities: null as number[] | null,
  error: "",
  /** Names and shapes of the last run's TrainedState, parameters then buffers. */
  trained: [] as { name: string; shape: number[] }[],
  drift: undefined as DriftView | undefined,
  session: undefined as Session | undefined,
  /** Text sampled from the consensus (gpt-nano), one entry per epoch and one at the end. */
  samples: [] as { epoch: number; text: string }[],
  /** This tab as a remote rank of another run ("Join a run", `?join=`). */
  join: idleJoin(),
};
(globalThis as unknown as { __demo: typeof demo }).__demo = demo;

let sizes: ReturnType<typeof dataSizes>;
let drift: DriftView | undefined;
let session: Session | undefined;
let trained: TrainedState | undefined;
let predictor: Predictor | undefined;
let sampler: TextSampler | undefined;
/** Sampling runs one at a time, in epoch order. */
let sampling: Promise<void> = Promise.resolve();
const PROMPT = "The ";
/** Characters per sample (`?sampleChars=`): each is one forward pass of the model on the page's device. */
let sampleChars = 60;
let pageDevice: Promise<Device> | undefined;
let stopRequested = false;
/** Whether a program module was imported: it loaded its data with the sizes of then. */
let imported = false;

function setStatus(text: string): void {
  statusEl.textContent = text;
}

function showError(e: unknown): void {
  const msg = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  console.error(e);
  demo.error = msg;
  errorEl.textContent = msg;
  errorEl.hidden = false;
}

function setBusy(busy: boolean): void {
  startBtn.disabled = busy;
  joinBtn.disabled = busy;
  stopBtn.disabled = !busy;
  for (const el of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>("fieldset input, fieldset select")) {
    el.disabled = busy;
  }
  if (!busy) syncSlowRanks();
}

/** Only ranks that exist can be slowed down. */
function syncSlowRanks(): void {
  const ranks = Number(($<HTMLInputElement>("ranks")).value) || 1;
  const sel = $<HTMLSelectElement>("slow-rank");
  for (const opt of sel.options) if (opt.value !== "") opt.disabled = Number(opt.value) >= ranks;
  if (sel.value !== "" && Number(sel.value) >= ranks) sel.value = "";
  $<HTMLInputElement>("slow-factor").disabled = sel.value === "" || startBtn.disabled;
}

function legend(ranks: number): void {
  const ul = $("drift-legend");
  ul.replaceChildren();
  for (let r = 0; r < ranks; r++) {
    const li = document.createElement("li");
    li.innerHTML = `<span class="swatch" style="background:${RANK_COLORS[r]}"></span>rank ${r}`;
    ul.append(li);
  }
  const li = document.createElement("li");
  li.innerHTML = `<span class="swatch consensus"></span>consensus`;
  ul.append(li);
}

const pct = (v: number) => `${(v * 100).toFixed(1)}%`;

/** An eval value as the page words it: accuracy for MNIST, validation CE for text. */
function evalText(s: Session, value: number): string {
  return s.program.data.kind === "text" ? `validation CE ${value.toFixed(3)}` : `test accuracy ${pct(value)}`;
}

/** Continue the prompt with the consensus (or the final state) and list it under the epoch. */
function sampleFrom(s: Session, label: string, load: (t: TextSampler) => void): void {
  const data = s.program.data;
  if (data.kind !== "text") return;
  const epoch = s.epochs;
  sampling = sampling.then(async () => {
    pageDevice ??= Device.request({ label: "page" });
    sampler ??= new TextSampler(await pageDevice, s.program.makeModel, data.vocab);
    load(sampler);
    const text = PROMPT + await sampler.sample(PROMPT, sampleChars);
    demo.samples = [...demo.samples, { epoch, text }];
    const li = document.createElement("li");
    const b = document.createElement("b");
    b.textContent = `${label}: `;
    const q = document.createElement("q");
    q.textContent = text;
    li.append(b, q);
    $("text-samples").append(li);
  }).catch(showError);
}

async function start(): Promise<void> {
  errorEl.hidden = true;
  demo.error = "";
  let settings;
  try {
    settings = readSettings(form);
    if (!applySizes()) return; // the page reloads with the new sizes
  } catch (e) {
    showError(e);
    return;
  }
  setBusy(true);
  demo.state = "loading";
  stopRequested = false;
  demo.runs++;
  demo.epochs = 0;
  demo.reduces = 0;
  demo.evals = [];
  demo.trained = [];
  trained = undefined;
  predictor = undefined;
  sampler = undefined;
  demo.samples = [];
  $("text-samples").replaceChildren();
  setDownloads();
  pad.clear();
  bars.clear("Training…");
  try {
    const text = settings.program === "gpt-nano";
    $("text-panel").hidden = !text;
    setStatus(
      text
        ? `Loading gpt-nano and the Brown Corpus…`
        : `Loading the ${settings.program} program and MNIST (${sizes.subset} train, ${sizes.test} test images)…`,
    );
    imported = true;
    const program = await PROGRAMS[settings.program]();
    session?.destroy();
    // Started with the ranks: warm-up seconds, then each rank's batches and samples/s, every second.
    const progress = new RunProgress(settings.ranks, settings.epochs, performance.now());
    const slow = settings.slowRank >= 0 ? { rank: settings.slowRank, factor: settings.slowFactor } : undefined;
    const shares = new RankShares(settings.ranks, slow);
    const showShares = () => {
      const l = shares.lines();
      $("rank-share").textContent = l?.shares ?? "";
      $("rank-why").textContent = l?.why ?? "";
    };
    $("rank-share").textContent = $("rank-why").textContent = "";
    const showProgress = () => {
      if (demo.state !== "running" || stopRequested) return;
      setStatus(progress.text(performance.now()));
      showShares();
    };
    session = new Session(settings, program, dashboardEl, drift, {
      epoch: (m, s) => {
        demo.epochs = s.epochs;
        progress.epoch(s.epochs, m.avgLoss);
        showProgress();
        const consensus = s.consensus;
        if (consensus) sampleFrom(s, `epoch ${s.epochs}`, (t) => t.loadFlat(consensus));
      },
      batch: (e) => {
        progress.batch(e.rank, e.samples, performance.now());
        shares.batch(e);
      },
      eval: (epoch, value, s) => {
        demo.evals = [...s.evals];
        $("accuracy").textContent = s.program.data.kind === "text"
          ? `Validation CE after epoch ${epoch}: ${value.toFixed(3)}`
          : `Test accuracy after epoch ${epoch}: ${pct(value)}`;
      },
      reduce: (_round, s) => (demo.reduces = s.reduces),
    });
    demo.session = session;
    legend(settings.ranks);
    $("drift-empty").hidden = settings.ranks > 1;
    setStatus(`Starting ${settings.ranks} rank${settings.ranks > 1 ? "s" : ""}…`);
    $("dashboard-empty").hidden = true;
    const handle = await session.start();
    demo.state = "running";
    $("devices").textContent = `Ranks: ${handle.devices().map((d, r) => `${r}: ${d}`).join("; ")}`;
    showProgress();
    const ticker = setInterval(showProgress, 1000);
    setDownloads();
    const state = await session.result().finally(() => {
      clearInterval(ticker);
      showShares();
      drift?.finish();
    });
    trained = state;
    demo.trained = [...state.params, ...state.buffers].map(([name, t]) => ({ name, shape: t.shape }));
    const secs = ((performance.now() - session.startedAt) / 1000).toFixed(1);
    pageDevice ??= Device.request({ label: "page" });
    if (program.data.kind === "mnist") predictor = new Predictor(await pageDevice, program.makeModel, state);
    else sampleFrom(session, "trained", (t) => t.loadState(state));
    const last = session.evals.at(-1);
    setStatus(
      `${stopRequested ? "Stopped" : "Done"} after ${session.epochs} epoch${session.epochs === 1 ? "" : "s"} ` +
        `in ${secs} s, ${session.reduces} reduces` + (last ? `; ${evalText(session, last.value)}` : "") +
        (predictor ? ". Draw a digit to try the model." : "."),
    );
    bars.clear("Draw a digit (or take a test image).");
    setDownloads();
    demo.state = stopRequested ? "stopped" : "done";
  } catch (e) {
    demo.state = "error";
    setStatus("The run failed.");
    showError(e);
  } finally {
    setBusy(false);
  }
}

async function stop(): Promise<void> {
  if (!session?.handle) return;
  stopBtn.disabled = true;
  stopRequested = true;
  setStatus("Stopping after the current batches…");
  await session.handle.shutdown().catch(() => {});
}

function setDownloads(): void {
  $<HTMLButtonElement>("download-dashboard").disabled = !session?.handle;
  $<HTMLButtonElement>("download-model").disabled = !trained;
  $<HTMLButtonElement>("sample").disabled = !predictor;
}

function downloadDashboard(): void {
  if (!session) return;
  const html = renderDashboardHtml(session.dashboardData(), { title: session.title });
  download(`${runName(session.settings)}-dashboard.html`, html, "text/html");
}

function downloadModel(): void {
  if (!trained || !session) return;
  const tensors: Parameters<typeof encodeSafetensors>[0] = {};
  for (const [name, t] of [...trained.params, ...trained.buffers]) {
    tensors[name] = { dtype: "F32", shape: t.shape, data: t.data };
  }
  const bytes = encodeSafetensors(tensors, {
    model: session.settings.program,
    format: "pt",
    producer: "flodl-webgpu demo",
  });
  download(`${runName(session.settings)}.safetensors`, bytes, "application/octet-stream");
}

// ---- digit pad -------------------------------------------------------------------------

const pad = new DigitPad($<HTMLCanvasElement>("pad"), $<HTMLCanvasElement>("pad-preview"));
const bars = new Bars($("probs"));
let asking = Promise.resolve();

pad.onInput = (x) => {
  asking = asking.then(async () => {
    if (!predictor) return;
    if (!x) {
      bars.clear("Draw a digit (or take a test image).");
      demo.probabilities = null;
      return;
    }
    try {
      const p = await predictor.probabilities(x);
      demo.probabilities = [...p];
      bars.show(p);
    } catch (e) {
      showError(e);
    }
  });
};

function sampleDigit(): void {
  const data = session?.program.data;
  if (data?.kind !== "mnist") return;
  const test = data.test;
  const i = Math.floor(Math.random() * test.len());
  const [image, label] = test.get(i);
  pad.clear();
  pad.showImage(image as Float32Array);
  $("sample-label").textContent = `Test image #${i}, labelled ${label[0]}.`;
}

// ---- join a run ------------------------------------------------------------------------

function showJoin(): void {
  const j = demo.join;
  $("join-status").textContent = joinText(j);
  const err = $("join-error");
  err.hidden = !(j.state === "refused" || j.state === "error");
  err.textContent = err.hidden ? "" : j.reason;
}

/** Become a remote rank of the run of `token` (once per page load: the page is a rank from then on). */
async function join(token: string): Promise<void> {
  if (demo.join.state !== "idle" || !token.trim()) return;
  let entry: URL;
  try {
    entry = programUrl(new URLSearchParams(location.search).get("program"), location.origin);
  } catch (e) {
    Object.assign(demo.join, { state: "error", reason: (e as Error).message });
    showJoin();
    return;
  }
  $<HTMLDetailsElement>("join-section").open = true;
  joinToken.value = token;
  joinBtn.disabled = joinToken.disabled = true;
  startBtn.disabled = true;
  setStatus("This tab is a rank of another run (see Join a run); reload the page to train here.");
  await joinFromPage(token, entry, demo.join, showJoin);
}

// ---- data sizes -------------------------------------------------------------------------

function showSizes(): void {
  $("data-note").textContent = `The first ${sizes.subset} of MNIST's 60000 training images and ${sizes.test} of its ` +
    `10000 test images (gpt-nano trains on the Brown Corpus).`;
}

/**
 * Make the "Data" controls' sizes the program arguments. Before any program module loaded its
 * data they only change the arguments (and the address); after, the page reloads with them in
 * its address and the controls kept, since a module's data are loaded once. Returns whether
 * the page stays.
 * @throws {RangeError} From readSizes, naming the control.
 */
function applySizes(): boolean {
  const want = readSizes(form);
  if (want.subset === sizes.subset && want.test === sizes.test) return true;
  const query = settingsQuery(readSettings(form), want, new URLSearchParams(location.search));
  if (imported) {
    setStatus("Reloading the page with the new data sizes…");
    startBtn.disabled = true;
    location.search = query.toString();
    return false;
  }
  sizes = want;
  setProgramArgs({ ...programArgs(), subset: sizes.subset, test: sizes.test });
  history.replaceState(null, "", `?${query}`);
  showSizes();
  return true;
}

// ---- start-up -----------------------------------------------------------------------------

async function init(): Promise<void> {
  const query = new URLSearchParams(location.search);
  presetFromQuery(form, query);
  syncSlowRanks();
  try {
    sizes = dataSizes(query);
  } catch (e) {
    showError(e);
    sizes = dataSizes(new URLSearchParams());
  }
  // The web's Deno.args: set before any program module is imported; every rank sees them.
  const seqs = (key: string) => {
    const v = query.get(key);
    return v === null ? undefined : Number(v); // validated by the gpt-nano program, which names the key
  };
  const chars = Number(query.get("sampleChars") ?? sampleChars);
  if (Number.isInteger(chars) && chars >= 1 && chars <= 1000) sampleChars = chars;
  else showError(new RangeError(`?sampleChars= must be an integer in [1, 1000], got ${JSON.stringify(query.get("sampleChars"))}`));
  setProgramArgs({ subset: sizes.subset, test: sizes.test, seqs: seqs("seqs"), valSeqs: seqs("valSeqs"), seqLen: seqs("seqLen") });
  $<HTMLInputElement>("subset").value = String(sizes.subset);
  $<HTMLInputElement>("test-size").value = String(sizes.test);
  showSizes();
  for (const id of ["subset", "test-size"]) {
    $(id).addEventListener("change", () => {
      try {
        applySizes();
      } catch (e) {
        showError(e);
      }
    });
  }
  $<HTMLInputElement>("ranks").max = String(MAX_RANKS);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void start();
  });
  stopBtn.addEventListener("click", () => void stop());
  $("ranks").addEventListener("input", syncSlowRanks);
  $("slow-rank").addEventListener("change", syncSlowRanks);
  $("download-dashboard").addEventListener("click", downloadDashboard);
  $("download-model").addEventListener("click", downloadModel);
  $("clear").addEventListener("click", () => {
    pad.clear();
    $("sample-label").textContent = "";
    pad.onInput(null);
  });
  $("sample").addEventListener("click", sampleDigit);
  joinForm.addEventListener("submit", (e) => {
    e.preventDefault();
    void join(joinToken.value);
  });
  showJoin();
  setDownloads();
  bars.clear("Train a model first.");

  const probe = await probeAdapter();
  if ("error" in probe) {
    demo.state = "no-webgpu";
    gpuEl.classList.add("bad");
    gpuEl.replaceChildren();
    const p = document.createElement("p");
    p.textContent = `${probe.error} This demo trains on WebGPU and cannot run here.`;
    const ul = document.createElement("ul");
    for (const line of HOW_TO_ENABLE) {
      const li = document.createElement("li");
      li.textContent = line;
      ul.append(li);
    }
    gpuEl.append(p, ul);
    startBtn.disabled = joinBtn.disabled = true;
    setStatus("WebGPU is not available.");
    return;
  }
  gpuEl.textContent = `GPU adapter: ${probe.summary.name}` +
    (probe.summary.fallback ? " (a software adapter: expect slow training)" : "");
  const token = query.get("join");
  if (token) {
    // A tab that joins another run trains nothing here: no 3-D view (its GPU device and
    // pipelines would slow the rank's start on a software adapter).
    $("drift-note").textContent = "This tab joins another run: the 3-D view shows runs trained on this page.";
    void join(token);
    return;
  }
  try {
    drift = await DriftView.create($<HTMLCanvasElement>("drift"));
    drift.onLost = (why) => {
      $("drift-note").textContent = `The 3-D view lost its GPU device (${why}); reload the page to bring it back.`;
    };
    demo.drift = drift;
  } catch (e) {
    $("drift-note").textContent = `The 3-D view is unavailable: ${(e as Error).message}`;
  }
  setStatus("Ready. Choose the settings and start training.");
}

void init();
