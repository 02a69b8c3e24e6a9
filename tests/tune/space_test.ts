import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  checkSpace,
  choice,
  configKey,
  int,
  paramLabel,
  stageParams,
  startConfig,
} from "../../src/tune/space.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

const space = {
  demuxConcurrency: int(1, 16, { stage: "demux" }),
  subclipSec: choice([0.5, 1, 2], { default: 1 }),
  bufferSize: int(1, 8),
  backend: choice(["inprocess", "subprocess"]),
};

Deno.test("int and choice describe themselves as JSON and refuse bad ranges, values and defaults", () => {
  assertEquals(JSON.parse(JSON.stringify(space.demuxConcurrency)), {
    kind: "int",
    min: 1,
    max: 16,
    stage: "demux",
  });
  assertEquals(space.subclipSec, { kind: "choice", values: [0.5, 1, 2], default: 1 });
  assert.throws(() => int(4, 2), InvalidArgumentError);
  assert.throws(() => int(1.5, 2), /need integers/);
  assert.throws(() => int(1, 4, { default: 5 }), /must be an integer from 1 to 4, got 5/);
  assert.throws(() => choice([]), /at least one value/);
  assert.throws(() => choice([1, 1]), /values repeat/);
  assert.throws(() => choice([NaN]), /not a finite number/);
  assert.throws(() => choice(["a"], { default: "b" as "a" }), /must be one of \["a"\], got "b"/);
});

Deno.test("startConfig: start values, then defaults, then an int's min and a choice's first", () => {
  assertEquals(startConfig(space, { demuxConcurrency: 8 }), {
    demuxConcurrency: 8,
    subclipSec: 1,
    bufferSize: 1,
    backend: "inprocess",
  });
  assert.throws(
    () => startConfig(space, { demuxConcurrency: 17 }),
    /start\.demuxConcurrency must be an integer from 1 to 16/,
  );
  assert.throws(() => startConfig(space, { nope: 1 }), /"nope" is not a parameter/);
});

Deno.test("checkSpace names the bad parameter; keys, labels and stage parameters", () => {
  assert.throws(() => checkSpace({}), /at least one parameter/);
  assert.throws(() => checkSpace({ a: { kind: "int", min: 3, max: 1 } }), /parameter "a": int\(3, 1\)/);
  assert.throws(() => checkSpace({ b: { kind: "float" } }), /parameter "b": not an int\(\) or choice\(\)/);
  const c = startConfig(space, {});
  assertEquals(configKey(space, c), "demuxConcurrency=1,subclipSec=1,bufferSize=1,backend=inprocess");
  assertEquals(paramLabel("demuxConcurrency", space.demuxConcurrency), "demux concurrency");
  assertEquals(paramLabel("bufferSize", space.bufferSize), "buffer size");
  assertEquals(paramLabel("x", int(1, 2, { label: "workers" })), "workers");
  assertEquals(stageParams(space).map((p) => p.name), ["demuxConcurrency"]);
});
