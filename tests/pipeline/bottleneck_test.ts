import assert from "node:assert/strict";
import {
  BOTTLENECK_MIN_SCORE,
  bottleneckIndex,
  type Load,
  loadScore,
} from "../../src/pipeline/bottleneck.ts";

Deno.test("bottleneck: the loader on local files names decode, not the cheap source before an empty fetch queue", () => {
  // Figures as `sluice load` showed them (issue 15): decode 86–97% busy with its input queue 81–91% full; the
  // fetch queue always empty; the source (sample) does next to nothing.
  const loads: Load[] = [
    { busy: 0.002, blocked: 0.9, inputFill: 1 }, // sample (source): blocked on fetch.in most of the time
    { busy: 0.03, blocked: 0.7, inputFill: 0.0 }, // fetch
    { busy: 0.55, blocked: 0.35, inputFill: 0.05 }, // demux
    { busy: 0.9, blocked: 0.02, inputFill: 0.86 }, // decode
    { busy: 0.08, blocked: 0, inputFill: 0.04 }, // collate
    { busy: 0.05, blocked: 0, inputFill: 0.02 }, // consumer
  ];
  assert.equal(bottleneckIndex(loads), 3);
});

Deno.test("bottleneck: a busy stage that waits on its downstream is not the limit; ties go to the fuller input", () => {
  const upstream: Load = { busy: 0.84, blocked: 0.2, inputFill: 0.6 };
  const limit: Load = { busy: 0.84, blocked: 0, inputFill: 0.5 };
  assert.equal(bottleneckIndex([upstream, limit]), 1);
  const a: Load = { busy: 0.9, blocked: 0, inputFill: 0.2 };
  const b: Load = { busy: 0.9, blocked: 0, inputFill: 0.9 };
  assert.equal(bottleneckIndex([a, b]), 1);
});

Deno.test("bottleneck: none stands out when every stage mostly waits", () => {
  const idle: Load[] = [{ busy: 0.1, blocked: 0, inputFill: 1 }, { busy: 0.3, blocked: 0, inputFill: 0.1 }];
  assert.equal(bottleneckIndex(idle), -1);
  assert.ok(loadScore({ busy: 1, blocked: 0, inputFill: 0 }) >= BOTTLENECK_MIN_SCORE);
  assert.equal(loadScore({ busy: 1.4, blocked: -1, inputFill: 3 }), 1, "inputs are clamped to 0..1");
});
