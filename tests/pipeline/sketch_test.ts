import assert from "node:assert/strict";
import { LatencySketch } from "../../src/pipeline/sketch.ts";

Deno.test("sketch: percentiles within 5% of the exact values", () => {
  const s = new LatencySketch();
  const values: number[] = [];
  let seed = 42;
  for (let i = 0; i < 10_000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const v = 0.01 + (seed / 2 ** 31) * 50;
    values.push(v);
    s.record(v);
  }
  values.sort((a, b) => a - b);
  for (const q of [0.5, 0.9, 0.99]) {
    const exact = values[Math.ceil(q * values.length) - 1];
    assert.ok(Math.abs(s.quantile(q) - exact) / exact < 0.05, `q${q}: ${s.quantile(q)} vs ${exact}`);
  }
  assert.equal(s.count, 10_000);
});

Deno.test("sketch: empty, tiny and huge values, reset", () => {
  const s = new LatencySketch();
  assert.equal(s.quantile(0.5), 0);
  s.record(0);
  s.record(1e9);
  assert.equal(s.quantile(0.5), 0.001);
  assert.equal(s.quantile(1), 1e9);
  s.reset();
  assert.equal(s.count, 0);
  assert.equal(s.max, 0);
});
