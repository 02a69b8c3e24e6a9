/**
 * The floor plan of `src/`, declared once: the rooms bottom to top (what `tests/architecture_test.ts` checks the
 * imports against) and what each holds. Run it to write `docs/architecture.md`, the folder-by-folder map made
 * from every module's own doc comment; with `--check` it writes nothing and exits 1 when that page is stale.
 *
 *     deno run -A scripts/architecture_map.ts [--check]
 * @module
 */

/** One room: a folder (`src` for the modules directly in `src/`) and what it holds. */
export interface Room {
  /** The folder, from the repository root. */
  dir: string;
  /** What the room is for, one paragraph. */
  about: string;
}

/** Bottom to top: each room may import the rooms before it, never one after it. */
export const ROOMS: readonly Room[] = [
  {
    dir: "src",
    about: "What every room shares: the typed errors rooted at `SluiceError` (kept across Workers and " +
      "processes), the option tables' checker and vocabularies, `settle`.",
  },
  {
    dir: "ffi",
    about: "Bindings only: finding and loading the libraries, symbol tables (`as const satisfies " +
      "Deno.ForeignLibraryInterface`, each argument commented with its C type), per-release struct layouts, " +
      "error decoding. No behaviour.",
  },
  {
    dir: "src/cuda",
    about:
      "CUDA through the driver API: the library and its contexts per thread, device memory (buffers, frames " +
      "on the GPU, device-to-device copies, host to device), structs by layout table. Below both what decodes on " +
      "the GPU (`src/nvdec`) and what shares GPU memory with trainers (`src/memory`).",
  },
  {
    dir: "src/media",
    about:
      "FFmpeg through FFI: probe, demux (windows, seeking), bitstream filters, decode, scale, the frame " +
      "selector (which frames a clip holds), frame writing (crop, orientation, normalisation). `structs.ts` is " +
      "the only module that turns layout offsets into typed field access.",
  },
  {
    dir: "src/nvdec",
    about: "NVIDIA's decoder through libnvcuvid (over `src/cuda`): availability, the parser and decoder " +
      "session, NV12 to RGB on the GPU (PTX), the clip pass's NVDEC decoder.",
  },
  {
    dir: "src/pipeline",
    about: "The stage engine: sources, pipes, aggregate and disaggregate, bounded queues, ordering, Worker " +
      "pools, stats rows and hooks (the one stats door), the bottleneck verdict, the auto-concurrency controller.",
  },
  {
    dir: "src/memory",
    about: "Memory shared with other threads and processes: memfd mappings, rings of batch slots and their " +
      "credits, CUDA IPC slots, glibc's mmap threshold.",
  },
  {
    dir: "src/dataset",
    about:
      "What to load: datasets (directory trees, manifests, URLs, shards), fetching, indexing, the seeded " +
      "sampler, the shuffle buffer, each epoch's output order, seeded randomness.",
  },
  {
    dir: "src/backend",
    about:
      "Running a pipeline's front half in a Deno child process: spawning it, the framed binary protocol " +
      "over stdio, credits, liveness, its stats.",
  },
  {
    dir: "src/loader/clip",
    about:
      "What a clip is through the loader: its spec, the shapes of its life from request to batch, its failures.",
  },
  {
    dir: "src/loader/decode",
    about:
      "The loader's decode wing: the decoders it runs (the device seam), clip decode steps and their Worker, " +
      "the generic clip pass and the check every clip passes, FFmpeg threads for idle cores, per-clip profiles.",
  },
  {
    dir: "src/loader/front",
    about:
      "The loader's front wing: sample, fetch, demux and shuffle, in this process or a Deno child, and decode " +
      "once across rows and across a node's ranks.",
  },
  {
    dir: "src/loader/batch",
    about:
      "The loader's batch wing: batch slots, collate, replacing failed clips, and the accounting of every clip " +
      "planned (delivered, failed, dropped).",
  },
  {
    dir: "src/loader",
    about:
      "The video classification loader: its options and their door, the plan, assembling the wings into the " +
      "loader a training loop iterates, its state for resume, preview, the cache loader.",
  },
  {
    dir: "src/prep",
    about:
      "Preparing data: transcode to the training resolution and rate, manifests, WebDataset-style shards, " +
      "verification, synthetic datasets, I/O benchmarks.",
  },
  {
    dir: "src/serve",
    about:
      "Publishing a loader's batches to trainers in other processes: the Unix-socket protocol, sessions, " +
      "the server process the Python client spawns, the node server a machine's ranks share, metrics.",
  },
  { dir: "src/tune", about: "`sluice tune`: trials in subprocesses, the search, reports and plots." },
  {
    dir: "src/cli",
    about: "The `sluice` command line: each command declares its flags (the loader's come from its option " +
      "table), the live view.",
  },
];

/**
 * The seams: the interfaces where one part of the house plugs into another, each with the module that declares it
 * (the page quotes the first sentence of its doc comment).
 */
export const SEAMS: readonly { name: string; file: string; plugs: string }[] = [
  {
    name: "ClipPassDecoder",
    file: "src/media/pass_decoder.ts",
    plugs: "a decoder (CPU, NVDEC) into the clip pass",
  },
  {
    name: "DecodeDevice",
    file: "src/loader/decode/devices.ts",
    plugs: "a decoder's needs into how the loader is built",
  },
  { name: "ClipPlaces", file: "src/loader/clip/life.ts", plugs: "the batch wing into the decode steps" },
  { name: "Executor", file: "src/pipeline/executor.ts", plugs: "where a stage's tasks run into a pipeline" },
  { name: "PipelineHook", file: "src/pipeline/hooks.ts", plugs: "stats and events out of a pipeline" },
  { name: "LoaderFactory", file: "src/serve/session_host.ts", plugs: "a loader per session into the server" },
];

/** The module whose doc comment holds the clip's trip: a table of the shapes a clip takes, in order. */
const CLIP_LIFE = "src/loader/clip/life.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const PAGE = `${ROOT}docs/architecture.md`;

/** The modules of a room, sorted (the root room: only the files directly in `src/`). */
export function modulesOf(room: Room): string[] {
  const out: string[] = [];
  const walk = (dir: string, deep: boolean) => {
    for (const e of Deno.readDirSync(ROOT + dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory && deep) walk(p, deep);
      else if (e.isFile && e.name.endsWith(".ts")) out.push(p);
    }
  };
  walk(room.dir, room.dir !== "src");
  return out.sort();
}

/** The first sentence of a module's doc comment. */
function summary(file: string): string {
  const m = Deno.readTextFileSync(ROOT + file).match(/^\s*\/\*\*([\s\S]*?)\*\//);
  if (m === null) return "";
  const text = m[1].split("\n").map((l) => l.trim().replace(/^\*\s?/, "")).join(" ").replace("@module", "")
    .trim();
  return (text.match(/^(.+?\.)(\s|$)/)?.[1] ?? text).replaceAll("|", "\\|");
}

/** The text of a doc comment's lines, its `* ` margins taken off and its links written as code. */
function docLines(comment: string): string[] {
  return comment.split("\n").map((l) => l.trim().replace(/^\/\*\*\s?|^\*\/$|^\*\s?/g, ""))
    .filter((l) => l !== "").map((l) => l.replace(/\{@link ([\w.]+)\}/g, "`$1`"));
}

/** The first sentence of the doc comment right above `export ... name` in `file`. */
function symbolSummary(name: string, file: string): string {
  const code = Deno.readTextFileSync(ROOT + file);
  const at = code.search(new RegExp(`\\nexport (?:interface|type|class|function|const) ${name}\\b`));
  const doc = at < 0 ? null : code.slice(0, at).match(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*$/);
  if (doc === null) throw new Error(`${file}: no documented export ${name} (architecture_map.ts SEAMS)`);
  const text = docLines(doc[1]).join(" ");
  return (text.match(/^(.+?\.)(\s|$)/)?.[1] ?? text).replaceAll("|", "\\|");
}

/** The clip's trip: the table of shapes in {@link CLIP_LIFE}'s module doc, as it is written there. */
function clipTrip(): string[] {
  const doc = Deno.readTextFileSync(ROOT + CLIP_LIFE).match(/^\s*\/\*\*([\s\S]*?)\*\//)![1];
  const table = docLines(doc).filter((l) => l.startsWith("|"));
  if (table.length < 3) throw new Error(`${CLIP_LIFE}: its module doc has no table of the clip's shapes`);
  return table;
}

/** The page: the rooms bottom to top, each with its modules and their summaries. */
export function architecturePage(): string {
  const lines = [
    "# Architecture",
    "",
    "sluice is a stack of rooms, one concept each. A room imports only the rooms below it, and no module is part",
    "of an import cycle except through type-only imports: `tests/architecture_test.ts` checks both on every test",
    `run. Bottom to top: ${ROOMS.map((r) => `\`${r.dir}/\``).join(", ")}.`,
    "",
    "Beside them: `mod.ts` (the public API for loader users, re-exports only; the subpath entry points are",
    "`src/*/mod.ts` and `src/cli/main.ts`), `tests/` (mirroring `src/`), `bench/`, `examples/`, `python/` (the",
    "client package), `docs/` and `scripts/`. This page is made from each module's own doc comment by",
    "`deno task architecture` (`scripts/architecture_map.ts`); a test fails when it is stale.",
    "",
  ];
  lines.push(
    "## The clip's trip",
    "",
    `The shapes a clip takes through the loader, in the order it lives them (from \`${CLIP_LIFE}\`):`,
    "",
    ...clipTrip(),
    "",
    "## The seams",
    "",
    "Where one part plugs into another (each interface's own doc comment, first sentence):",
    "",
    "| seam | declared in | plugs | what |",
    "| --- | --- | --- | --- |",
    ...SEAMS.map((x) => `| \`${x.name}\` | \`${x.file}\` | ${x.plugs} | ${symbolSummary(x.name, x.file)} |`),
    "",
  );
  for (const room of ROOMS) {
    lines.push(room.dir === "src" ? "## `src/` (root modules)" : `## \`${room.dir}/\``, "", room.about, "");
    lines.push("| module | what |", "| --- | --- |");
    for (const f of modulesOf(room)) lines.push(`| \`${f.slice(room.dir.length + 1)}\` | ${summary(f)} |`);
    lines.push("");
  }
  return lines.join("\n");
}

/** Formats markdown as `deno fmt` does (the page is checked in formatted). */
async function formatted(markdown: string): Promise<string> {
  const p = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const w = p.stdin.getWriter();
  await w.write(new TextEncoder().encode(markdown));
  await w.close();
  const out = await p.output();
  return new TextDecoder().decode(out.stdout);
}

/** The page as it should be checked in. */
export function expectedPage(): Promise<string> {
  return formatted(architecturePage());
}

if (import.meta.main) {
  const page = await expectedPage();
  if (Deno.args.includes("--check")) {
    const stale = Deno.readTextFileSync(PAGE) !== page;
    if (stale) console.error("docs/architecture.md is stale: run deno task architecture");
    Deno.exit(stale ? 1 : 0);
  }
  Deno.writeTextFileSync(PAGE, page);
}
