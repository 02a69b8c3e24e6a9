/**
 * The batch server's options, declared once ({@link SERVER_OPTIONS}: `sluice serve`'s `--socket` and `--slots`,
 * the Python client's `slots`), and the one place a server's config is checked ({@link resolveServerConfig}):
 * a config in TypeScript's spelling (`{socket, slots, loader: LoaderOptions}`), or the keywords a Python
 * client's user passed, as given (`{socket, python: {batch_size, clip: {...}, ...}}`): the server reads them
 * against the loader's table and answers errors that name the keywords the user wrote.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import {
  absent,
  checkOption,
  checkOptions,
  describe,
  groupOf,
  isPlainObject,
  optionEntries,
  type OptionSpec,
  type OptionTable,
  tsVocabulary,
  type Vocabulary,
  withDefaults,
} from "../options.ts";
import { fromPython, PYTHON_WORDS, pythonName } from "../python_options.ts";
import { checkLoaderOptions, LOADER_OPTIONS, type LoaderOptions } from "../loader/loader_options.ts";

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

/** What `sluice.Loader(...)` sends: its user's keywords, as given, and the client's own keywords. */
const PYTHON_CONFIG = {
  ...SERVER_TABLE,
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

/** A config in TypeScript's spelling. */
const TS_CONFIG = {
  ...SERVER_TABLE,
  loader: {
    kind: "group",
    options: LOADER_OPTIONS,
    required: true,
    doc: "the options of each session's loader",
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
  /** The options of each session's loader. */
  loader: ServedLoaderOptions;
  /**
   * How the loader's errors name its options: as the config's writer spelled them (`loader.maxFailures`; a Python
   * client's `max_failures`), at run time as when the config was checked.
   */
  vocabulary: Vocabulary;
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

/**
 * Checks a server's config once, before it listens, and applies the defaults: `config` is TypeScript's
 * (`loader`) or a Python client's (`python`, the user's keywords as given). Throws `InvalidArgumentError` naming
 * the option as its writer spelled it (`loader.clip.numFrames`; `num_frames`, `clip["num_frames"]`), with the
 * closest valid name for one nobody declared. With no decode concurrency given and several ranks on this
 * machine (`LOCAL_WORLD_SIZE`, set by torchrun), each server decodes with its share of the cores.
 */
export function resolveServerConfig(config: unknown): ResolvedServerConfig {
  if (!isPlainObject(config)) {
    throw new InvalidArgumentError(`serve: the config must be an object, got ${JSON.stringify(config)}`);
  }
  let loader: ServedLoaderOptions;
  let vocabulary: Vocabulary;
  const server: Record<string, unknown> = { ...config };
  /** Names a server option as the config's writer spelled it. */
  let serverName = (key: string) => key;
  if (config.python !== undefined) {
    checkOptions(PYTHON_CONFIG, config, tsVocabulary("serve: "));
    const py = fromPython(
      PYTHON_OPTIONS,
      config.python as Record<string, unknown>,
      "sluice.Loader: ",
      (config.clientKeywords as string[] | undefined) ?? [],
    );
    const rest: Record<string, unknown> = { ...py.options };
    for (const [path, key] of Object.entries(PYTHON_SERVER_KEYS)) {
      const v = rest[path];
      delete rest[path];
      if (absent(v)) continue;
      checkOption(SERVER_TABLE[key], v, py.vocabulary, path);
      server[key] = v;
    }
    loader = rest as unknown as ServedLoaderOptions;
    vocabulary = py.vocabulary;
    serverName = (key) => py.vocabulary.name(`server${key[0].toUpperCase()}${key.slice(1)}`);
  } else {
    const ts: Vocabulary = tsVocabulary("serve: ");
    checkOptions(TS_CONFIG, config, ts);
    loader = config.loader as ServedLoaderOptions;
    vocabulary = { ...ts, name: (path) => `loader.${path}` };
  }
  checkLoaderOptions(loader as LoaderOptions, vocabulary);
  const node = server.node === true;
  if (server.cpuBudget !== undefined && !node) {
    throw new InvalidArgumentError(
      `${vocabulary.prefix}${
        serverName("cpuBudget")
      } is the budget of a node server, shared by every rank of ` +
        "this machine: ask for one (sluice.Loader(..., node=True), sluice serve --node)",
    );
  }
  const metrics = server.metrics === undefined
    ? undefined
    : parseHostPort(server.metrics as string, `${vocabulary.prefix}${serverName("metrics")}`);
  const local = Number(Deno.env.get("LOCAL_WORLD_SIZE") ?? "1");
  // Ranks' own servers split the cores; a node server's ranks share its budget instead.
  if (!node && loader.concurrency?.decode === undefined && Number.isSafeInteger(local) && local > 1) {
    const cores = navigator.hardwareConcurrency ?? 1;
    loader = {
      ...loader,
      concurrency: { ...loader.concurrency, decode: Math.max(1, Math.floor(cores / local)) },
    };
  }
  const d = withDefaults(SERVER_TABLE, server);
  return {
    socket: d.socket as string,
    slots: d.slots as number,
    loader,
    vocabulary,
    exitOnStdinEof: d.exitOnStdinEof as boolean,
    ...(typeof d.removeDir === "string" ? { removeDir: d.removeDir } : {}),
    logConnections: d.logConnections as boolean,
    node,
    ...(typeof server.cpuBudget === "number" ? { cpuBudget: server.cpuBudget } : {}),
    ...(metrics ? { metrics } : {}),
    lingerMs: d.lingerMs as number,
    firstClientMs: d.firstClientMs as number,
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
