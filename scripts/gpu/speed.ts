/**
 * The speed phases: `speed-decoders` (frames/s and NVML decoder utilisation for 1, 2, 4, 7 and 14 decode
 * threads on the large and the small clip), `speed-cache` (a decode that creates its decoder, one that reuses it
 * for the same format, one that reconfigures it for another size), `speed-loader` (clips/s and CPU per clip of
 * the loader decoding with NVDEC against the same loader decoding on the CPU, on this machine's cores).
 * Figures are reported, never judged against a speed: a check fails only when the measurement could not run.
 * @module
 */
import { releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { decodeVideoNvdec } from "../../src/nvdec/decoder.ts";
import { decoderCacheStats } from "../../src/nvdec/decoder_cache.ts";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { clipFor, DATASET, nvdecMissing, setting } from "./kit.ts";
import { packetsOf } from "./compare.ts";
import { DecodeThreads } from "./pool.ts";
import { DecoderUtilization } from "./nvml.ts";
import { median, pass, type PhaseResult, round, skip } from "./result.ts";

/** Decode-thread counts measured (`GPU_DECODER_COUNTS`, comma-separated, overrides). */
function decoderCounts(): number[] {
  const env = Deno.env.get("GPU_DECODER_COUNTS");
  return env ? env.split(",").map(Number) : [1, 2, 4, 7, 14];
}

/** The speed-decoders phase. */
export async function speedDecoders(r: PhaseResult): Promise<void> {
  const missing = nvdecMissing();
  const counts = decoderCounts();
  const seconds = setting("GPU_SPEED_SECONDS", 2.5);
  const nvml = missing ? null : DecoderUtilization.open();
  if (typeof nvml === "string") r.info("nvml", `decoder utilisation not read: ${nvml}`);
  const threads = missing ? null : new DecodeThreads(Math.max(...counts));
  try {
    // Both clips at each count before the next count: a phase stopped at its limit has both sizes' first rows.
    const clips = ["speed-large", "speed-small"].map((role) => {
      const clip = clipFor(role);
      const title = `${clip.codec} ${clip.size} → planar RGB at its size, every frame (${seconds} s per row)`;
      // ready: threads whose output buffer for this clip is made (each thread's decoder is reconfigured between
      // the two clips: a few ms in its first timed decode)
      return { clip, title, ready: 0, rows: [] as (string | number | null)[][] };
    });
    for (const n of counts) {
      for (const c of clips) {
        const { clip, title, rows } = c;
        await r.check(`${clip.codec} ${clip.size}, ${n} decoder${n > 1 ? "s" : ""}`, async () => {
          if (!threads) return skip(missing!);
          // The threads this row adds first decode the clip once, untimed: a row that times out keeps the rows
          // before it, and no row pays for a decoder's creation.
          const w0 = performance.now();
          await Promise.all(
            [...Array(Math.max(0, n - c.ready)).keys()].map((k) =>
              threads.ask(c.ready + k, { op: "speed", file: clip.path, startAt: 0, seconds: 0 })
            ),
          );
          const warmupMs = round(performance.now() - w0);
          c.ready = Math.max(c.ready, n);
          const startAt = Date.now() + 50;
          const stop = typeof nvml === "object" && nvml ? nvml.poll(100) : null;
          const replies = await Promise.all(
            [...Array(n).keys()].map((i) =>
              threads.ask(i, { op: "speed", file: clip.path, startAt, seconds })
            ),
          );
          const util = stop?.() ?? null;
          const frames = replies.reduce((a, x) => a + x.frames, 0);
          const span = Math.max(...replies.map((x) => x.seconds));
          const fps = frames / span;
          rows.push([
            n,
            Math.round(fps),
            Math.round(fps / n),
            util?.meanPercent ?? null,
            util?.maxPercent ?? null,
          ]);
          // Rewritten after every row (the report keeps the last table of a title).
          r.table({
            title,
            columns: ["decoders", "frames/s", "per decoder", "NVDEC % (mean)", "NVDEC % (max)"],
            rows,
          });
          return pass({
            framesPerSecond: Math.round(fps),
            perDecoder: Math.round(fps / n),
            frames,
            seconds: round(span, 2),
            decodes: replies.reduce((a, x) => a + x.decodes, 0),
            nvdecUtilization: util,
            warmupMs,
          });
        });
      }
    }
  } finally {
    await threads?.close();
    if (typeof nvml === "object" && nvml) nvml.close();
  }
}

/** The speed-cache phase. */
export async function speedCache(r: PhaseResult): Promise<void> {
  const missing = nvdecMissing();
  const rounds = setting("GPU_CACHE_ROUNDS", 5);
  await r.check("decoder create vs reuse vs reconfigure", async () => {
    if (missing) return skip(missing);
    const large = clipFor("speed-large"), small = clipFor("speed-small");
    // One frame each: the call's cost is the decoder's set-up, the parser's and one picture.
    const one = { numFrames: 1 } as const;
    const pl = await packetsOf(large.path, [0, 0.5]), ps = await packetsOf(small.path, [0, 0.5]);
    const times = { create: [] as number[], reuse: [] as number[], reconfigure: [] as number[] };
    const counted = { created: 0, reconfigured: 0 };
    const timed = async (p: typeof pl, kind: keyof typeof times, expect: "created" | "reconfigured") => {
      const before = decoderCacheStats();
      const t0 = performance.now();
      using f = await decodeVideoNvdec(p, { ...one, pixelFormat: "nv12" });
      times[kind].push(performance.now() - t0);
      const after = decoderCacheStats();
      counted[expect] += after[expect] - before[expect];
      void f;
    };
    for (let i = 0; i < rounds; i++) {
      releaseDecoderNvdec();
      await timed(pl, "create", "created");
      await timed(pl, "reuse", "reconfigured");
      await timed(ps, "reconfigure", "reconfigured");
      await timed(pl, "reconfigure", "reconfigured");
    }
    releaseDecoderNvdec();
    const ms = (xs: number[]) => round(median(xs), 2);
    return pass({
      createMs: ms(times.create),
      reuseSameFormatMs: ms(times.reuse),
      reconfigureOtherSizeMs: ms(times.reconfigure),
      rounds,
      decodersCreated: counted.created,
      reconfigures: counted.reconfigured,
      files: [large.file, small.file],
    });
  });
}

/** CPU seconds this process used so far (user + system, every thread), from /proc. */
function cpuSeconds(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime (fields 14, 15) in clock ticks
}

/**
 * Clips/s of one loader over a time box, counted after its first batch; epochs follow one another until the box
 * is full (the loader is left mid-epoch then, as a training loop with a step limit leaves it).
 */
async function loaderRate(opts: LoaderOptions, seconds: number) {
  await using loader = await videoClassificationLoader({ log: () => {}, ...opts });
  let clips = 0, t0 = 0, cpu0 = 0, batches = 0, epochs = 0;
  const start = performance.now();
  const full = () => batches > 1 && performance.now() - t0 > seconds * 1000;
  while (!full()) {
    epochs++;
    for await (using b of loader) {
      if (batches++ === 0) {
        t0 = performance.now();
        cpu0 = cpuSeconds();
        continue;
      }
      clips += b.clips.length;
      if (full()) break;
    }
  }
  const wall = (performance.now() - t0) / 1000, cpu = cpuSeconds() - cpu0;
  return {
    clipsPerSecond: round(clips / wall, 1),
    cpuMsPerClip: round((1000 * cpu) / Math.max(1, clips), 2),
    coresBusy: round(cpu / wall, 2),
    clips,
    epochs,
    firstBatchSec: round((t0 - start) / 1000, 2),
    bottleneck: loader.stats().pipeline.bottleneck ?? null,
  };
}

/**
 * The speed-loader phase: two workloads — many clips per video (the CPU decodes a video once for the clips
 * that overlap; NVDEC decodes each clip on its own) and few, spread out (little to share) — each decoded on
 * the CPU (every core) and with NVDEC (device batches), on the same plan.
 */
export async function speedLoader(r: PhaseResult): Promise<void> {
  const missing = nvdecMissing();
  const seconds = setting("GPU_LOADER_SECONDS", 8);
  const cores = navigator.hardwareConcurrency;
  const workloads = {
    "64 clips per video": { seed: 1, clipsPerVideo: 64 },
    "4 clips per video, spread": { seed: 1, clipsPerVideo: 4, placement: "uniform" as const },
  };
  for (const [what, sampler] of Object.entries(workloads)) {
    const opts: LoaderOptions = {
      dataset: DATASET,
      batchSize: 8,
      clip: { numFrames: 16, width: 112, height: 112 },
      sampler,
      concurrency: { demux: 4 },
    };
    const cpu = await r.check(`loader, ${what}, CPU decode (${cores} cores)`, async () => {
      return pass({ ...await loaderRate({ ...opts, decode: "cpu" }, seconds), cores });
    });
    await r.check(`loader, ${what}, NVDEC decode (device batches)`, async () => {
      if (missing) return skip(missing);
      const gpu = await loaderRate({ ...opts, decode: "nvdec", slots: 4 }, seconds);
      const base = cpu.status === "pass" ? (cpu.figures!.clipsPerSecond as number) : NaN;
      return pass({ ...gpu, ratioToCpu: Number.isFinite(base) ? round(gpu.clipsPerSecond / base, 2) : null });
    });
  }
}
