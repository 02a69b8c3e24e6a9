import assert from "node:assert/strict";
import { parseWorkShard, resolveWorkShard, shardTag, takeShard } from "../../src/prep/work_shard.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

Deno.test("--shard I/N wins over the environment", () => {
  assert.deepEqual(resolveWorkShard("1/3", { RANK: "0", WORLD_SIZE: "2" }), {
    index: 1,
    count: 3,
    from: "--shard",
  });
});

Deno.test("Slurm array: index from SLURM_ARRAY_TASK_ID minus SLURM_ARRAY_TASK_MIN, count SLURM_ARRAY_TASK_COUNT", () => {
  const env = {
    SLURM_ARRAY_TASK_ID: "5",
    SLURM_ARRAY_TASK_MIN: "1",
    SLURM_ARRAY_TASK_COUNT: "8",
    RANK: "0",
    WORLD_SIZE: "2",
  };
  assert.deepEqual(resolveWorkShard(undefined, env), { index: 4, count: 8, from: "slurm" });
  assert.deepEqual(resolveWorkShard(undefined, { SLURM_ARRAY_TASK_ID: "3", SLURM_ARRAY_TASK_COUNT: "4" }), {
    index: 3,
    count: 4,
    from: "slurm",
  });
  assert.throws(() => resolveWorkShard(undefined, { SLURM_ARRAY_TASK_ID: "3" }), /SLURM_ARRAY_TASK_COUNT/);
});

Deno.test("Kubernetes indexed Job: JOB_COMPLETION_INDEX with JOB_COMPLETIONS, which must be set", () => {
  assert.deepEqual(resolveWorkShard(undefined, { JOB_COMPLETION_INDEX: "2", JOB_COMPLETIONS: "3" }), {
    index: 2,
    count: 3,
    from: "kubernetes",
  });
  assert.throws(() => resolveWorkShard(undefined, { JOB_COMPLETION_INDEX: "2" }), /JOB_COMPLETIONS/);
});

Deno.test("torchrun: RANK and WORLD_SIZE; nothing set: everything", () => {
  assert.deepEqual(resolveWorkShard(undefined, { RANK: "1", WORLD_SIZE: "2" }), {
    index: 1,
    count: 2,
    from: "torchrun",
  });
  assert.deepEqual(resolveWorkShard(undefined, {}), { index: 0, count: 1, from: "default" });
});

Deno.test("malformed or out-of-range shards are refused", () => {
  for (const bad of ["2/2", "1", "a/b", "-1/2", "0/0"]) {
    assert.throws(() => parseWorkShard(bad), InvalidArgumentError, bad);
  }
  assert.throws(() => resolveWorkShard(undefined, { RANK: "x", WORLD_SIZE: "2" }), InvalidArgumentError);
});

Deno.test("every N-th item: the shards of N partition the inputs", () => {
  const items = Array.from({ length: 11 }, (_, i) => i);
  const parts = [0, 1, 2].map((index) => takeShard(items, { index, count: 3, from: "t" }));
  assert.deepEqual(parts, [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]);
  assert.deepEqual(parts.flat().sort((a, b) => a - b), items);
  assert.equal(shardTag({ index: 2, count: 3, from: "t" }), ".shard-2-of-3");
  assert.equal(shardTag({ index: 0, count: 1, from: "t" }), "");
});
