/**
 * The frame selector against hand-computed position assignments, and decodeVideo's output bounded by the stream
 * (issue 16: a window to 1e5 s with `frameRate` used to return 3 million frames, mostly padding).
 */
import assert from "node:assert/strict";
import {
  type FrameSampling,
  FrameSelector,
  framesInWindow,
  framesShown,
  type PositionPlan,
} from "../../src/media/frame_select.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { ptsToSeconds, type VideoPackets } from "../../src/media/packets.ts";
import { MediaError } from "../../src/errors.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

/** Feeds frames at `times` (in order) and returns, per filled position, the index of the frame it shows and its time. */
function select(plan: PositionPlan, times: number[]): { frames: number[]; pts: number[] } {
  const sel = new FrameSelector(plan);
  const frames: number[] = [];
  let held = -1;
  for (const [i, t] of times.entries()) {
    const d = sel.offer(t);
    for (let k = 0; k < d.held; k++) frames.push(held);
    for (let k = 0; k < d.current; k++) frames.push(i);
    if (d.hold) held = i;
  }
  const n = sel.finish();
  for (let k = 0; k < n; k++) frames.push(held);
  assert.equal(frames.length, sel.filled);
  return { frames, pts: frames.map((_, k) => Math.round(sel.time(k) * 1e6) / 1e6) };
}

const grid = (fps: number, n: number, from = 0) => Array.from({ length: n }, (_, j) => from + j / fps);

function plan(
  sampling: FrameSampling,
  window: [number, number] | null,
  numFrames = Infinity,
  end = NaN,
): PositionPlan {
  return { sampling, window, numFrames, streamEnd: end, streamStart: NaN };
}

/** Indices of the 1 entries of `framesShown`. */
function shown(p: PositionPlan, times: number[]): number[] {
  return [...framesShown(p, times)].flatMap((v, i) => v ? [i] : []);
}

Deno.test("framesShown: which frames fill a position, computed by hand for every kind", () => {
  const t = grid(25, 50); // frame i at i/25 s
  // consecutive, window [1, 2), 3 frames: frames 25, 26, 27; nothing before the window, nothing after the third.
  assert.deepEqual(shown(plan({ kind: "consecutive" }, [1, 2], 3), t), [25, 26, 27]);
  // stride 2 in [1, 2): frames 25, 27, 29.
  assert.deepEqual(shown(plan({ kind: "stride", stride: 2 }, [1, 2], 3), t), [25, 27, 29]);
  // 25 -> 8 fps over [0, 0.5): position k (t = k/8) shows the latest frame whose round(t·8) <= k: frames at
  // 0.04 (round 0.32 = 0), 0.16 (1.28 -> 1), 0.28 (2.24 -> 2), 0.40 (3.2 -> 3); position 4 (0.5 s) is not in the window.
  assert.deepEqual(shown(plan({ kind: "rate", frameRate: 8 }, [0, 0.5], Infinity, 2), t), [1, 4, 7, 10]);
  // uniform, 4 positions over [0.5, 1.3) at 0.5, 0.7, 0.9, 1.1: the frame on screen at each: 12.5 -> 12 (0.48), 17
  // (0.68), 22 (0.88), 27 (1.08).
  assert.deepEqual(shown(plan({ kind: "uniform" }, [0.5, 1.3], 4, 2), t), [12, 17, 22, 27]);
  // Positions past the stream's end are not filled: rate 25 -> 5 over [1.9, 3) with the stream ending at 2.0 s:
  // one position (1.9), showing frame 47 (1.88, round(-0.1) = 0) held until frame 48 (1.92, round(0.1) = 0), then 49.
  assert.deepEqual(shown(plan({ kind: "rate", frameRate: 5 }, [1.9, 3], Infinity, 2), t), [49]);
});

Deno.test("frame select: consecutive and stride take the frames on screen during the window in order", () => {
  const t = grid(25, 50); // 0, 0.04, ...
  // [0.1, 0.5): frame 2 (0.08) is on screen at 0.1, then frames 3 (0.12) .. 12 (0.48) are presented in it.
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0.1, 0.5]), t).frames, [
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
  ]);
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0.1, 0.5], 4), t).frames, [2, 3, 4, 5]);
  // A frame presented exactly at the start is the one on screen there: nothing before it.
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0.12, 0.2]), t).frames, [3, 4]);
  const s = select(plan({ kind: "stride", stride: 3 }, [0.1, 0.5]), t);
  assert.deepEqual(s.frames, [2, 5, 8, 11]);
  assert.deepEqual(s.pts, [0.08, 0.2, 0.32, 0.44]);
});

Deno.test("frame select: a window inside a gap of a variable-frame-rate stream shows the frame on screen", () => {
  // A screen recording: frames at 0, 0.04 and 1.0, then nothing until 5.0 (the frame at 1.0 is on screen from
  // 1.0 to 5.0), then 5.04; the stream ends at 5.08.
  const t = [0, 0.04, 1, 5, 5.04];
  const inGap = (sampling: FrameSampling, n = Infinity) => select(plan(sampling, [2, 3], n, 5), t);
  assert.deepEqual(inGap({ kind: "consecutive" }).frames, [2]);
  assert.deepEqual(inGap({ kind: "consecutive" }).pts, [1], "the frame's own time, before the window");
  assert.deepEqual(inGap({ kind: "stride", stride: 2 }).frames, [2]);
  // Every position time (2, 2.25, 2.5, 2.75) falls inside the gap.
  const rate = inGap({ kind: "rate", frameRate: 4 });
  assert.deepEqual(rate.frames, [2, 2, 2, 2]);
  assert.deepEqual(rate.pts, [2, 2.25, 2.5, 2.75]);
  assert.deepEqual(inGap({ kind: "uniform" }, 5).frames, [2, 2, 2, 2, 2]);
  for (const sampling of [{ kind: "consecutive" }, { kind: "rate", frameRate: 4 }] as const) {
    assert.deepEqual(shown(plan(sampling, [2, 3], Infinity, 5), t), [2], `${sampling.kind}: only that frame`);
  }
  assert.equal(new FrameSelector(plan({ kind: "rate", frameRate: 4 }, [2, 3], Infinity, 5)).capacity(1), 4);
  // A window across the gap's end: the held frame, then those presented in it; stride counts from the held one.
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0.9, 5.05], Infinity, 5.08), t).frames, [
    1,
    2,
    3,
    4,
  ]);
  assert.deepEqual(select(plan({ kind: "stride", stride: 2 }, [0.9, 5.05], Infinity, 5.08), t).frames, [
    1,
    3,
  ]);
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0.9, 5.05], 2, 5.08), t).frames, [1, 2]);
  // Rate 1 from 0.9: positions 0.9, 1.9, 2.9, 3.9, 4.9; the frame at 1.0 belongs to position round(0.1) = 0 and shows
  // through the gap; 5.0 and 5.04 both belong to position round(4.1) = round(4.14) = 4, the later wins (fps filter).
  assert.deepEqual(
    select(plan({ kind: "rate", frameRate: 1 }, [0.9, 5.05], Infinity, 5.08), t).frames,
    [2, 2, 2, 2, 4],
  );
});

Deno.test("frame select: a frame presented exactly at the window's start is its first, whatever the float error", () => {
  // MPEG-TS times are pts × 1/90000 s: 918000 gives 10.200000000000001, a window starting at 10.2 (placed by the
  // sampler) starts with that frame, not the one before it (10.1, no longer on screen at 10.2). Found on a
  // generated VFR MPEG-TS file, against ffprobe's frame list.
  const t = [909000, 918000, 927000, 936000].map((pts) => ptsToSeconds(pts, [1, 90000]));
  assert.ok(t[1] > 10.2, "the float error this test is about");
  for (const start of [10.2, t[1], 10.199999999999999]) {
    const w: [number, number] = [start, 10.35];
    assert.deepEqual(
      select(plan({ kind: "consecutive" }, w, Infinity, 10.4), t).frames,
      [1, 2],
      `start ${start}`,
    );
    assert.deepEqual(
      select(plan({ kind: "stride", stride: 2 }, w, Infinity, 10.4), t).frames,
      [1],
      `${start}`,
    );
    assert.deepEqual(shown(plan({ kind: "consecutive" }, w, 1, 10.4), t), [1], `start ${start}`);
  }
  const p = {
    numPackets: 4,
    pts: BigInt64Array.from([909000n, 918000n, 927000n, 936000n]),
    timeBase: [1, 90000],
  };
  const window: [number, number] = [10.2, 10.35];
  assert.equal(
    framesInWindow({ ...p, window } as unknown as VideoPackets),
    2,
    "the window gives 10.2 and 10.3",
  );
});
Deno.test("frame select: after the last frame, it stays on screen until the stream's end, then nothing does", () => {
  const t = [0, 1];
  // The stream ends at 6 (the file goes on after the last frame): a window at [3, 4) shows the last frame.
  assert.deepEqual(select(plan({ kind: "consecutive" }, [3, 4], Infinity, 6), t).frames, [1]);
  assert.deepEqual(select(plan({ kind: "rate", frameRate: 2 }, [3, 4], Infinity, 6), t).frames, [1, 1]);
  // Ending at 3.5, the grid stops there: position 3.5 is past the end.
  assert.deepEqual(select(plan({ kind: "rate", frameRate: 2 }, [3, 4], Infinity, 3.5), t).frames, [1]);
  // Ending at 2, nothing is on screen at 3.
  assert.deepEqual(select(plan({ kind: "consecutive" }, [3, 4], Infinity, 2), t).frames, []);
  assert.deepEqual(select(plan({ kind: "rate", frameRate: 2 }, [3, 4], Infinity, 2), t).frames, []);
  assert.deepEqual(shown(plan({ kind: "consecutive" }, [3, 4], Infinity, 2), t), []);
});

Deno.test("frame select: rate 25 -> 12.5 fps: a frame on a half position rounds up, the later frame of a position wins", () => {
  // Frame j at 0.04j falls in position round(j/2) (halves up): positions show frames 0, 2, 4, ... (0.08k).
  const r = select(plan({ kind: "rate", frameRate: 12.5 }, [0, 1]), grid(25, 30));
  assert.deepEqual(r.frames, [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24]);
  assert.deepEqual(r.pts, grid(12.5, 13).map((x) => Math.round(x * 1e6) / 1e6));
});

Deno.test("frame select: rate 10 -> 25 fps duplicates; positions before the first frame show it", () => {
  // Frame j (0.1j) falls in position round(2.5j): 0, 3, 5, 8, 10.
  assert.deepEqual(
    select(plan({ kind: "rate", frameRate: 25 }, [0, 0.4]), grid(10, 6)).frames,
    [0, 0, 0, 1, 1, 2, 2, 2, 3, 3],
  );
  // Window starting at 0.13: frame 1 (0.1) falls in position round(-0.75) = -1, frame 2 (0.2) in position 2: positions 0, 1
  // show frame 1 (on screen at 0.13 and 0.17), position 2 frame 2.
  assert.deepEqual(select(plan({ kind: "rate", frameRate: 25 }, [0.13, 0.25]), grid(10, 6)).frames, [
    1,
    1,
    2,
  ]);
});

Deno.test("frame select: uniform shows the frame on screen at each of numFrames evenly spaced times", () => {
  // [0, 1), 4 positions at 0, 0.25, 0.5, 0.75 over 25 fps frames: frames 0 (0), 6 (0.24), 12 (0.48), 18 (0.72).
  assert.deepEqual(select(plan({ kind: "uniform" }, [0, 1], 4), grid(25, 25)).frames, [0, 6, 12, 18]);
  // A frame exactly at a position time is the one shown: 5 positions at 0.2k over 25 fps are frames 5k.
  assert.deepEqual(select(plan({ kind: "uniform" }, [0, 1], 5), grid(25, 25)).frames, [0, 5, 10, 15, 20]);
  // A frame before the window is on screen at its start.
  assert.deepEqual(select(plan({ kind: "uniform" }, [0.1, 0.5], 2), [0, 0.3, 0.6]).frames, [0, 1]);
});

Deno.test("frame select: a whole stream of unknown end, resampled with no frame limit, ends at its last frame", () => {
  // Found by the fuzzer (seed 16, case 320: a TS file with a duplicated chunk, frameRate 60): the held last frame
  // was given Infinity positions, and decoding ran until memory gave out.
  const sel = new FrameSelector(plan({ kind: "rate", frameRate: 60 }, null));
  for (const t of grid(25, 10)) sel.offer(t);
  const before = sel.filled;
  assert.equal(sel.finish(), 0);
  assert.equal(sel.filled, before);
  assert.ok(Number.isFinite(before) && before > 0);
});

Deno.test("frame select: grid positions stop at the end of the last frame, not at the window's end", () => {
  const sel = new FrameSelector(plan({ kind: "rate", frameRate: 30 }, [2, 1e5], Infinity, 6));
  assert.equal(sel.capacity(0), 120);
  const r = select(plan({ kind: "rate", frameRate: 30 }, [2, 1e5], Infinity, 6), grid(25, 100, 2));
  assert.equal(r.frames.length, 120);
  assert.equal(r.frames.at(-1), 99);
  // numFrames caps it, and the selector says when decoding may stop.
  const capped = new FrameSelector(plan({ kind: "rate", frameRate: 30 }, [2, 1e5], 16, 6));
  let stoppedAt = -1;
  for (const [i, t] of grid(25, 100, 2).entries()) {
    capped.offer(t);
    if (capped.done) {
      stoppedAt = i;
      break;
    }
  }
  assert.equal(capped.filled, 16);
  assert.equal(stoppedAt, 13, "position 15 (2.5 s) is filled once frame 13 (2.52 s, position 16) arrives");
});

Deno.test("frame select: frames without a time are skipped in a window; frames at or after its end never shown", () => {
  assert.deepEqual(select(plan({ kind: "consecutive" }, [0, 1]), [0, NaN, 0.5, 1, 1.2]).frames, [0, 2]);
  assert.deepEqual(select(plan({ kind: "consecutive" }, null), [0, NaN, 0.5]).frames, [0, 1, 2]);
  assert.deepEqual(select(plan({ kind: "rate", frameRate: 2 }, [0, 1]), [0, 0.5, 0.9]).frames, [0, 1]);
});

Deno.test({
  name: "decodeVideo: a window to 1e5 s with frameRate 30 is bounded by the stream's last frame (issue 16)",
  ignore: !hasFfmpegCliSync(),
  fn: async () => {
    const clip = await generateClip({ width: 64, height: 48, durationSec: 4, gop: 25 });
    const frames = await decodeVideo(await demuxVideo(clip, { window: [2, 1e5] }), {
      width: 32,
      height: 32,
      frameRate: 30,
    });
    // 25 fps frames 2.00 .. 3.96, the last ending at 4.0: positions 2 + k/30 < 4 → 60.
    assert.equal(frames.pts.length, 60);
    assert.equal(frames.data.byteLength, 60 * 32 * 32 * 3);
    assert.ok(Math.abs(frames.pts[59] - (2 + 59 / 30)) < 1e-9);
  },
});

Deno.test("frame selector, frames out of presentation order (issue 30): left out where no slot shows them, else a MediaError", () => {
  // Frames at 1.0, 1.2 before a window [1.25, 1.6), then 1.1 late: 1.2 stays the frame on screen at the start.
  const native = plan({ kind: "consecutive" }, [1.25, 1.6], 4);
  assert.deepEqual(select(native, [1.0, 1.2, 1.1, 1.3, 1.4]).pts, [1.2, 1.3, 1.4]);
  // The same for a grid kind: 10 fps from 1.25: slot 0 (1.25) shows 1.2, slot 1 (1.35) 1.3, slot 2 (1.45) 1.4.
  assert.deepEqual(
    select(plan({ kind: "rate", frameRate: 10 }, [1.25, 1.5], 3, 2), [1.0, 1.2, 1.1, 1.3, 1.4]).frames,
    [1, 3, 4],
  );
  // Late frames at or after the window's end decide nothing.
  assert.deepEqual(select(native, [1.2, 1.3, 1.7, 1.65]).pts, [1.2, 1.3]);
  // A frame presented in the window after a later one was offered: the slots already filled cannot be told right.
  const late = (p: PositionPlan, times: number[]) =>
    assert.throws(
      () => select(p, times),
      (e: unknown) => e instanceof MediaError && /presentation order/.test(e.message),
    );
  late(native, [1.2, 1.4, 1.3]); // 6.24 then 6.20, as issue 30 saw it
  late(native, [1.2, 1.3, 1.3]); // the same time twice
  late(native, [1.2, 1.3, 1.7, 1.4]); // one in the window after one past it: the stream's order is not to be trusted
  // A frame before the start that comes after one in the window: the frame on screen at the start was not it.
  late(native, [1.0, 1.3, 1.2]);
  late(plan({ kind: "rate", frameRate: 10 }, [1.25, 1.5], 3, 2), [1.2, 1.4, 1.3]);
  late(plan({ kind: "uniform" }, [1.25, 1.65], 4, 2), [1.3, 1.5, 1.4]);
  // A whole stream has no slot that could leave a frame out: any frame out of order fails.
  late(plan({ kind: "consecutive" }, null), [0, 0.04, 0.02]);
  // Frames without a time are not ordered (kept over a whole stream, as before).
  assert.equal(select(plan({ kind: "consecutive" }, null), [0, NaN, 0.04]).frames.length, 3);
});
