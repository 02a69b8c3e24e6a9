/**
 * The batch server's options, declared once ({@link SERVER_OPTIONS}: `sluice serve`'s `--socket` and `--slots`,
 * the Python client's `slots`), and the server's door ({@link resolveServerConfig}): a config in TypeScript's
 * spelling (`{socket, slots, loader: LoaderOptions}`), or the keywords a Python client's user passed, as given
 * (`{socket, python: {batch_size, clip: {...}, ...}}`), resolved once before the server listens: the server's
 * options by their table, the loader's by the loader's door, and errors named as the config's writer spelled
 * them. {@link sessionOptions} gives each session's loader its shard, epoch and device from the client's hello.
 * @module
 */

import { InvalidArgumentError, type OptionMessagePart } from "../errors.ts";
import {
  describe,
  groupOf,
  isPlainObject,
  optionEntries,
  optionError,
  type OptionSpec,
  type OptionTable,
  resolveTable,
  rewordOptionError,
  tsVocabulary,
  type Vocabulary,
} from "../options.ts";
import { fromPython, PYTHON_WORDS, pythonName } from "../python_options.ts";
import {
  LOADER_OPTIONS,
  type LoaderOptions,
  type ResolvedLoaderOptions,
  resolveLoaderOptions,
} from "../loader/loader_options.ts";

/** Loader options a server can be given: JSON, so no callbacks. */
export type ServedLoaderOptions = Omit<LoaderOptions, "hooks" | "log">;

/** {@link SERVER_OPTIONS} with its literal types, for the server's own code. */
export const SERVER_TABLE = {
  socket: { kind: "string", required: true, doc: "path of the Unix socket to listen on", flag: "socket" },
  slots: {
    kind: "integer",
    min: 1,
    max: 1024,
    default: 4,
    doc: "batch slots per client: the batches a trainer may keep at once (not how far decoding runs ahead)",
    flag: "slots",
    python: "slots",
  },
  exitOnStdinEof: {
    kind: "boolean",
    default: false,
    doc: "exit when stdin reaches end of file",
    python: false,
  },
  removeDir: { kind: "string", doc: "remove this directory on exit", python: false },
  logConnections: {
    kind: "boolean",
    default: true,
    doc: "log each client's connection, disconnection and the error that ends its session",
    python: false,
  },
  node: {
    kind: "boolean",
    default: false,
    doc: "one server for every rank of this machine: one decode pool, clips of a file shared across ranks; " +
      "it leaves with its last client",
    flag: "node",
    python: false,
  },
  cpuBudget: {
    kind: "integer",
    min: 1,
    max: 4096,
    defaultText: "the cores less one per local rank ($LOCAL_WORLD_SIZE), at least 1",
    doc: "node server: decode Workers all ranks share",
    flag: "cpu-budget",
    python: "cpu_budget",
  },
  metrics: {
    kind: "string",
    doc: "serve Prometheus metrics over HTTP at HOST:PORT (GET /metrics)",
    flag: "metrics",
    python: "metrics",
  },
  lingerMs: {
    kind: "number",
    min: 0,
    default: 2000,
    doc: "node server: ms it waits, once its last client left, before it leaves",
    python: false,
  },
  firstClientMs: {
    kind: "number",
    min: 0,
    infinity: true,
    default: 60000,
    doc: "node server: ms it waits for its first client before it leaves (sluice serve --node: no limit)",
    python: false,
  },
} as const satisfies OptionTable;

/** The server's own options, declared once (`sluice serve`'s flags, the Python client's `slots`). */
export const SERVER_OPTIONS: OptionTable = SERVER_TABLE;

/** What `sluice.Loader(...)` sends besides the server's options: its user's keywords, as given, and its own. */
const PYTHON_CONFIG = {
  python: {
    kind: "custom",
    what: "an object of the keywords a Python user passed",
    test: isPlainObject,
    required: true,
    doc: "the loader's options as Python keywords",
  },
  clientKeywords: {
    kind: "custom",
    what: "a list of names",
    test: (v) => Array.isArray(v) && v.every((x) => typeof x === "string"),
    doc: "the Python client's own keywords (suggested for a misspelled one)",
  },
} as const satisfies OptionTable;

/**
 * The Python keywords: every loader option Python can set, in snake_case (`num_frames` and the flat aliases the
 * table declares), and the server's `slots`.
 */
export const PYTHON_OPTIONS: OptionTable = {
  ...LOADER_OPTIONS,
  serverSlots: SERVER_TABLE.slots,
  serverCpuBudget: SERVER_TABLE.cpuBudget,
  serverMetrics: SERVER_TABLE.metrics,
};

/** The server's own options among {@link PYTHON_OPTIONS}, by their path there. */
const PYTHON_SERVER_KEYS = {
  serverSlots: "slots",
  serverCpuBudget: "cpuBudget",
  serverMetrics: "metrics",
} as const;

/** What a server runs with, every default applied. */
export interface ResolvedServerConfig {
  /** Unix socket path. */
  socket: string;
  /** Batch slots per client. */
  slots: number;
  /** The options of each session's loader, resolved once (each session adds its shard: {@link sessionOptions}). */
  loader: ResolvedLoaderOptions;
  /**
   * How errors name the options: as the config's writer spelled them (`loader.maxFailures`; a Python client's
   * `max_failures`), for the loaders' errors at run time as for the config's.
   */
  words: Vocabulary;
  /** Exit when stdin reaches end of file. */
  exitOnStdinEof: boolean;
  /** Remove this directory on exit. */
  removeDir?: string;
  /** Log each client's connection. */
  logConnections: boolean;
  /** One server for every rank of this machine (`node_hub.ts`). */
  node: boolean;
  /** With `node`: the node's decode Workers (absent: `defaultCpuBudget()`). */
  cpuBudget?: number;
  /** Where Prometheus metrics are served (`metrics.ts`), when asked. */
  metrics?: { hostname: string; port: number };
  /** With `node`: ms it waits, once its last client left, before it leaves. */
  lingerMs: number;
  /** With `node`: ms it waits for its first client before it leaves. */
  firstClientMs: number;
}

/** The config's parts as given, and how their writer names options: the server's, and the loader's. */
interface GivenConfig {
  server: Record<string, unknown>;
  loader: Record<string, unknown>;
  serverWords: Vocabulary;
  words: Vocabulary;
}

const SERVE_WORDS = tsVocabulary("serve: ");

/**
 * The server's door: resolves a config once, before the server listens. `config` is TypeScript's (`loader`) or
 * a Python client's (`python`, the user's keywords as given): the server's options are resolved by
 * {@link SERVER_OPTIONS}, the loader's by `resolveLoaderOptions`, each once. With no decode concurrency given and
 * several ranks on this machine (`LOCAL_WORLD_SIZE`, set by torchrun), each server decodes with its share of the
 * cores; a node server plans as rank 0 of 1 (each client's hello gives its own shard).
 * @param config the config, as JSON gives it
 * @returns what the server runs with
 * @throws {InvalidArgumentError} naming the option as its writer spelled it (`loader.clip.numFrames`;
 *   `num_frames`, `clip["num_frames"]`), with the closest valid name for one nobody declared
 */
export function resolveServerConfig(config: unknown): ResolvedServerConfig {
  if (!isPlainObject(config)) {
    throw new InvalidArgumentError(`serve: the config must be an object, got ${JSON.stringify(config)}`);
  }
  let given: GivenConfig;
  if (config.python === undefined) given = typeScriptConfig(config);
  else {
    const { python, clientKeywords, ...server } = config;
    const c = resolveTable(PYTHON_CONFIG, { python, clientKeywords }, SERVE_WORDS);
    given = pythonConfig(server, c.python, c.clientKeywords ?? []);
  }
  const server = resolveTable(SERVER_TABLE, given.server, given.serverWords);
  let loader: ResolvedLoaderOptions;
  try {
    loader = resolveLoaderOptions(sharing(given.loader, server.node));
  } catch (e) {
    throw rewordOptionError(e, given.words, PYTHON_OPTIONS);
  }
  const w = given.serverWords;
  if (server.cpuBudget !== undefined && !server.node) {
    const says: OptionMessagePart[] = [{ door: w.prefix }, { option: "cpuBudget" }];
    says.push(" is the budget of a node server, shared by every rank of this machine: ask for one ");
    says.push("(sluice.Loader(..., node=True), sluice serve --node)");
    throw optionError(w, { option: "cpuBudget", value: server.cpuBudget, says });
  }
  if (server.node && loader.backend === "subprocess") {
    const says: OptionMessagePart[] = [{ door: given.words.prefix }, { option: "backend" }];
    says.push(
      ' "subprocess" cannot be used with a node server (its ranks share one front half and one pool in ',
    );
    says.push("the server's process): leave it out");
    throw optionError(given.words, { option: "backend", value: "subprocess", says });
  }
  const metrics = server.metrics === undefined
    ? undefined
    : parseHostPort(server.metrics, `${w.prefix}${w.name("metrics")}`);
  const {
    socket,
    slots,
    exitOnStdinEof,
    removeDir,
    logConnections,
    node,
    cpuBudget,
    lingerMs,
    firstClientMs,
  } = server;
  return {
    socket,
    slots,
    loader,
    words: given.words,
    exitOnStdinEof,
    ...(removeDir !== undefined ? { removeDir } : {}),
    logConnections,
    node,
    ...(cpuBudget !== undefined ? { cpuBudget } : {}),
    ...(metrics ? { metrics } : {}),
    lingerMs,
    firstClientMs,
  };
}

/** A config in TypeScript's spelling: the server's options, and `loader`. */
function typeScriptConfig(config: Record<string, unknown>): GivenConfig {
  const { loader, ...server } = config;
  const words = { ...SERVE_WORDS, name: (path: string) => `loader.${path}` };
  if (!isPlainObject(loader)) {
    const says: OptionMessagePart[] = [{ door: SERVE_WORDS.prefix }];
    says.push(
      ...loader === undefined
        ? ["loader is required"]
        : ["loader must be an object of options, got ", { value: loader }],
    );
    throw optionError(SERVE_WORDS, { option: "loader", value: loader, says });
  }
  return { server, loader, serverWords: SERVE_WORDS, words };
}

/**
 * A Python client's config: the server's options it sets itself (`socket`, ...) and the user's keywords, read
 * against {@link PYTHON_OPTIONS} (the server's `slots`, `cpu_budget`, `metrics` among them), named back as the
 * user wrote them.
 */
function pythonConfig(
  server: Record<string, unknown>,
  keywords: Record<string, unknown>,
  clientKeywords: readonly string[],
): GivenConfig {
  const py = fromPython(PYTHON_OPTIONS, keywords, "sluice.Loader: ", clientKeywords);
  const loader: Record<string, unknown> = { ...py.options };
  const own = { ...server };
  for (const [path, key] of Object.entries(PYTHON_SERVER_KEYS)) {
    const v = loader[path];
    delete loader[path];
    if (v !== undefined) own[key] = v;
  }
  const fromKeyword = new Map(Object.entries(PYTHON_SERVER_KEYS).map(([path, key]) => [key as string, path]));
  const serverWords: Vocabulary = {
    ...py.vocabulary,
    name: (key) => fromKeyword.has(key) ? py.vocabulary.name(fromKeyword.get(key)!) : key,
  };
  return { server: own, loader, serverWords, words: py.vocabulary };
}

/**
 * The loader's options as given, with what the server's place decides: ranks' own servers on one machine
 * (`LOCAL_WORLD_SIZE`) split its cores for decoding unless a decode concurrency is given; a node server plans as
 * rank 0 of 1 (its own `RANK` must not choose the node's: each client's hello gives its shard).
 */
function sharing(loader: Record<string, unknown>, node: boolean): Record<string, unknown> {
  if (node) {
    const sampler = isPlainObject(loader.sampler) ? loader.sampler : {};
    return { ...loader, sampler: { ...sampler, rank: sampler.rank ?? 0, worldSize: sampler.worldSize ?? 1 } };
  }
  const local = Number(Deno.env.get("LOCAL_WORLD_SIZE") ?? "1");
  const concurrency = isPlainObject(loader.concurrency) ? loader.concurrency : undefined;
  if (concurrency?.decode !== undefined || !Number.isSafeInteger(local) || local <= 1) return loader;
  const cores = navigator.hardwareConcurrency ?? 1;
  return { ...loader, concurrency: { ...concurrency, decode: Math.max(1, Math.floor(cores / local)) } };
}

/**
 * The options of one session's loader: the server's, with the client's shard (`rank`, `worldSize`), first epoch
 * and CUDA device from its hello (a `LoaderRequest`, checked by the protocol), batch slots (`slots`, unless the options set their
 * own, or the order is not kept: places are planned) and where it logs.
 */
export function sessionOptions(
  o: ResolvedLoaderOptions,
  req: { rank?: number; worldSize?: number; firstEpoch: number; device?: number },
  slots: number,
  log?: (line: string) => void,
): ResolvedLoaderOptions {
  return {
    ...o,
    slots: o.slots ?? (o.ordered ? slots : undefined),
    sampler: req.rank === undefined
      ? o.sampler
      : { ...o.sampler, rank: req.rank, worldSize: req.worldSize ?? 1 },
    firstEpoch: req.firstEpoch,
    device: req.device ?? o.device,
    log: log ?? o.log,
  };
}

/**
 * `HOST:PORT` (a host name, an IPv4 address, or an IPv6 one in brackets; port 0 to 65535, 0 picks a free one) as
 * `Deno.serve` takes it; throws `InvalidArgumentError` naming `what` otherwise.
 */
export function parseHostPort(value: string, what: string): { hostname: string; port: number } {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || port > 65535) {
    throw new InvalidArgumentError(
      `${what} must be HOST:PORT (e.g. "127.0.0.1:9400"; port 0 picks a free one), got ${
        JSON.stringify(value)
      }`,
    );
  }
  const host = m[1].startsWith("[") ? m[1].slice(1, -1) : m[1];
  return { hostname: host, port };
}

/** One Python keyword, as {@link pythonOptionList} lists them (JSON). */
export interface PythonOptionRow {
  /** As the user writes it: `num_frames`, `buffer_size`, `clip["dtype"]`. */
  keyword: string;
  /** Whose option it is: the loader's (each session's), or the server's own (`slots`). */
  scope: "loader" | "server";
  /** The option's path in TypeScript's spelling, in the loader's options or the server's. */
  path: string;
  /** What it accepts, in the words of every message ("an integer from 1 to 65536"). */
  accepts: string;
  /** The option's declaration as JSON (kind, range, default, doc; a group's options are rows of their own). */
  spec: Record<string, unknown>;
}

/**
 * Every option a Python user can set, one row per keyword (a group's options as `group["key"]`): what
 * `deno run -A src/serve/main.ts --options` prints, for the Python client's docs and tests.
 */
export function pythonOptionList(): PythonOptionRow[] {
  const rows = optionEntries(PYTHON_OPTIONS).filter(({ path, spec }) =>
    spec.kind !== "group" && settable(path)
  );
  return rows.map(({ path, spec }) => ({
    keyword: pythonName(PYTHON_OPTIONS, path),
    scope: path in PYTHON_SERVER_KEYS ? "server" : "loader",
    path: PYTHON_SERVER_KEYS[path as keyof typeof PYTHON_SERVER_KEYS] ?? path,
    accepts: describe(spec, PYTHON_WORDS),
    spec: JSON.parse(JSON.stringify(spec, (k, v) => (k === "options" ? undefined : v))),
  }));
}

/** Whether Python can set the option at `path`: neither it nor a group it sits in says `python: false`. */
function settable(path: string): boolean {
  let t: OptionTable | undefined = PYTHON_OPTIONS;
  for (const k of path.split(".")) {
    const spec: OptionSpec | undefined = t !== undefined && Object.hasOwn(t, k) ? t[k] : undefined;
    if (spec === undefined || spec.python === false) return false;
    t = groupOf(spec)?.options;
  }
  return true;
}
