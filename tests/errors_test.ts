import assert from "node:assert/strict";
import * as errors from "../src/errors.ts";
import {
  BackendExitedError,
  CudaError,
  errorText,
  FetchError,
  InvalidArgumentError,
  LibraryNotFoundError,
  MediaError,
  PipelineFailure,
  ProtocolError,
  SluiceError,
} from "../src/errors.ts";
import {
  deserializeError,
  isSerializedError,
  registerErrorClass,
  serializeError,
} from "../src/error_wire.ts";

/** Through JSON, as the backend's wire protocol carries it (structured clone keeps less than JSON does not). */
function roundTrip(e: unknown): Error {
  return deserializeError(JSON.parse(JSON.stringify(serializeError(e))));
}

Deno.test("errors: every SluiceError subclass in errors.ts keeps its class, name, message and stack", () => {
  const classes = Object.values(errors).filter((v): v is typeof SluiceError =>
    typeof v === "function" && (v === SluiceError || v.prototype instanceof SluiceError)
  );
  assert.ok(classes.length >= 15, `found ${classes.length} classes`);
  for (const cls of classes) {
    const e = Object.assign(Object.create(cls.prototype), { name: cls.name }) as Error;
    Object.defineProperty(e, "message", { value: `a ${cls.name}` });
    Object.defineProperty(e, "stack", {
      value: `${cls.name}: a ${cls.name}\n    at somewhere (file.ts:1:1)`,
    });
    const back = roundTrip(e);
    assert.ok(back instanceof cls, `${cls.name} came back as ${back.constructor.name}`);
    assert.equal(back.name, cls.name);
    assert.equal(back.message, `a ${cls.name}`);
    assert.equal(back.stack, e.stack);
  }
});

Deno.test("errors: own fields come back (MediaError, FetchError, ProtocolError, CudaError, BackendExitedError, …)", () => {
  const media = roundTrip(new MediaError("clip.mp4", "avformat_open_input", "Invalid data", -1094995529));
  assert.ok(media instanceof MediaError && media instanceof SluiceError && media instanceof Error);
  assert.equal(media.source, "clip.mp4");
  assert.equal(media.operation, "avformat_open_input");
  assert.equal(media.reason, "Invalid data");
  assert.equal(media.code, -1094995529);
  assert.equal(media.message, "clip.mp4: avformat_open_input failed: Invalid data");
  const noCode = roundTrip(new MediaError("x", "decode", "no frame"));
  assert.equal((noCode as MediaError).code, undefined);

  const fetch = roundTrip(new FetchError("http://h/v.mp4", 503, 3, "Service Unavailable")) as FetchError;
  assert.deepEqual([fetch.source, fetch.status, fetch.attempts], ["http://h/v.mp4", 503, 3]);
  assert.equal((roundTrip(new ProtocolError("bad magic", 12)) as ProtocolError).offset, 12);
  const cuda = roundTrip(
    new CudaError("cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"),
  ) as CudaError;
  assert.deepEqual([cuda.call, cuda.code, cuda.errorName], ["cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY"]);
  const lib = roundTrip(new LibraryNotFoundError("no avformat", ["/a.so", "/b.so"])) as LibraryNotFoundError;
  assert.deepEqual(lib.tried, ["/a.so", "/b.so"]);
  const exited = roundTrip(
    new BackendExitedError("child died", "file:///b.ts#f", {
      code: null,
      signal: "SIGKILL",
      stderrTail: ["x"],
    }),
  ) as BackendExitedError;
  assert.deepEqual([exited.backend, exited.code, exited.signal, exited.stderrTail], [
    "file:///b.ts#f",
    null,
    "SIGKILL",
    ["x"],
  ]);
});

Deno.test("errors: cause chains and nested errors (PipelineFailure.errors) keep their classes", () => {
  const root = new MediaError("a.mkv", "decode", "corrupt");
  const mid = new InvalidArgumentError("window out of range", { cause: root });
  const failure = new PipelineFailure("pipeline failed", [{ stage: "decode", tasksIn: 3, failed: 2 }], [
    { stage: "decode", item: "a.mkv", error: mid },
  ], { cause: mid });
  const back = roundTrip(failure) as PipelineFailure;
  assert.ok(back instanceof PipelineFailure);
  assert.deepEqual(back.counts, [{ stage: "decode", tasksIn: 3, failed: 2 }]);
  assert.ok(back.cause instanceof InvalidArgumentError);
  assert.ok((back.cause as Error).cause instanceof MediaError);
  assert.equal(((back.cause as Error).cause as MediaError).source, "a.mkv");
  assert.ok(back.errors[0].error instanceof InvalidArgumentError);
  assert.equal(back.errors[0].item, "a.mkv");
});

Deno.test("errors: built-in, DOM and unknown errors, and thrown non-errors", () => {
  const t = roundTrip(new TypeError("not a function"));
  assert.ok(t instanceof TypeError);
  assert.equal(t.message, "not a function");
  const r = roundTrip(new RangeError("Invalid typed array length"));
  assert.ok(r instanceof RangeError);
  const abort = roundTrip(new DOMException("stopped", "AbortError"));
  assert.ok(abort instanceof DOMException);
  assert.equal(abort.name, "AbortError");
  class Custom extends Error {
    extra = 7;
    constructor() {
      super("custom");
      this.name = "CustomError";
    }
  }
  const c = roundTrip(new Custom());
  assert.equal(c.name, "CustomError");
  assert.equal((c as unknown as { extra: number }).extra, 7);
  const s = roundTrip("just a string");
  assert.ok(s instanceof Error);
  assert.equal(s.message, "just a string");
  const agg = roundTrip(new AggregateError([new MediaError("a", "b", "c")], "several")) as AggregateError;
  assert.ok(agg instanceof AggregateError && agg.errors[0] instanceof MediaError);
});

Deno.test("errors: a class registered by another module comes back as itself", () => {
  class ShardError extends SluiceError {
    readonly shard: number;
    constructor(message: string, shard: number) {
      super(message);
      this.shard = shard;
    }
  }
  assert.ok(
    !(roundTrip(new ShardError("bad shard", 4)) instanceof ShardError),
    "unregistered: a plain Error",
  );
  registerErrorClass(ShardError);
  const back = roundTrip(new ShardError("bad shard", 4));
  assert.ok(back instanceof ShardError);
  assert.equal(back.shard, 4);
});

Deno.test("errors: values that JSON cannot carry are made safe", () => {
  const e = new SluiceError("odd fields") as SluiceError & Record<string, unknown>;
  e.big = 10n;
  e.nan = NaN;
  e.fn = () => 1;
  e.deep = { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: 1 } } } } } } } } } };
  const s = serializeError(e);
  assert.doesNotThrow(() => JSON.stringify(s));
  const back = roundTrip(e) as SluiceError & Record<string, unknown>;
  assert.equal(back.big, "10");
  assert.equal(back.nan, "NaN");
  assert.equal(back.fn, undefined);
});

Deno.test("errorText: one line, the error's class, the subject named once", () => {
  const e = new MediaError("/data/a.mp4", "demux window", "no keyframe found at or before 0.4 s in stream 0");
  assert.equal(
    errorText(e),
    "MediaError: /data/a.mp4: demux window failed: no keyframe found at or before 0.4 s in stream 0",
  );
  // The caller prints the file in front: the message's copy is left out.
  assert.equal(
    errorText(e, "/data/a.mp4"),
    "MediaError: demux window failed: no keyframe found at or before 0.4 s in stream 0",
  );
  assert.equal(errorText(e, "/data/b.mp4"), errorText(e), "another subject leaves the message alone");
  assert.equal(errorText(e, "/data"), errorText(e), "only a whole leading subject is left out");
  const multi = new LibraryNotFoundError(
    "FFmpeg: not found in /x.\nTried:\n  /x/a.so\n  /x/b.so\nInstall them",
    [],
  );
  assert.equal(
    errorText(multi),
    "LibraryNotFoundError: FFmpeg: not found in /x.; Tried:; /x/a.so; /x/b.so; Install them",
  );
  assert.equal(errorText("/f.mp4: plain string", "/f.mp4"), "plain string");
  assert.equal(errorText(42), "42");
});

Deno.test("errors: isSerializedError accepts what serializeError writes and nothing else", () => {
  const deep = new FetchError("https://x/a.mp4", 503, 3, "HTTP 503", {
    cause: new MediaError("/a.mp4", "open", "gone", -2, { cause: new TypeError("inner") }),
  });
  for (const e of [deep, new RangeError("r"), new AggregateError([new Error("a")], "agg"), "text", 7]) {
    assert.ok(isSerializedError(JSON.parse(JSON.stringify(serializeError(e)))), String(e));
  }
  const ok = { name: "MediaError", message: "m" };
  const bad: unknown[] = [
    null,
    [],
    "MediaError",
    { name: "MediaError" },
    { message: "m" },
    { ...ok, stack: 1 },
    { ...ok, extra: true },
    { ...ok, fields: [] },
    { ...ok, fields: { f: () => 1 } },
    { ...ok, fields: { n: Infinity } },
    { ...ok, cause: { $error: { name: "E" } } },
    { ...ok, fields: { list: [{ $error: { name: 3, message: "m" } }] } },
  ];
  for (const b of bad) assert.ok(!isSerializedError(b), JSON.stringify(b) ?? String(b));
});

Deno.test("errors: a field named __proto__ (as JSON.parse makes it) stays a field; the class holds", () => {
  const s = JSON.parse(
    '{"name":"MediaError","message":"m","fields":{"__proto__":{"polluted":true},"source":{"__proto__":1}}}',
  );
  assert.ok(isSerializedError(s));
  const e = deserializeError(s) as MediaError & Record<string, unknown>;
  assert.ok(e instanceof MediaError);
  assert.equal(Object.getPrototypeOf(e), MediaError.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(e, "__proto__")?.value, { polluted: true });
  const source = e.source as unknown as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(source), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(source, "__proto__")?.value, 1);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("fmtSec: seconds in a message, to the millisecond", () => {
  assert.deepEqual([0.40020886589772997, 4, 1 / 3, 29.97002997002997, 1e-4].map(errors.fmtSec), [
    "0.4",
    "4",
    "0.333",
    "29.97",
    "0",
  ]);
});
