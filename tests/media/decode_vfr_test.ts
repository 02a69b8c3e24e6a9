/**
 * Variable frame rate (issue 21, item 5): a screen recording shows one frame for seconds, and a window inside such
 * a gap still has a frame on screen, presented before it, perhaps in an earlier GOP. Generated recordings (gaps
 * of 2.5 s, longer than every window; keyframes right after each gap, so the frame on screen at a window's start
 * lies in the GOP before its other frames), checked with ffprobe, in MP4, MKV and MPEG-TS, against independent
 * oracles:
 * - consecutive/stride/uniform: ffprobe's frame list (the frame on screen at `t` is the one with the greatest pts
 *   at or before `t`) and the ffmpeg CLI's raw frames, byte for byte;
 * - frameRate: `ffmpeg -vf fps=N` over the whole file (windows on its grid: position `k` of `[m/N, …)` is its frame
 *   `m + k`), byte for byte;
 * - past the last frame: the shared WebM whose audio outlasts its video (the last frame stays on screen until the
 *   file ends), and a truncated copy (nothing is on screen past its data).
 */
import assert from "node:assert/strict";
import { demuxVideo } from "../../src/media/demux.ts";
import { type DecodeOptions, decodeVideo } from "../../src/media/decode.ts";
import { frameAt } from "../../src/media/frames.ts";
import { roundNear } from "../../src/media/frame_select.ts";
import { MediaError } from "../../src/errors.ts";
import { cliRaw, framesOnScreen, probeFrameTimes, sameBytes } from "../helpers/decode_oracles.ts";
import {
  ffprobeFrames,
  ffprobeStreamEnd,
  generateClip,
  hasFfmpegCliSync,
  sharedMedia,
  vfrClipSpec,
} from "../helpers/media.ts";

const ignore = !hasFfmpegCliSync();
const W = 64, H = 48, FRAME = (W * H * 3) / 2;
/** Frames at 25 fps in [0, 1.0], [3.52, 4.0], [6.52, 7.96]; keyframes at 0, 3.52 and 6.52. */
const RECORDING = { gaps: [[1.02, 3.5], [4.02, 6.5]] as [number, number][], keyframes: [0, 3.52, 6.52] };

interface Recording {
  path: string;
  /** ffprobe's frame times, presentation order, and which are keyframes. */
  times: number[];
  keys: boolean[];
  /** The ffmpeg CLI's frames, yuv420p, presentation order. */
  raw: Uint8Array;
  end: number;
}

async function recording(container: string): Promise<Recording> {
  const path = await generateClip(vfrClipSpec({ ...RECORDING, container, width: W, height: H }));
  const frames = await ffprobeFrames(path, 0);
  const times = frames.map((f) => f.ptsTime ?? f.bestEffortTimestampTime ?? NaN);
  const raw = await cliRaw(path, { pixFmt: "yuv420p", streamIndex: 0 });
  assert.equal(raw.length, times.length * FRAME);
  // The file is what the tests need: gaps longer than every window, a keyframe right after each.
  const t0 = times[0];
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  assert.ok(gaps.filter((g) => g > 2.4).length === 2, `${path}: two gaps of 2.5 s (${gaps})`);
  for (const k of RECORDING.keyframes) {
    const i = times.findIndex((t) => Math.abs(t - t0 - k) < 1e-6);
    assert.ok(i >= 0 && frames[i].keyFrame, `${path}: a keyframe at ${k} s`);
  }
  return { path, times, keys: frames.map((f) => f.keyFrame), raw, end: await ffprobeStreamEnd(path, 0) };
}

/** Decodes window `[s, e)` of `r` at native size (yuv420p) with `opts`. */
async function decodeWindow(r: Recording, w: [number, number], opts: DecodeOptions = {}) {
  return await decodeVideo(await demuxVideo(r.path, { window: w }), { pixelFormat: "yuv420p", ...opts });
}

function assertFrames(
  r: Recording,
  got: Awaited<ReturnType<typeof decodeWindow>>,
  want: number[],
  what: string,
) {
  assert.equal(got.pts.length, want.length, `${what}: ${got.pts.length} frames, want ${want.length}`);
  for (const [k, i] of want.entries()) {
    assert.ok(
      sameBytes(frameAt(got, k), r.raw.subarray(i * FRAME, (i + 1) * FRAME)),
      `${what}: position ${k} = frame ${i}`,
    );
  }
}

for (const container of ["mp4", "mkv", "ts"]) {
  Deno.test({
    name:
      `VFR ${container}: consecutive and stride windows in and across gaps = the frames on screen (ffprobe)`,
    ignore,
    fn: async () => {
      const r = await recording(container);
      const t0 = r.times[0];
      const windows: [number, number][] = [
        [1.5, 2.5], // inside the first gap: the frame at 1.0
        [3.0, 3.7], // the frame at 1.0 (GOP 1), then 3.52 .. 3.68 (GOP 2)
        [4.5, 6.0], // inside the second gap: the frame at 4.0 (GOP 2)
        [6.1, 6.6], // across the second gap's end
        [0.95, 3.6], // frames before, through and after the first gap
        [7.9, 8.5], // over the end
      ];
      for (const [a, b] of windows) {
        const w: [number, number] = [t0 + a, t0 + b];
        const want = framesOnScreen(r.times, w, r.end);
        const what = `${container} [${a}, ${b})`;
        const got = await decodeWindow(r, w);
        assert.deepEqual(
          Array.from(got.pts).map((t) => t.toFixed(4)),
          want.map((i) => r.times[i].toFixed(4)),
          what,
        );
        assertFrames(r, got, want, what);
        const stride = await decodeWindow(r, w, { sampling: { kind: "stride", stride: 3 } });
        assertFrames(r, stride, want.filter((_, j) => j % 3 === 0), `${what} stride 3`);
      }
      // The window inside a gap needs the GOP before the frame it shows (what the demuxer's keyframe search reaches).
      const [lead] = framesOnScreen(r.times, [t0 + 3.0, t0 + 3.7]);
      assert.ok(
        r.keys.slice(lead + 1).indexOf(true) >= 0 && r.times[lead] < t0 + 1.01,
        "held frame is in GOP 1",
      );
    },
  });

  Deno.test({
    name:
      `VFR ${container}: uniform windows inside gaps = the frame on screen at each position time (ffprobe)`,
    ignore,
    fn: async () => {
      const r = await recording(container);
      const t0 = r.times[0];
      for (const [a, b, n] of [[1.5, 2.5, 4], [2.9, 3.9, 5], [4.2, 7.0, 7]]) {
        const [s, e] = [t0 + a, t0 + b];
        const got = await decodeWindow(r, [s, e], { sampling: { kind: "uniform" }, numFrames: n });
        const want = Array.from(
          { length: n },
          (_, k) => framesOnScreen(r.times, [s + (k * (e - s)) / n, Infinity])[0],
        );
        assertFrames(r, got, want, `uniform ${n} over [${a}, ${b})`);
      }
    },
  });
}

for (const container of ["mp4", "mkv"]) {
  Deno.test({
    name: `VFR ${container}: frameRate windows in gaps = ffmpeg -vf fps=N's frames`,
    ignore,
    fn: async () => {
      const r = await recording(container);
      for (const N of [4, 5]) {
        // The fps filter's output, whole stream: frame j at j/N shows the latest frame whose round(t·N) <= j.
        const fps = await cliRaw(r.path, { pixFmt: "yuv420p", filter: `fps=${N}`, vsync: "passthrough" });
        const first = roundNear(r.times[0] * N);
        // Windows [a, a + len) starting on the fps grid (whole seconds), ending inside the stream: positions a + k/N.
        for (const [a, len] of [[2, 1], [3, 1.5], [4, 2.5], [6, 1.5], [1, 3.5]]) {
          const w: [number, number] = [a, a + len];
          const [m, n] = [a * N, Math.ceil(len * N)];
          const got = await decodeWindow(r, w, { frameRate: N });
          const what = `fps=${N} [${w[0]}, ${w[1]})`;
          assert.deepEqual(Array.from(got.pts), Array.from({ length: n }, (_, k) => w[0] + k / N), what);
          for (let k = 0; k < n; k++) {
            const j = m + k - first;
            assert.ok(
              sameBytes(frameAt(got, k), fps.subarray(j * FRAME, (j + 1) * FRAME)),
              `${what}: position ${k}`,
            );
          }
        }
      }
    },
  });
}

Deno.test({
  name: "VFR: skipping unshown frames (decodeLess.skip) keeps every window's bytes, in gaps and across them",
  ignore,
  fn: async () => {
    const r = await recording("mp4");
    let skipped = 0;
    for (const w of [[1.5, 2.5], [3.0, 3.7], [4.5, 6.0], [0.5, 3.6]] as [number, number][]) {
      for (const opts of [{}, { frameRate: 5 }, { sampling: { kind: "stride" as const, stride: 4 } }]) {
        const a = await decodeWindow(r, w, { ...opts, skipUnshown: true });
        const b = await decodeWindow(r, w, { ...opts, skipUnshown: false });
        assert.deepEqual(a.pts, b.pts);
        assert.ok(sameBytes(a.data, b.data), `[${w}] ${JSON.stringify(opts)}`);
        skipped += a.skippedFrames;
      }
    }
    assert.ok(skipped > 0, "some frames were left undecoded");
  },
});

const BBB = sharedMedia("vp9_opus_bbb.webm");

Deno.test({
  name:
    "past the last frame: it stays on screen while the file goes on (audio outlasts the video), then nothing",
  ignore: ignore || BBB === null,
  fn: async () => {
    const times = await probeFrameTimes(BBB!, 0);
    const last = Math.max(...times);
    const end = await ffprobeStreamEnd(BBB!, 0);
    const video = last + 1 / 24; // the last frame's own end (24 fps)
    assert.ok(end > video + 0.01, `the file (${end} s) outlasts the video's last frame (${video} s)`);
    const s = (video + end) / 2;
    const p = await demuxVideo(BBB!, { window: [s, s + 1] });
    assert.ok(Math.abs(p.endSec! - end) < 1e-6, `on screen until ${p.endSec}`);
    const one = await decodeVideo(p, { width: 32, height: 32 });
    assert.deepEqual(Array.from(one.pts), [last], "the last frame, on screen at the window's start");
    const rate = await decodeVideo(p, { width: 32, height: 32, frameRate: 1000 });
    assert.equal(rate.pts.length, Math.ceil((end - s) * 1000 - 1e-9), "grid positions until the file's end");
    // At or after the end nothing is on screen: the window fails at demux, naming where the file ends.
    await assert.rejects(demuxVideo(BBB!, { window: [end + 0.001, end + 1] }), MediaError);
  },
});

Deno.test({
  name: "past the last frame of a truncated file: its header's duration is not believed (nothing on screen)",
  ignore,
  fn: async () => {
    // faststart: the header (8 s) comes first and survives the cut; the data stops early.
    const path = await generateClip({
      ...vfrClipSpec(RECORDING),
      extraArgs: [...vfrClipSpec(RECORDING).extraArgs!, "-movflags", "+faststart"],
    });
    const bytes = await Deno.readFile(path);
    const cut = bytes.subarray(0, Math.floor(bytes.length * 0.6));
    const err = await demuxVideo(cut, { window: [7.5, 7.9] }).then(() => null, (e) => e);
    assert.ok(err instanceof MediaError, String(err));
    assert.match(
      err.message,
      /file ends at \d+(\.\d+)? s, before the window \[7\.5, 7\.9\) \(the header says it lasts until 8 s\)/,
    );
  },
});
