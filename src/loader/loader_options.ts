/**
 * The options of `videoClassificationLoader`, declared once in {@link LOADER_OPTIONS} (kind, valid range, default,
 * a line of docs, the command-line flag and the Python keyword), and resolved once, at the door they enter by
 * ({@link resolveLoaderOptions}: the TypeScript call, the server for Python, the command line): one walk over
 * the table checks them and fills every default, then the rules between options are checked and what the
 * options imply is worked out (the clip spec, the sampler's shard from `RANK`/`WORLD_SIZE`, the CUDA device
 * from `LOCAL_RANK`). What it returns ({@link ResolvedLoaderOptions}) is never checked again. Its errors name
 * the option as TypeScript does and carry `{option, value, accepts}`, so the server and the command line word
 * them as their callers wrote them. `sluice load`/`sluice serve` make their flags and `--help` from the table,
 * and the Python client's keywords are read against it by the server. The `clip` options are declared in
 * `clip_options.ts`.
 * @module
 */

import type { OptionMessagePart } from "../errors.ts";
import {
  absent,
  isPlainObject,
  optionError,
  type OptionTable,
  resolveTable,
  rewordOptionError,
  tsVocabulary,
} from "../options.ts";
import type { OptionsDisagreement, ResolvedOf } from "../option_types.ts";
import { MAX_FAILURES_OPTION, type MaxFailures, type StageConcurrency } from "../pipeline/stage.ts";
import type { OnClipError } from "./batch/replace.ts";
import { type PipelineHook, REPORT_INTERVAL_OPTION } from "../pipeline/hooks.ts";
import {
  AUTO_CONCURRENCY_OPTIONS,
  type AutoConcurrencyOptions,
  type AutoConfig,
} from "../pipeline/auto_policy.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import type { BatchLayout } from "./batch/collate.ts";
import type { VideoDataset } from "../dataset/dataset.ts";
import type { LoaderState } from "./loader_state.ts";
import { FETCH_OPTIONS, type FetchLimits, type FetchOptions } from "../dataset/fetch.ts";
import { CLIP_OPTIONS, type ClipOptions, clipSpecOf } from "./clip_options.ts";
import {
  envInt,
  type ResolvedSamplerOptions,
  SAMPLER_OPTIONS,
  samplerFromEnv,
  type SamplerOptions,
} from "../dataset/sampler.ts";

/**
 * How the loader avoids decode work (docs/decoding-less.md). Every switch is on by default and changes no
 * pixel; turn one off to measure what it brings.
 */
export interface DecodeLessOptions {
  /**
   * Leave undecoded the non-reference frames no slot shows: between the keyframe and the window, and between
   * the frames a stride or a resampling keeps.
   */
  skip?: boolean;
  /** Serve the clips of one video whose packets overlap (same GOP) from one forward decode pass. */
  once?: boolean;
  /**
   * Bytes that clips decoded ahead of their turn (by another clip's pass) may hold: it bounds how far apart in
   * the epoch's output two clips decoded in one pass may be (`⌊onceMemory / clip bytes⌋` clips).
   */
  onceMemory?: number;
  /** Give decode tasks idle cores as FFmpeg threads when fewer clips are left than cores. */
  threads?: boolean;
}

/** Options of `videoClassificationLoader`; kinds, ranges and defaults: {@link LOADER_OPTIONS}. */
export interface LoaderOptions {
  /** A dataset, or where to open one (directory tree, CSV/JSONL manifest, manifest URL). */
  dataset: VideoDataset | string;
  /**
   * Sampling, shuffling, sharding and the shuffle buffer (see `ClipSampler`). `clipDurationSec` defaults to the
   * time the clip's frames take: `numFrames` frames at the slowest video's rate (`× stride`), or at `frameRate`;
   * for `"uniform"` sampling, the whole video.
   */
  sampler?: SamplerOptions;
  /** Clips per batch. */
  batchSize: number;
  /** What one clip becomes. */
  clip: ClipOptions;
  /**
   * Each clip's audio too, as `batch.audio`: `float32` `[B, channels, samples]`, resampled to `sampleRate` and
   * mixed to `channels` (default 1), `samples = round(clipDurationSec · sampleRate)` from `round(start ·
   * sampleRate)` on; zeros (and `clips[b].audio` says why) where a video has none. See docs/clips.md.
   */
  audio?: { sampleRate: number; channels?: number };
  /** `[B, T, H, W, 3]` ("BTHWC") or planar `[B, 3, T, H, W]` ("BCTHW"). */
  layout?: BatchLayout;
  /** Decoder: "cpu", "nvdec", or "auto". */
  decode?: "cpu" | "nvdec" | "auto";
  /**
   * The CUDA device NVDEC decodes on and its batch slots live on (default `$LOCAL_RANK`, else 0: under
   * `torchrun`, each local rank's loader uses its own GPU). The default decode concurrency is that device's
   * NVDEC engine count. The Python client's `device=` keyword (default `LOCAL_RANK`) sets it for its server.
   */
  device?: number;
  /** Where sample → fetch → demux run. */
  backend?: "inprocess" | "subprocess";
  /**
   * Tasks at once per stage, or `"auto"`: the pipeline's controller sets it while the loader runs, from 1 up.
   * With the subprocess backend, fetch and demux are set by the child's own controller.
   */
  concurrency?: { fetch?: StageConcurrency; demux?: StageConcurrency; decode?: StageConcurrency };
  /**
   * The auto-concurrency controller's tuning, for stages set to `"auto"` (see `AutoConcurrencyOptions`). The
   * loader's default `cpuBudget` is twice the cores: its demux and decode tasks await Workers, transfers and
   * shared decode passes, so a task in flight is not a busy core (on 2 cores, decode 3–4 measured fastest).
   */
  autoConcurrency?: AutoConcurrencyOptions;
  /** Batches buffered for the consumer; also the subprocess backend's item buffer. */
  bufferSize?: number;
  /**
   * Keep the sampler's order through the concurrent stages, so the same seed gives the same batches. `false`
   * lets fast items overtake slow ones (a little more throughput, batches vary run to run).
   */
  ordered?: boolean;
  /** Drop a last short batch of an epoch. */
  dropLast?: boolean;
  /**
   * Batch slots: assemble batches in this many fixed batch buffers (one shared-memory mapping, Linux), reused
   * batch after batch. Each decode Worker writes its clip's pixels straight into its place in the batch, so they
   * are never copied after decode (`sluice serve` hands the same memory to the trainer), and the loader's batch
   * memory stays at `slots` batches. A batch gives its slot back when disposed
   * (`for await (using batch of loader)`): the consumer may hold at most `slots - 1` batches while it asks for
   * the next one; holding all of them and asking for another throws (the batch could never be made). Copy
   * what you keep longer (`batch.data.slice()`; `cacheLoader` does). Needs `ordered`. Decoding ahead has its
   * own bound (`bufferSize` and the decode tasks), not `slots`; a ring larger than the memory left is refused.
   * Undefined: every batch is a new buffer that the clips are copied into, and batches live as long as you
   * keep them.
   */
  slots?: number;
  /** The epoch the first iteration runs, e.g. to resume a job where it stopped. */
  firstEpoch?: number;
  /**
   * Resume mid-epoch from a state `loader.stateDict()` saved (the same as calling `loadStateDict(state)` before
   * the first epoch): the first iteration runs the rest of the state's epoch, from the batch after the last one
   * delivered. Refused when the state was saved for another dataset or other batch-shaping options.
   */
  resume?: LoaderState;
  /**
   * A clip that cannot be loaded (fetch, demux or decode fails, no frame in its window, too much padding):
   * `"replace"` fills its place with another clip of this rank's epoch plan, chosen deterministically, so
   * batches stay full; `"skip"` leaves its batch one clip short; `"fail"` ends the epoch with the clip's error.
   * Every case is counted in `stats().clips`.
   */
  onClipError?: OnClipError;
  /** HTTP retries, backoff and timeout. */
  fetch?: Omit<FetchOptions, "signal" | "range">;
  /**
   * Failed clips an epoch tolerates before it ends with an error (replaced ones count): a number, or a rate of
   * the clips finished so far once `after` clips finished.
   */
  maxFailures?: MaxFailures;
  /**
   * Receivers of the loader pipeline's stats (every `reportInterval` ms while an epoch runs, and once as each
   * ends) and events (clip failures, stalls, concurrency changes); e.g. `jsonlStatsHook(path)`. With the
   * subprocess backend they see this process's pipeline, whose rows include the backend source; the child's
   * own stats are in `loader.stats().backend`.
   */
  hooks?: PipelineHook[];
  /** Milliseconds between reports to `hooks` (the pipeline's default, 10000, when omitted). */
  reportInterval?: number;
  /** Time each clip's phases; `stats().profile` carries the per-clip breakdown (`clip_profile.ts`). Default false. */
  profile?: boolean;
  /** Where failure and info lines go (default `console.error`). */
  log?: (line: string) => void;
  /** Decoding less: skipping unshown frames, one pass for several clips, idle cores as threads (all on). */
  decodeLess?: DecodeLessOptions;
}

const concurrency = <const D extends { default: number } | { defaultText: string }>(
  stage: string,
  flag: string,
  dflt: D,
) =>
  ({
    kind: "integer",
    min: 1,
    max: 256,
    words: ["auto"],
    ...dflt,
    doc: `${stage} tasks at once, or auto: the pipeline's controller sets it while the loader runs`,
    flag,
  }) as const;

const func = (doc: string) =>
  ({
    kind: "custom",
    what: "a function",
    test: (v: unknown): v is (line: string) => void => typeof v === "function",
    doc,
    python: false,
  }) as const;

/** {@link LOADER_OPTIONS} with its literal types, for the loader's own code (its defaults typed). */
export const LOADER_TABLE = {
  dataset: {
    kind: "custom",
    what: "a path or URL (or, in TypeScript, a VideoDataset)",
    test: (v: unknown): v is string | VideoDataset =>
      (typeof v === "string" && v !== "") || (isPlainObject(v) && Array.isArray(v.items)),
    required: true,
    doc: "a directory with a folder per class, a CSV/JSONL manifest, packed shards, or their http(s) URL",
  },
  batchSize: {
    kind: "integer",
    min: 1,
    max: 65536,
    required: true,
    doc: "clips per batch",
    flag: "batch-size",
    python: "batch_size",
  },
  clip: { kind: "group", options: CLIP_OPTIONS, doc: "what one clip becomes" },
  audio: {
    kind: "group",
    presence: true,
    options: {
      sampleRate: {
        kind: "integer",
        min: 1000,
        max: 384000,
        required: true,
        doc: "audio: samples per second of each clip's audio (batch.audio)",
        flag: "audio-rate",
      },
      channels: {
        kind: "integer",
        min: 1,
        max: 8,
        default: 1,
        doc: "audio: channels (1 mixes down to mono)",
        flag: "audio-channels",
      },
    },
    doc: "each clip's audio too: batch.audio, float32 [B, channels, samples]",
  },
  sampler: {
    kind: "group",
    options: {
      ...SAMPLER_OPTIONS,
      // no constant default: the plan works it out from the frames and the videos' rates
      clipDurationSec: (({ default: _, ...spec }) => ({
        ...spec,
        defaultText: "the time the clip's frames take (the whole video for uniform sampling)",
      }))(SAMPLER_OPTIONS.clipDurationSec),
    },
    doc: "sampling, shuffling and sharding",
  },
  layout: {
    kind: "enum",
    values: ["BTHWC", "BCTHW"],
    default: "BTHWC",
    doc: "batch layout: [B,T,H,W,3] or planar [B,3,T,H,W]",
    flag: "layout",
  },
  decode: { kind: "enum", values: ["cpu", "nvdec", "auto"], default: "cpu", doc: "decoder", flag: "decode" },
  backend: {
    kind: "enum",
    values: ["inprocess", "subprocess"],
    default: "inprocess",
    doc: "where sample, fetch and demux run: this process or a Deno child",
    flag: "backend",
  },
  concurrency: {
    kind: "group",
    options: {
      fetch: concurrency("fetch", "fetch-concurrency", { default: 8 }),
      demux: concurrency("demux", "demux-concurrency", { default: 1 }),
      decode: concurrency("decode", "decode-concurrency", {
        defaultText: "the number of cores (NVDEC: its engines)",
      }),
    },
    doc: "tasks at once per stage",
  },
  autoConcurrency: {
    kind: "group",
    options: {
      ...AUTO_CONCURRENCY_OPTIONS,
      cpuBudget: { ...AUTO_CONCURRENCY_OPTIONS.cpuBudget, defaultText: "twice the number of cores" },
    },
    doc: "the auto-concurrency controller's tuning",
  },
  bufferSize: { kind: "integer", min: 1, max: 1024, default: 3, doc: "batches buffered for the consumer" },
  ordered: { kind: "boolean", default: true, doc: "keep the sampler's order (same seed, same batches)" },
  dropLast: { kind: "boolean", default: false, doc: "drop a last short batch of an epoch" },
  device: {
    kind: "integer",
    min: 0,
    max: 1023,
    defaultText: "$LOCAL_RANK, else 0",
    doc: "CUDA device of NVDEC decode and its batch slots (one loader, or server, per GPU)",
    flag: "device",
    python: false,
  },
  slots: {
    kind: "integer",
    min: 1,
    max: 1024,
    defaultText: "none: each batch a new buffer",
    doc: "batch slots reused batch after batch (no copy after decode); needs ordered",
    python: false,
  },
  firstEpoch: {
    kind: "integer",
    min: 0,
    default: 0,
    doc: "the epoch the first iteration runs",
    python: false,
  },
  resume: {
    kind: "custom",
    what: "a loader state (what loader.stateDict() returns)",
    test: (v: unknown): v is LoaderState => isPlainObject(v),
    doc: "continue mid-epoch from a state saved by stateDict() (needs ordered)",
    python: false,
  },
  onClipError: {
    kind: "enum",
    values: ["replace", "skip", "fail"],
    default: "replace",
    doc: "a clip that cannot be loaded: replaced by another, skipped, or the epoch fails",
    flag: "on-clip-error",
  },
  fetch: {
    kind: "group",
    options: (({ range: _, signal: __, ...rest }) => rest)(FETCH_OPTIONS),
    doc: "HTTP retries, backoff and timeouts",
  },
  maxFailures: {
    ...MAX_FAILURES_OPTION,
    doc:
      "failed clips an epoch tolerates (replaced ones count): a count, or a rate once `after` clips finished",
    flag: "max-failures",
  },
  hooks: {
    kind: "custom",
    what: "an array of hooks",
    test: (v: unknown): v is PipelineHook[] =>
      Array.isArray(v) && v.every((h) => typeof h === "object" && h !== null),
    doc: "receivers of the pipeline's stats and events (e.g. jsonlStatsHook(path))",
    python: false,
  },
  reportInterval: { ...REPORT_INTERVAL_OPTION, python: false },
  profile: {
    kind: "boolean",
    default: false,
    doc: "time each clip's phases (open, seek, read, decode, convert, transfers, collate): stats().profile",
    flag: "profile",
    python: false,
  },
  log: func("where failure and info lines go (default console.error)"),
  decodeLess: {
    kind: "group",
    options: {
      skip: { kind: "boolean", default: true, doc: "leave undecoded the non-reference frames no slot shows" },
      once: {
        kind: "boolean",
        default: true,
        doc: "one decode pass for clips of a video whose packets overlap",
      },
      onceMemory: {
        kind: "integer",
        min: 0,
        default: 256 * 2 ** 20,
        doc: "bytes clips decoded ahead of their turn may hold",
      },
      threads: {
        kind: "boolean",
        default: true,
        doc: "idle cores as FFmpeg threads when few clips are left",
      },
    },
    doc: "decoding less (all on; turn one off to measure what it brings)",
  },
} as const satisfies OptionTable;

/**
 * {@link LoaderOptions}, declared once: each option's kind, valid range, default, a line of docs, its `sluice`
 * flag and its Python keyword. The door ({@link resolveLoaderOptions}), the CLI's flags and `--help`, the Python
 * client's keywords and the docs' tables are made from it.
 */
export const LOADER_OPTIONS: OptionTable = LOADER_TABLE;

/** How the loader's door names options: as TypeScript does (`loader: clip.numFrames must be ...`). */
const LOADER_WORDS = tsVocabulary("loader: ");

/** The loader's options as its table resolves them (every default filled in; see {@link ResolvedLoaderOptions}). */
type LoaderTableOptions = ResolvedOf<typeof LOADER_TABLE>;

/**
 * The loader's options resolved at a door ({@link resolveLoaderOptions}): every default applied, the rules between
 * options checked, and what they imply worked out. Plan, front and decode read it and never check again. Two
 * defaults depend on what no door knows yet, and are null until then: `sampler.clipDurationSec` (the time the
 * clip's frames take at the indexed videos' rates: the plan) and `concurrency.decode` (the decoder's own: the
 * cores, or NVDEC's engines). Written out (not mapped from the table) so that it documents itself; the door
 * builds it from the table's resolved shape, so the compiler holds the two together.
 */
export interface ResolvedLoaderOptions {
  /** The dataset: a path or URL, or a `VideoDataset`. */
  dataset: VideoDataset | string;
  /** Clips per batch. */
  batchSize: number;
  /** The clip options as given (checked); what they imply is {@link ResolvedLoaderOptions.spec}. */
  clip: ClipOptions;
  /** The batches' layout. */
  layout: BatchLayout;
  /** The decoder asked for (`"auto"` is decided when the loader opens). */
  decode: "cpu" | "nvdec" | "auto";
  /** Where the front half runs. */
  backend: "inprocess" | "subprocess";
  /** Batches buffered for the consumer. */
  bufferSize: number;
  /** Whether the sampler's order is kept. */
  ordered: boolean;
  /** Whether a last short batch of an epoch is dropped. */
  dropLast: boolean;
  /** Batch slots (unset: batches are copied out). */
  slots?: number;
  /** The epoch the loader starts at. */
  firstEpoch: number;
  /** A loader state to continue from. */
  resume?: LoaderState;
  /** What a failed clip becomes. */
  onClipError: OnClipError;
  /** Failed positions an epoch tolerates. */
  maxFailures: MaxFailures;
  /** Receivers of the pipeline's stats and events. */
  hooks?: PipelineHook[];
  /** Milliseconds between reports to `hooks` (unset: the pipeline's default). */
  reportInterval?: number;
  /** Whether the decode steps are profiled. */
  profile: boolean;
  /** How the loader avoids decode work, every switch decided. */
  decodeLess: Required<DecodeLessOptions>;
  /** The sampler's options in force (`RANK`/`WORLD_SIZE` applied); `clipDurationSec` null: the plan's default. */
  sampler: Omit<ResolvedSamplerOptions, "clipDurationSec"> & { clipDurationSec: number | null };
  /** Each clip's audio, when asked for. */
  audio?: { sampleRate: number; channels: number };
  /** Tasks at once per stage; `decode` null: the decoder's default. */
  concurrency: { fetch: StageConcurrency; demux: StageConcurrency; decode: StageConcurrency | null };
  /** The controller's tuning (the loader's `cpuBudget`: twice the cores). */
  autoConcurrency: AutoConfig;
  /** The CUDA device (`$LOCAL_RANK` by default, else 0). */
  device: number;
  /** Where failure and info lines go. */
  log: (line: string) => void;
  /** How URLs are fetched. */
  fetch: FetchLimits;
  /** What one clip becomes (`clip` and `layout`); its `audio` is set by the plan, which knows the clip's duration. */
  spec: ClipSpec;
}

// LoaderOptions is the table's options written for their readers; an option that the two do not write the same
// (missing from one, or of another type) fails `deno task check` here, naming it.
const _agrees: Record<OptionsDisagreement<LoaderOptions, typeof LOADER_TABLE>, never> = {};

// Every option of the table is a field of ResolvedLoaderOptions: an option added to the table and not there
// fails `deno task check` here (the door's return statement checks the types of those that are).
const _everyOption: Record<Exclude<keyof LoaderTableOptions, keyof ResolvedLoaderOptions>, never> = {};

/**
 * The door of the loader's options: checks `raw` against {@link LOADER_OPTIONS} and applies every default in one
 * walk, checks the rules between options (a frame rate with "rate" sampling only, mean and std with float32,
 * audio with clips of one duration, slots with ordered output, the rank within the world size) and works out
 * what they imply (the clip spec; the shard and the CUDA device from `RANK`, `WORLD_SIZE`, `LOCAL_RANK`).
 * `videoClassificationLoader`, `sluice load`/`sluice serve` and the server for Python clients call it once.
 * @param raw the options as given (`LoaderOptions`; from JSON, the command line or Python keywords)
 * @returns the options in force, never checked again
 * @throws {InvalidArgumentError} for the first thing wrong, naming the option as TypeScript does (`clip.numFrames`)
 *   with its `option`, `value` and `accepts`, for a door to word as its caller wrote it
 */
export function resolveLoaderOptions(raw: unknown): ResolvedLoaderOptions {
  try {
    return implied(resolveTable(LOADER_TABLE, withEnvironment(raw), LOADER_WORDS), raw as LoaderOptions);
  } catch (e) {
    throw rewordOptionError(e, LOADER_WORDS, LOADER_TABLE); // the sampler words its own as "sampler: "
  }
}

/** `raw` with the device `$LOCAL_RANK` gives where none is given (so it is checked with the rest). */
function withEnvironment(raw: unknown): unknown {
  if (!isPlainObject(raw) || !absent(raw.device)) return raw;
  const device = envInt("LOCAL_RANK", "loader");
  return device === undefined ? raw : { ...raw, device };
}

/** The rules between options `o` (resolved from `given`), and what they imply; see {@link resolveLoaderOptions}. */
function implied(o: LoaderTableOptions, given: LoaderOptions): ResolvedLoaderOptions {
  const door: OptionMessagePart = { door: LOADER_WORDS.prefix };
  const spec = clipSpecOf(o.clip, o.layout, given.clip);
  const { clipDurationSec = null, ...sampled } = o.sampler;
  const sampler = {
    ...samplerFromEnv({ ...sampled, clipDurationSec: Infinity }, "sampler"),
    clipDurationSec,
  };
  if (o.audio !== undefined) {
    // Every clip gets as many samples, so its duration must be one for all (uniform sampling: whole videos).
    if (!Number.isFinite(clipDurationSec ?? (spec.sampling.kind === "uniform" ? Infinity : 0))) {
      const says = [door, { option: "audio" }, " needs clips of one duration: set "];
      says.push({ option: "sampler.clipDurationSec" }, " (uniform sampling takes whole videos)");
      throw optionError(LOADER_WORDS, { option: "audio", says });
    }
  }
  if (o.slots !== undefined && !o.ordered) {
    const says = [
      door,
      { option: "slots" },
      " needs ",
      { option: "ordered" },
      " output (each clip's place is planned)",
    ];
    throw optionError(LOADER_WORDS, { option: "slots", value: o.slots, says });
  }
  // Left out while resuming, firstEpoch is the resume state's epoch (the loader checks the state, then that a
  // firstEpoch given agrees with it); the table's 0 would refuse every state of a later epoch.
  const resumeEpoch = (given.resume as { epoch?: unknown } | undefined)?.epoch;
  const firstEpoch =
    absent(given.firstEpoch) && Number.isSafeInteger(resumeEpoch) && (resumeEpoch as number) >= 0
      ? resumeEpoch as number
      : o.firstEpoch;
  const cores = navigator.hardwareConcurrency ?? 1;
  return {
    ...o,
    firstEpoch,
    spec,
    sampler,
    audio: o.audio as ResolvedLoaderOptions["audio"],
    concurrency: { ...o.concurrency, decode: o.concurrency.decode ?? null },
    // A loader task in flight is not a busy core (it awaits a Worker, a transfer, a shared decode pass, the
    // thread budget): its CPU stages may hold twice the cores; a step is still kept only when it helps.
    autoConcurrency: { ...o.autoConcurrency, cpuBudget: o.autoConcurrency.cpuBudget ?? 2 * cores },
    device: o.device ?? 0,
    log: o.log ?? ((line: string) => console.error(line)),
    fetch: o.fetch,
  };
}

/**
 * The `ClipSpec.audio` of the resolved `audio` option for clips of `clipDurationSec` (finite: the door refused
 * audio with whole-video clips): every clip gets `round(clipDurationSec · sampleRate)` samples, so the clips of
 * a batch stack.
 */
export function audioSpecOf(
  audio: NonNullable<ResolvedLoaderOptions["audio"]>,
  clipDurationSec: number,
): NonNullable<ClipSpec["audio"]> {
  return { ...audio, samples: Math.round(clipDurationSec * audio.sampleRate) };
}
