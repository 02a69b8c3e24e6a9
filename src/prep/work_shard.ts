/**
 * Splitting preparation work across machines with no coordinator: shard `I` of `N` takes every `N`-th input,
 * starting at input `I` (inputs `i` with `i mod N = I`), so `N` independent runs cover every input exactly once.
 *
 * The shard comes from `--shard I/N`, or else from the scheduler's environment:
 *
 * | scheduler | index | count |
 * | --- | --- | --- |
 * | Slurm job array (`sbatch --array=0-N-1`) | `SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` | `SLURM_ARRAY_TASK_COUNT` |
 * | Kubernetes indexed Job (`completionMode: Indexed`) | `JOB_COMPLETION_INDEX` | `JOB_COMPLETIONS` (set it in the pod spec to `.spec.completions`: Kubernetes does not) |
 * | torchrun / torch.distributed | `RANK` | `WORLD_SIZE` |
 *
 * With none of these, the run is shard 0 of 1 (everything).
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";

/** Which part of the inputs this run takes. */
export interface WorkShard {
  /** This run's shard, from 0. */
  index: number;
  /** How many shards the work is split into. */
  count: number;
  /** Where it came from: "--shard", "slurm", "kubernetes", "torchrun" or "default". */
  from: string;
}

function intOf(v: string, what: string): number {
  if (!/^\d+$/.test(v.trim())) {
    throw new InvalidArgumentError(`${what} must be a non-negative integer, got "${v}"`);
  }
  return Number(v.trim());
}

function checked(index: number, count: number, from: string, what: string): WorkShard {
  if (count < 1) throw new InvalidArgumentError(`${what}: the shard count must be at least 1, got ${count}`);
  if (index >= count) {
    throw new InvalidArgumentError(`${what}: shard index ${index} is not below the count ${count}`);
  }
  return { index, count, from };
}

/**
 * Parses `I/N` (e.g. `0/4`).
 * @param spec the shard as written
 * @returns its index and count
 * @throws {InvalidArgumentError} when it does not read as `I/N` with `0 <= I < N`
 */
export function parseWorkShard(spec: string): WorkShard {
  const m = spec.trim().match(/^(\d+)\/(\d+)$/);
  if (!m) throw new InvalidArgumentError(`--shard must look like I/N (e.g. 0/4), got "${spec}"`);
  return checked(Number(m[1]), Number(m[2]), "--shard", `--shard ${spec}`);
}

/**
 * The shard of this run: `flag` when given, else the scheduler's variables in `env`: a Slurm job array
 * (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` of `SLURM_ARRAY_TASK_COUNT`), a Kubernetes indexed Job
 * (`JOB_COMPLETION_INDEX` of `JOB_COMPLETIONS`), torchrun (`RANK` of `WORLD_SIZE`); else shard 0 of 1.
 * @param flag `--shard I/N`, when given
 * @param env the environment (default this process's)
 * @returns the shard's index and count
 * @throws {InvalidArgumentError} for a flag that does not read as `I/N`, or a scheduler's variables that are
 *   incomplete or out of range
 */
export function resolveWorkShard(
  flag?: string,
  env: Record<string, string | undefined> = Deno.env.toObject(),
): WorkShard {
  if (flag !== undefined) return parseWorkShard(flag);
  const slurm = env.SLURM_ARRAY_TASK_ID;
  if (slurm !== undefined) {
    const count = env.SLURM_ARRAY_TASK_COUNT;
    if (count === undefined) {
      throw new InvalidArgumentError(
        "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shard I/N",
      );
    }
    const min = env.SLURM_ARRAY_TASK_MIN === undefined
      ? 0
      : intOf(env.SLURM_ARRAY_TASK_MIN, "SLURM_ARRAY_TASK_MIN");
    const id = intOf(slurm, "SLURM_ARRAY_TASK_ID");
    return checked(id - min, intOf(count, "SLURM_ARRAY_TASK_COUNT"), "slurm", "Slurm array task");
  }
  const k8s = env.JOB_COMPLETION_INDEX;
  if (k8s !== undefined) {
    const count = env.JOB_COMPLETIONS;
    if (count === undefined) {
      throw new InvalidArgumentError(
        "JOB_COMPLETION_INDEX is set but JOB_COMPLETIONS is not: set it in the pod spec to the Job's " +
          ".spec.completions (Kubernetes does not), or pass --shard I/N",
      );
    }
    return checked(
      intOf(k8s, "JOB_COMPLETION_INDEX"),
      intOf(count, "JOB_COMPLETIONS"),
      "kubernetes",
      "indexed Job",
    );
  }
  const rank = env.RANK;
  if (rank !== undefined && env.WORLD_SIZE !== undefined) {
    return checked(intOf(rank, "RANK"), intOf(env.WORLD_SIZE, "WORLD_SIZE"), "torchrun", "torchrun rank");
  }
  return { index: 0, count: 1, from: "default" };
}

/** The items of `all` that shard `s` takes (every `count`-th, from `index`). */
export function takeShard<T>(all: readonly T[], s: WorkShard): T[] {
  return all.filter((_, i) => i % s.count === s.index);
}

/** File-name tag of a shard's outputs: "" for 0/1, else `.shard-I-of-N`. */
export function shardTag(s: WorkShard): string {
  return s.count === 1 ? "" : `.shard-${s.index}-of-${s.count}`;
}
