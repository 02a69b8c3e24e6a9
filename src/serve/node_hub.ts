/**
 * `NodeHub`: what a node server's ranks share (`sluice serve --node`, `sluice.Loader(..., node=True)`): one
 * server for every rank of a machine instead of one per rank, each rank still getting exactly the batches its
 * own server would give it.
 *
 * - One plan: the dataset is opened and indexed once, at start (not once per rank).
 * - One pool of decode Workers sized by the node's CPU budget (`cpuBudget`, default the cores less one per local
 *   rank: the trainers keep theirs; {@link defaultCpuBudget}), with one set of FFmpeg thread tokens. Every rank's
 *   loader (a "lane": its own sampler and shard, epoch order, batch slots, credit, stats) runs its demux and
 *   decode tasks there through a {@link PoolLease}: the pool's queue is first come, first served over every
 *   rank's tasks, each rank's stages having at most its own concurrency queued, so a rank running alone gets the
 *   whole budget and ranks running together share it. A rank whose trainer stalls stops asking (its credit is
 *   spent), so it holds no Worker and never slows the others; one that leaves (or is killed) ends its lane: its
 *   calls leave the queue, its slots are freed, the others carry on.
 * - One set of fetch and demux tasks per file across ranks, and one decode pass for clips of several ranks whose
 *   packets overlap (`src/loader/front/lane_share.ts`): what the sampler deals to different ranks is opened once.
 * - NVDEC: each rank decodes on its own GPU (its `device`, `LOCAL_RANK` by default) with that GPU's engines as
 *   its decode concurrency, and its batches are in that GPU's IPC slots; the pool grows by those engines (a Worker
 *   waiting on the GPU uses no core).
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { type LoaderPlan, openLoader, planLoader } from "../loader/loader.ts";
import { CLIP_WORKER } from "../loader/front/front.ts";
import { ThreadBudget } from "../loader/decode/decode_threads.ts";
import { decodeDevice } from "../loader/decode/devices.ts";
import { LaneShares } from "../loader/front/lane_share.ts";
import type { ResolvedLoaderOptions } from "../loader/loader_options.ts";
import { ClipSampler } from "../dataset/sampler.ts";
import { PoolLease } from "../pipeline/pool_lease.ts";
import { WorkerPool } from "../pipeline/worker_pool.ts";
import { BufferPool } from "../memory/buffer_pool.ts";
import { fixMmapThreshold } from "../memory/mmap_threshold.ts";
import { sessionOptions } from "./options.ts";
import type { LoaderFactory, LoaderRequest } from "./session_host.ts";
import type { NodeStats } from "./node_stats.ts";

/** The node's default CPU budget: the cores less one per local rank (`localRanks`), at least one. */
export function defaultCpuBudget(
  cores: number = navigator.hardwareConcurrency ?? 1,
  localRanks: number = localWorldSize(),
): number {
  return Math.max(1, cores - localRanks);
}

/** `LOCAL_WORLD_SIZE` (set by torchrun), else 1. */
export function localWorldSize(): number {
  let v: string | undefined;
  try {
    v = Deno.env.get("LOCAL_WORLD_SIZE");
  } catch {
    return 1;
  }
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 1 ? n : 1;
}

/** Options of {@link NodeHub.open}. */
export interface NodeHubOptions {
  /** Decode Workers of the node (default {@link defaultCpuBudget}). */
  cpuBudget?: number;
  /** Batch slots of each rank's loader. */
  slots: number;
  /** Where the loaders log. */
  log?: (line: string) => void;
}

/** A node server's shared plan, pool and shares; see the module docs. */
export class NodeHub implements AsyncDisposable {
  /** Decode Workers the node's CPU budget allows. */
  readonly cpuBudget: number;
  readonly #plan: LoaderPlan;
  readonly #options: ResolvedLoaderOptions;
  readonly #opts: NodeHubOptions;
  readonly #pool: WorkerPool;
  readonly #budget: ThreadBudget;
  readonly #shares: LaneShares;
  readonly #stop = new AbortController();
  /** NVDEC concurrency of each NVDEC lane alive (the pool grows by their sum). */
  readonly #gpuLanes = new Map<object, number>();
  #ranks = 0;

  private constructor(
    plan: LoaderPlan,
    options: ResolvedLoaderOptions,
    opts: NodeHubOptions,
    budget: number,
  ) {
    this.#plan = plan;
    this.#options = options;
    this.#opts = opts;
    this.cpuBudget = budget;
    this.#pool = new WorkerPool(CLIP_WORKER, { size: budget });
    this.#budget = new ThreadBudget(budget);
    const spec = plan.spec;
    const clipBytes = spec.numFrames * 3 * spec.width * spec.height * (spec.dtype === "float32" ? 4 : 1);
    const dl = options.decodeLess;
    this.#shares = new LaneShares({
      pool: this.#pool,
      budget: dl.threads ? this.#budget : null,
      buffers: new BufferPool(clipBytes, 2 * budget),
      signal: this.#stop.signal,
      skipUnshown: dl.skip,
    });
  }

  /**
   * Opens and indexes the dataset once and starts the node's pool (no Worker runs until a rank asks). `options`
   * were resolved at the server's door (`resolveServerConfig`: a node plans as rank 0 of 1, and refuses the
   * subprocess backend). Throws what `planLoader` throws (`DatasetError`, `InvalidArgumentError`).
   */
  static async open(options: ResolvedLoaderOptions, opts: NodeHubOptions): Promise<NodeHub> {
    const budget = opts.cpuBudget ?? defaultCpuBudget();
    // The node's own plan: every rank derives its shard from it.
    const plan = await planLoader({ ...options, log: opts.log ?? options.log });
    fixMmapThreshold();
    return new NodeHub(plan, options, opts, budget);
  }

  /** Builds a rank's loader (a lane) with its shard, first epoch and device; the session closes it. */
  readonly factory: LoaderFactory = async (req: LoaderRequest) => {
    if (this.#stop.signal.aborted) throw new InvalidArgumentError("serve: the node server is closing");
    const o = sessionOptions(this.#options, req, this.#opts.slots, this.#opts.log);
    const plan = lanePlan(this.#plan, o.sampler.rank, o.sampler.worldSize, req.firstEpoch);
    const lane = this.#shares.lane(plan.front.shareHorizon ?? 0);
    const lease = new PoolLease(this.#pool);
    const loader = await openLoader(o, { plan, pool: lease, budget: this.#budget, lane });
    this.#ranks++;
    if (loader.decoder === "nvdec") {
      this.#gpuLanes.set(
        loader,
        o.concurrency.decode === null || o.concurrency.decode === "auto"
          ? decodeDevice("nvdec").defaultConcurrency(plan.spec.device ?? 0)
          : o.concurrency.decode,
      );
      this.#resize();
    }
    // The session closes its loader: the lane is gone then.
    const close = loader.close.bind(loader);
    let closed = false;
    loader.close = async () => {
      await close();
      if (closed) return;
      closed = true;
      this.#ranks--;
      if (this.#gpuLanes.delete(loader)) this.#resize();
    };
    return loader;
  };

  /** Current counters. */
  stats(): NodeStats {
    return {
      cpuBudget: this.cpuBudget,
      poolSize: this.#pool.size,
      workers: this.#pool.workers,
      ranks: this.#ranks,
      shares: this.#shares.stats(),
    };
  }

  /** Stops the pool (after every rank's loader closed). Idempotent. */
  async close(): Promise<void> {
    this.#stop.abort(new DOMException("the node server closed", "AbortError"));
    await this.#pool.close();
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #resize(): void {
    let gpu = 0;
    for (const n of this.#gpuLanes.values()) gpu += n;
    this.#pool.resize(Math.max(this.cpuBudget, gpu));
  }
}

/** The node's plan for one rank: its own sampler (shard) and first epoch, its own copies of what a loader sets. */
function lanePlan(base: LoaderPlan, rank: number, worldSize: number, firstEpoch: number): LoaderPlan {
  const sampler = ClipSampler.fromResolved(base.front.ranges, { ...base.sampler.options, rank, worldSize });
  const spec = { ...base.spec };
  return {
    ...base,
    sampler,
    spec,
    front: { ...base.front, spec, sampler: { ...sampler.options }, firstEpoch },
  };
}
