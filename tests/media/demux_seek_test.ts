/**
 * Windows whose keyframe lies before where a seek lands: MPEG-TS seeks by dts (a keyframe is decoded before it
 * is presented, so a seek to just after it lands past it), long GOPs (`-g 250`), B-frames and streams that start
 * at a non-zero time (`-output_ts_offset`), in MPEG-TS, MP4 and MKV, H.264 and HEVC. Oracle: every frame the
 * ffmpeg CLI decodes from the whole file (ffprobe's pts, the CLI's raw bytes), those on screen during `[s, e)`
 * (the one on screen at `s`, which may lie in the GOP before the window's, then those presented in it).
 */
import assert from "node:assert/strict";
import { demuxVideo } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { frameAt } from "../../src/media/frames.ts";
import { MediaError } from "../../src/errors.ts";
import { cliRaw, framesOnScreen, probeFrameTimes, sameBytes } from "../helpers/decode_oracles.ts";
import { type ClipSpec, generateClip, hasFfmpegCliSync, lacksDemuxer, tempFile } from "../helpers/media.ts";
import { mulberry32 } from "../../src/dataset/random.ts";

const CLI = hasFfmpegCliSync();
const SKIP = CLI ? false : "needs the ffmpeg and ffprobe CLIs";

interface Oracle {
  pts: number[];
  raw: Uint8Array;
  frameSize: number;
}

async function oracle(path: string, w: number, h: number): Promise<Oracle> {
  const pts = await probeFrameTimes(path, 0);
  const raw = await cliRaw(path, { pixFmt: "yuv420p", streamIndex: 0 });
  const frameSize = (w * h * 3) / 2;
  assert.equal(raw.length, pts.length * frameSize, "CLI frames = ffprobe frames");
  return { pts, raw, frameSize };
}

/** Asserts that sluice's window `[s, e)` holds exactly the oracle's frames on screen during it, byte for byte. */
async function assertWindow(path: string, o: Oracle, s: number, e: number): Promise<void> {
  const want = framesOnScreen(o.pts, [s, e]);
  const what = `${path} [${s.toFixed(3)}, ${e.toFixed(3)})`;
  const got = await decodeVideo(await demuxVideo(path, { window: [s, e] }), { pixelFormat: "yuv420p" });
  assert.deepEqual(
    Array.from(got.pts).map((t) => t.toFixed(6)),
    want.map((i) => o.pts[i].toFixed(6)),
    `pts of ${what}`,
  );
  for (let k = 0; k < want.length; k++) {
    const ref = o.raw.subarray(want[k] * o.frameSize, (want[k] + 1) * o.frameSize);
    assert.ok(sameBytes(frameAt(got, k), ref), `frame ${k} (${got.pts[k]}) of ${what}`);
  }
}

/** Random windows over the stream (a third of them inside the first GOP), plus each keyframe's own time. */
async function checkFile(spec: ClipSpec, seed: number, count: number): Promise<void> {
  const path = await generateClip(spec);
  const o = await oracle(path, spec.width!, spec.height!);
  const times = o.pts.filter((t) => Number.isFinite(t)); // MPEG-PS: the last frame has no time
  const first = Math.min(...times), last = Math.max(...times);
  const next = mulberry32(seed);
  const gopEnd = Math.min(last, first + (spec.gop ?? 12) / (spec.fps ?? 25));
  for (let n = 0; n < count; n++) {
    const s = n % 3 === 0 ? first + next() * (gopEnd - first) : first - 0.1 + next() * (last - first + 0.1);
    await assertWindow(path, o, s, s + 0.04 + next() * 1.2);
  }
  await assertWindow(path, o, first, first + 0.5);
  await assertWindow(path, o, first + 0.001, first + 0.3);
}

const base = { width: 96, height: 64, fps: 25, durationSec: 6 };
for (const container of ["ts", "mp4", "mkv"]) {
  Deno.test({
    name: `demux seek: H.264 -g 250 with B-frames, start 1.4 s, ${container}: windows = the CLI's frames`,
    ignore: SKIP !== false,
    fn: () =>
      checkFile(
        { ...base, container, bframes: 3, gop: 250, extraArgs: ["-output_ts_offset", "1.4"] },
        11,
        14,
      ),
  });
  Deno.test({
    name:
      `demux seek: HEVC B-frames, keyframe every 2 s, start 0.9 s, ${container}: windows = the CLI's frames`,
    ignore: SKIP !== false,
    fn: () =>
      checkFile(
        {
          ...base,
          codec: "libx265",
          container,
          bframes: 4,
          gop: 50,
          extraArgs: ["-output_ts_offset", "0.9"],
        },
        12,
        10,
      ),
  });
}

Deno.test({
  name:
    "demux seek: a TS copy of an MP4 with B-frames (keyframe each 0.48 s): every 1 s window shows 26 frames",
  ignore: SKIP !== false,
  fn: async () => {
    const mp4 = await generateClip({ ...base, bframes: 2, gop: 12 });
    const ts = await tempFile(".ts");
    try {
      const cp = new Deno.Command("ffmpeg", { args: ["-v", "error", "-i", mp4, "-c", "copy", "-y", ts] });
      assert.equal((await cp.output()).code, 0);
      const o = await oracle(ts, base.width, base.height);
      const first = o.pts[0];
      for (let k = 0; k < 12; k++) {
        const s = first + 0.013 + 0.37 * k; // off the frame grid: no float ties at the edges
        await assertWindow(ts, o, s, s + 1);
        const got = await demuxVideo(ts, { window: [s, s + 1] });
        // The frame on screen at s, then the 25 presented in (s, s + 1).
        assert.equal((await decodeVideo(got, { width: 8, height: 8 })).pts.length, 26, `[${s}, ${s + 1})`);
      }
    } finally {
      await Deno.remove(ts).catch(() => {});
    }
  },
});

Deno.test({
  name: "demux seek: several windows from one open reuse packets and still equal the CLI's frames",
  ignore: SKIP !== false,
  fn: async () => {
    const spec = { ...base, container: "ts", bframes: 3, gop: 250, extraArgs: ["-output_ts_offset", "1.4"] };
    const path = await generateClip(spec);
    const o = await oracle(path, base.width, base.height);
    const t0 = o.pts[0];
    const windows = ([[0.1, 1.1], [1.7, 1.9], [0.05, 0.2], [5.5, 6.6], [0.8, 3]] as const).map((
      [a, b],
    ): [number, number] => [t0 + a, t0 + b]);
    const all = await demuxVideo(path, { windows });
    for (const [i, [s, e]] of windows.entries()) {
      const got = await decodeVideo(all[i], { pixelFormat: "yuv420p" });
      const want = framesOnScreen(o.pts, [s, e]);
      assert.deepEqual(Array.from(got.pts).map((t) => t.toFixed(6)), want.map((i) => o.pts[i].toFixed(6)));
    }
  },
});

Deno.test({
  name: "demux seek: a truncated file names where it ends and the window it cannot serve",
  ignore: SKIP !== false,
  fn: async () => {
    // faststart: the header (with the full 6 s duration) comes first; cutting the file keeps it.
    const mp4 = await generateClip({ ...base, gop: 25, extraArgs: ["-movflags", "+faststart"] });
    const ts = await generateClip({ ...base, gop: 25, container: "ts" });
    for (const src of [mp4, ts]) {
      const bytes = await Deno.readFile(src);
      const cut = bytes.subarray(0, Math.floor(bytes.length * 0.45));
      const err = await demuxVideo(cut, { window: [5.2, 5.9] }).then(() => null, (e) => e);
      assert.ok(err instanceof MediaError, `${src}: ${err}`);
      assert.match(
        err.message,
        /file ends at \d+(\.\d+)? s\b.*, before the window \[5\.2, 5\.9\)/,
        err.message,
      );
    }
  },
});

Deno.test({
  name: "demux: FLV and MPEG-PS (streams appear only once packets are read): windows = the CLI's frames",
  ignore: SKIP !== false,
  fn: async () => {
    const small = { width: 96, height: 64, fps: 25, durationSec: 3 };
    await checkFile({ ...small, container: "flv", gop: 12 }, 21, 6); // H.264 in FLV
    await checkFile({ ...small, container: "flv", codec: "flv1", gop: 12 }, 22, 6);
    // MPEG-PS finds its video streams by probing with the raw video demuxers (mpegvideo).
    if (lacksDemuxer("mpegvideo")) return;
    await checkFile(
      { ...small, container: "mpg", codec: "mpeg2video", gop: 12, extraArgs: ["-bf", "2"] },
      23,
      6,
    );
  },
});
