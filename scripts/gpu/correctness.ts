/**
 * Phase `decode`: NVDEC against the CPU path on the kit's clips (H.264 and HEVC at each size, unscaled: luma
 * identical, RGB PSNR, same pts), a clip with B-frames, backward seeks in a long GOP, two threads decoding at
 * once on the one primary context, and the decoder cache across display areas and sizes.
 * @module
 */
import { releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { decoderCacheStats } from "../../src/nvdec/decoder_cache.ts";
import { clipFor, nvdecMissing, withRole } from "./kit.ts";
import { compareDecodes, judge, packetsOf } from "./compare.ts";
import { DecodeThreads } from "./pool.ts";
import { fail, pass, type PhaseResult, skip, verdict } from "./result.ts";

/** Seconds of each clip compared (its first GOP, B-frames included). */
const WINDOW: [number, number] = [0, 1];

/** The decode phase. */
export async function decode(r: PhaseResult): Promise<void> {
  const missing = nvdecMissing();
  for (const clip of withRole("decode")) {
    await r.check(`${clip.codec} ${clip.size}`, async () => {
      if (missing) return skip(missing);
      const c = await compareDecodes(await packetsOf(clip.path, WINDOW));
      const why = judge(c);
      return why ? fail(why, { ...c }) : pass({ ...c });
    });
  }

  await r.check("B-frames", async () => {
    if (missing) return skip(missing);
    const clip = clipFor("bframes");
    const c = await compareDecodes(await packetsOf(clip.path));
    const why = judge(c);
    return why ? fail(why, { file: clip.file, ...c }) : pass({ file: clip.file, ...c });
  });

  await r.check("backward seek", async () => {
    if (missing) return skip(missing);
    const clip = clipFor("seek");
    // Late, then earlier, then between: each window starts decoding at the one keyframe (GOP longer than the clip).
    const windows = [[0.7, 0.75], [0.2, 0.25], [0.5, 0.53]].map(([a, b]) =>
      [a * clip.seconds, b * clip.seconds] as [number, number]
    );
    const seen = [];
    for (const w of windows) {
      const c = await compareDecodes(await packetsOf(clip.path, w));
      const why = judge(c);
      seen.push({ window: w, ...c });
      if (why) return fail(`window ${w.join("–")} s: ${why}`, { file: clip.file, seen });
    }
    return pass({ file: clip.file, seen });
  });

  await r.check("two threads, one context", async () => {
    if (missing) return skip(missing);
    const files = [clipFor("speed-large").path, clipFor("speed-small").path];
    // One thread's answers, then two threads at once, each decoding both files.
    const threads = new DecodeThreads(2);
    try {
      const alone: string[] = [];
      for (const f of files) alone.push((await threads.ask(0, { op: "hash", file: f, window: WINDOW })).sha);
      const together = await Promise.all([0, 1].map(async (i) => {
        const shas = [];
        for (const f of i ? [...files].reverse() : files) {
          shas.push((await threads.ask(i, { op: "hash", file: f, window: WINDOW })).sha);
        }
        return i ? shas.reverse() : shas;
      }));
      const same = together.every((s) => s.every((x, k) => x === alone[k]));
      return verdict(same, "NV12 decoded by two threads at once differs from one thread's", {
        alone,
        together,
      });
    } finally {
      await threads.close();
    }
  });

  await r.check("decoder cache", async () => {
    if (missing) return skip(missing);
    releaseDecoderNvdec();
    const small = clipFor("cache-reconfigure"), partner = clipFor("cache-display-area");
    const large = clipFor("cache-create");
    // small and partner share a coded size with different display areas: the cached decoder is reconfigured,
    // and each must still be cropped as its own. Then a larger coded size (a new decoder), and back (reconfigured).
    const steps: { file: string; created: number; reconfigured: number; why: string | null }[] = [];
    for (const clip of [small, partner, small, large, small]) {
      const before = decoderCacheStats();
      const c = await compareDecodes(await packetsOf(clip.path, [0, 0.3]));
      const after = decoderCacheStats();
      steps.push({
        file: clip.file,
        // compareDecodes decodes twice (NV12, then RGB): the second is always a reuse
        created: after.created - before.created,
        reconfigured: after.reconfigured - before.reconfigured,
        why: judge(c),
      });
    }
    releaseDecoderNvdec();
    const wrong = steps.filter((s) => s.why !== null);
    if (wrong.length) return fail(wrong.map((s) => `${s.file}: ${s.why}`).join("; "), { steps });
    const created = steps.map((s) => s.created).join(",");
    return verdict(
      created === "1,0,0,1,0",
      `decoders created per step ${created}, expected 1,0,0,1,0 (reuse across display areas and smaller sizes)`,
      { steps },
    );
  });
}
