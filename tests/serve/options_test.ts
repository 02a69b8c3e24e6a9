/**
 * The server's config, checked once before it listens (`resolveServerConfig`): TypeScript's spelling or a Python
 * client's keywords as given, errors named as their writer spelled them, defaults from the tables; the process
 * reports a config error as a JSON event on stdout (what the Python client raises by class name); `--options`
 * lists every Python keyword.
 */
import assert from "node:assert/strict";
import {
  PYTHON_OPTIONS,
  pythonOptionList,
  resolveServerConfig,
  SERVER_OPTIONS,
} from "../../src/serve/options.ts";
import {
  LOADER_OPTIONS,
  type ResolvedLoaderOptions,
  resolveLoaderOptions,
} from "../../src/loader/loader_options.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { optionEntries } from "../../src/options.ts";

const MAIN = new URL("../../src/serve/main.ts", import.meta.url).pathname;
const LOADER = { dataset: "d", batchSize: 2, clip: { numFrames: 4, width: 8, height: 8 } };
const PY = { dataset: "d", batch_size: 2, num_frames: 4, width: 8, height: 8 };

/** Resolved loader options, comparable (their `log` is a function). */
function resolved(o: ResolvedLoaderOptions): Omit<ResolvedLoaderOptions, "log"> {
  const { log: _, ...rest } = o;
  return rest;
}

function refused(config: unknown, message: string) {
  assert.throws(
    () => resolveServerConfig(config),
    (e: Error) => e instanceof InvalidArgumentError && e.message === message,
    message,
  );
}

Deno.test("server config: TypeScript's spelling, defaults from the table, errors named by their path", () => {
  const { words, loader, ...c } = resolveServerConfig({ socket: "/tmp/s", loader: LOADER });
  assert.deepEqual(resolved(loader), resolved(resolveLoaderOptions(LOADER)), "resolved by the loader's door");
  assert.deepEqual(c, {
    socket: "/tmp/s",
    slots: SERVER_OPTIONS.slots.default,
    exitOnStdinEof: false,
    logConnections: true,
    node: false,
    lingerMs: SERVER_OPTIONS.lingerMs.default,
    firstClientMs: SERVER_OPTIONS.firstClientMs.default,
  });
  // the loaders' errors at run time name options as the config does
  assert.equal(words.name("maxFailures"), "loader.maxFailures");
  refused(
    { socket: "/tmp/s", slost: 3, loader: LOADER },
    "serve: unknown option slost (did you mean slots?)",
  );
  refused(
    { socket: "/tmp/s", loader: { ...LOADER, clip: { ...LOADER.clip, numFrame: 3 } } },
    "serve: unknown option loader.clip.numFrame (did you mean loader.clip.numFrames?)",
  );
  refused({
    socket: "/tmp/s",
    loader: { ...LOADER, clip: { ...LOADER.clip, frameRate: 5, sampling: "uniform" } },
  }, 'serve: loader.clip.frameRate applies to loader.clip.sampling "rate" only (sampling is "uniform")');
  refused({ loader: LOADER }, "serve: socket is required");
  refused(
    { socket: "/tmp/s", slots: 0, loader: LOADER },
    "serve: slots must be an integer from 1 to 1024, got 0",
  );
});

Deno.test("server config: a Python client's keywords as given, named back as the user wrote them", () => {
  const c = resolveServerConfig({
    socket: "/s",
    python: { ...PY, slots: 6, clip: { dtype: "float32" }, shuffle: false },
  });
  assert.equal(c.slots, 6);
  assert.equal(c.words.name("maxFailures"), "max_failures"); // the loaders' errors at run time too
  assert.deepEqual(
    resolved(c.loader),
    resolved(resolveLoaderOptions({
      dataset: "d",
      batchSize: 2,
      clip: { numFrames: 4, width: 8, height: 8, dtype: "float32" },
      sampler: { shuffle: false },
    })),
  );
  assert.equal(resolveServerConfig({ socket: "/s", python: PY }).slots, 4);
  refused(
    { socket: "/s", python: { ...PY, slots: 0 } },
    "sluice.Loader: slots must be an integer from 1 to 1024, got 0",
  );
  refused(
    { socket: "/s", python: { ...PY, clips_per_vidoe: 2 } },
    "sluice.Loader: unknown option clips_per_vidoe (did you mean clips_per_video?)",
  );
  refused(
    { socket: "/s", python: { ...PY, pin_memroy: true }, clientKeywords: ["pin_memory"] },
    "sluice.Loader: unknown option pin_memroy (did you mean pin_memory?)",
  );
  refused(
    { socket: "/s", python: { dataset: "d" } },
    "sluice.Loader: batch_size, num_frames, width and height are required",
  );
});

Deno.test("server config: ranks of one machine (LOCAL_WORLD_SIZE) share its cores unless decode concurrency is given", () => {
  const before = Deno.env.get("LOCAL_WORLD_SIZE");
  try {
    Deno.env.set("LOCAL_WORLD_SIZE", "2");
    const cores = navigator.hardwareConcurrency;
    const c = resolveServerConfig({ socket: "/s", python: PY });
    assert.equal(c.loader.concurrency.decode, Math.max(1, Math.floor(cores / 2)));
    const given = resolveServerConfig({ socket: "/s", python: { ...PY, concurrency: { decode: 3 } } });
    assert.equal(given.loader.concurrency.decode, 3);
  } finally {
    if (before === undefined) Deno.env.delete("LOCAL_WORLD_SIZE");
    else Deno.env.set("LOCAL_WORLD_SIZE", before);
  }
});

Deno.test("server config: a node server's budget and a metrics address, checked at the door", () => {
  const c = resolveServerConfig({
    socket: "/tmp/s",
    loader: LOADER,
    node: true,
    cpuBudget: 3,
    metrics: "[::1]:0",
  });
  assert.deepEqual([c.node, c.cpuBudget, c.metrics], [true, 3, { hostname: "::1", port: 0 }]);
  const py = resolveServerConfig({ socket: "/tmp/s", node: true, python: { ...PY, cpu_budget: 2 } });
  assert.deepEqual([py.cpuBudget, "cpuBudget" in py.loader], [2, false]);
  refused(
    { socket: "/tmp/s", python: { ...PY, cpu_budget: 2 } },
    "sluice.Loader: cpu_budget is the budget of a node server, shared by every rank of this machine: ask for " +
      "one (sluice.Loader(..., node=True), sluice serve --node)",
  );
  refused(
    { socket: "/tmp/s", python: { ...PY, metrics: "9400" } },
    'sluice.Loader: metrics must be HOST:PORT (e.g. "127.0.0.1:9400"; port 0 picks a free one), got "9400"',
  );
  refused(
    { socket: "/tmp/s", loader: LOADER, node: true, cpuBudget: 0 },
    "serve: cpuBudget must be an integer from 1 to 4096, got 0",
  );
  // a node server's ranks share its budget: LOCAL_WORLD_SIZE does not split the cores
  const before = Deno.env.get("LOCAL_WORLD_SIZE");
  Deno.env.set("LOCAL_WORLD_SIZE", "4");
  try {
    const node = resolveServerConfig({ socket: "/tmp/s", loader: LOADER, node: true }).loader;
    assert.equal(node.concurrency.decode, null);
    // and it plans as rank 0 of 1: each client's hello gives its shard
    assert.deepEqual([node.sampler.rank, node.sampler.worldSize], [0, 1]);
  } finally {
    if (before === undefined) Deno.env.delete("LOCAL_WORLD_SIZE");
    else Deno.env.set("LOCAL_WORLD_SIZE", before);
  }
});

Deno.test("server config: --options lists every option Python can set, once, with its declaration", () => {
  const rows = pythonOptionList();
  const keywords = rows.map((r) => r.keyword);
  assert.equal(new Set(keywords).size, keywords.length);
  const paths = new Set(rows.filter((r) => r.scope === "loader").map((r) => r.path));
  for (const { path, spec } of optionEntries(LOADER_OPTIONS)) {
    const hidden = path.split(".").some((_, i, a) => {
      const p = a.slice(0, i + 1).join(".");
      return optionEntries(PYTHON_OPTIONS).find((e) => e.path === p)?.spec.python === false;
    });
    if (spec.kind === "group" || hidden) assert.ok(!paths.has(path), path);
    else assert.ok(paths.has(path), `${path} missing from the Python keywords`);
  }
  assert.deepEqual(rows.filter((r) => r.scope === "server").map((r) => [r.keyword, r.path]), [
    ["slots", "slots"],
    ["cpu_budget", "cpuBudget"],
    ["metrics", "metrics"],
  ]);
  const numFrames = rows.find((r) => r.keyword === "num_frames")!;
  assert.deepEqual([numFrames.path, numFrames.spec.kind, numFrames.spec.max], [
    "clip.numFrames",
    "integer",
    10000,
  ]);
  assert.ok(rows.some((r) => r.keyword === 'clip["dtype"]'));
});

Deno.test("server process: a config error is a JSON event on stdout naming the keyword, before listening", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MAIN,
      "--config",
      JSON.stringify({ socket: "/tmp/never.sock", python: { ...PY, clip: { num_frame: 3 } } }),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 1);
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  assert.deepEqual(JSON.parse(lines[lines.length - 1]), {
    event: "error",
    name: "InvalidArgumentError",
    message: 'sluice.Loader: unknown option clip["num_frame"] (did you mean clip["num_frames"]?)',
  });
  const list = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--options"],
    stdout: "piped",
  }).output();
  assert.deepEqual(JSON.parse(new TextDecoder().decode(list.stdout)), pythonOptionList());
});
