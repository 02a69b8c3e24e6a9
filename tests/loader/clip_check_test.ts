/**
 * The delivery rule (`src/loader/decode/clip_check.ts`, issue 30): hand-made clips over a real window's packets, one
 * rule broken at a time, each failing with a `ClipIntegrityError` naming it; and a damaged file through the
 * loader, whose clip that breaks the rule is failed and counted (planned = delivered + failed + dropped +
 * skipped), never delivered, through both backends.
 */
import assert from "node:assert/strict";
import { checkClip, type ClipFacts } from "../../src/loader/decode/clip_check.ts";
import { ClipIntegrityError } from "../../src/errors.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import {
  ffprobePackets,
  generateClip,
  hasFfmpegCliSync,
  runCli,
  tempFile,
  vfrClipSpec,
} from "../helpers/media.ts";
import { probeFrameTimes } from "../helpers/decode_oracles.ts";
import { NOPTS, ptsToSeconds, type VideoPackets } from "../../src/media/packets.ts";
import { decodeItems, demuxItems } from "../fuzz/clip_cases.ts";
import { FIXTURE_DIR } from "../fuzz/fixtures.ts";
import { assertAccounted } from "./accounting.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import type { DecodedClip } from "../../src/loader/clip/life.ts";

const CLI = hasFfmpegCliSync();

/**
 * A 25 fps clip's window [0.5, 0.9): frames at 0.48 (on screen at 0.5), 0.52, ..., 0.88; a clip of 4 consecutive
 * frames shows 0.48, 0.52, 0.56, 0.60 (frame indices 12–15).
 */
async function fixture(): Promise<{ spec: ClipSpec; clip: DecodedClip; facts: ClipFacts }> {
  const path = await generateClip({ width: 64, height: 48, fps: 25, durationSec: 2, gop: 12 });
  const packets = await demuxVideo(path, { window: [0.5, 0.9] });
  const spec = testSpec({ numFrames: 4, width: 8, height: 8 });
  const clip: DecodedClip = {
    meta: clipBase(path, 0.5, 0.9, 0, 1),
    data: new Uint8Array(4 * 3 * 8 * 8),
    width: 8,
    height: 8,
    outcome: {
      pts: [0.48, 0.52, 0.56, 0.6],
      frameIndex: [12, 13, 14, 15],
      frameKind: ["sampled", "sampled", "sampled", "sampled"],
      held: 0,
      padded: 0,
      span: [0.48, 0.64],
      rotation: 0,
      rotated: false,
      crop: [0, 0, 64, 48],
      flipped: false,
      decodedFrames: 4,
      skippedFrames: 0,
      passClips: 1,
    },
  };
  return { spec, clip, facts: { packets, frameTimes: [0.48, 0.52, 0.56, 0.6] } };
}

/** `checkClip` on a copy of the fixture changed by `change`: the rule it throws for, or null. */
async function broken(
  change: (c: { spec: ClipSpec; clip: DecodedClip; facts: ClipFacts }) => void,
): Promise<string | null> {
  const f = await fixture();
  change(f);
  try {
    checkClip(f.spec, f.clip, f.facts);
    return null;
  } catch (e) {
    assert.ok(e instanceof ClipIntegrityError, `${e}`);
    assert.match(e.message, /clip \[0\.5, 0\.9\) s: decode failed: the clip breaks the delivery rule/);
    assert.equal(e.stage, "decode");
    return e.rule;
  }
}

Deno.test({
  name:
    "delivery rule: a right clip passes; each part broken fails it with ClipIntegrityError naming the part",
  ignore: !CLI,
  async fn() {
    assert.equal(await broken(() => {}), null);
    // order: two frames swapped (the backwards pts of issue 30: 0.56 then 0.52)
    assert.equal(
      await broken(({ clip, facts }) => {
        clip.outcome!.pts = [0.48, 0.56, 0.52, 0.6];
        facts.frameTimes = [0.48, 0.56, 0.52, 0.6];
      }),
      "order",
    );
    // order: the same frame twice in a native kind
    assert.equal(
      await broken(({ clip, facts }) => {
        clip.outcome!.pts = [0.48, 0.52, 0.52, 0.6];
        facts.frameTimes = [0.48, 0.52, 0.52, 0.6];
      }),
      "order",
    );
    // window: a frame at or after the end; a frame before the start that is not the one on screen there (0.44);
    // two frames before the start; a frame at -4.8e22 s
    const times = (t: number[]) => ({ clip, facts }: { clip: DecodedClip; facts: ClipFacts }) => {
      clip.outcome!.pts = t;
      facts.frameTimes = t;
    };
    assert.equal(await broken(times([0.48, 0.52, 0.56, 0.9])), "window");
    assert.equal(await broken(times([0.44, 0.52, 0.56, 0.6])), "window");
    assert.equal(await broken(times([0.44, 0.48, 0.52, 0.56])), "window");
    assert.equal(await broken(times([-4.8e22, 0.52, 0.56, 0.6])), "window");
    // frame indices that contradict the times
    assert.equal(
      await broken(({ clip }) => void (clip.outcome!.frameIndex = [12, 14, 13, 15])),
      "frameIndex",
    );
    assert.equal(
      await broken(({ clip }) => void (clip.outcome!.frameIndex = [12, 13, 13, 15])),
      "frameIndex",
    );
    assert.equal(
      await broken(({ clip }) => void (clip.outcome!.frameIndex = [12, 13, 14, 999])),
      "frameIndex",
    );
    // shape: a repeat that is no copy of the last frame; more slots than frames shown
    assert.equal(
      await broken(({ clip, facts }) => {
        Object.assign(clip.outcome!, { held: 1, frameKind: ["sampled", "sampled", "sampled", "held"] });
        facts.frameTimes = [0.48, 0.52, 0.56];
      }),
      "shape",
    );
    assert.equal(await broken(({ facts }) => void (facts.frameTimes = [0.48, 0.52])), "shape");
    // audio: a status its samples belie
    const audio =
      (status: "ok" | "missing" | "short" | "error", samples: number[]) =>
      ({ spec, clip }: { spec: ClipSpec; clip: DecodedClip }) => {
        spec.audio = { sampleRate: 8000, channels: 1, samples: samples.length };
        clip.audio = Float32Array.from(samples);
        clip.audioChannels = 1;
        clip.outcome!.audio = status;
      };
    assert.equal(await broken(audio("ok", [0.1, -0.2, 0.3])), null);
    assert.equal(await broken(audio("short", [0, 0, 0.3])), null);
    assert.equal(await broken(audio("short", [0.1, 0, 0.3])), "audio");
    assert.equal(await broken(audio("missing", [0, 0.01, 0])), "audio");
    assert.equal(await broken(audio("error", [0, 0, 0])), null);
    assert.equal(await broken(audio("ok", [0, NaN, 0])), "audio");
  },
});

Deno.test({
  name: "delivery rule: the frame on screen before a window is not presented before its packets' decode " +
    "starts, nor, where they have no decode times, before the stream's start",
  ignore: !CLI,
  async fn() {
    // The window [0.5, 0.9) is cut from the keyframe at 0.48 s, its only packet at or before the start: a damaged
    // pts on it (2^62 ticks before 0, as the fuzzer's damaged packet sets have it) makes that keyframe, by the
    // packets, still the frame on screen at the start, so only its decode time (0.48 s) tells it is a lie.
    const damaged = (dts: "kept" | "none") => ({ clip, facts }: { clip: DecodedClip; facts: ClipFacts }) => {
      const p = facts.packets as VideoPackets;
      assert.equal(p.pts[0], p.dts[0], "the keyframe at 0.48 s opens the packets");
      p.pts[0] = -(2n ** 62n);
      if (dts === "none") p.dts.fill(NOPTS); // as Matroska's H.264: the stream's start (0) is then the bound
      const t = ptsToSeconds(p.pts[0], p.timeBase);
      clip.outcome!.pts = [t, 0.52, 0.56, 0.6];
      facts.frameTimes = [t, 0.52, 0.56, 0.6];
    };
    assert.equal(await broken(damaged("kept")), "window");
    assert.equal(await broken(damaged("none")), "window");
    // A leading picture of an open GOP: presented before its keyframe (0.48 s), decoded after it.
    const leading = ({ facts }: { facts: ClipFacts }) => {
      const p = facts.packets as VideoPackets;
      const tick = (sec: number) => BigInt(Math.round(sec * p.timeBase[1] / p.timeBase[0]));
      [p.pts[0], p.dts[0], p.pts[1], p.dts[1]] = [tick(0.52), tick(0.4), tick(0.48), tick(0.44)];
    };
    assert.equal(await broken(leading), null);
  },
});

/** ffprobe's frame times of `path`'s stream 0 and the windows starting half a frame after some of them. */
async function windowsAfterFrames(path: string, gapsAt: number[]): Promise<[number, number][]> {
  const times = (await probeFrameTimes(path, 0)).filter((t) => Number.isFinite(t)).sort((a, b) => a - b);
  const after = times.filter((_, i) => i % 3 === 0 && i + 8 < times.length) // 3 frames before the end
    .map((t, i): [number, number] => [t + 0.02 + 0.001 * (i % 7), t + 0.3]);
  return [...after, ...gapsAt.map((g): [number, number] => [g, g + 0.3])];
}

Deno.test({
  name:
    "delivery rule: clean files keep it where the frame on screen at a window's start precedes it: open " +
    "GOPs with B-frames (H.264, HEVC; MP4 and Matroska, whose H.264 packets have no dts), VFR with 2.5 s gaps, an " +
    "MP4 whose edit list starts after B-frames with negative times",
  ignore: !CLI,
  async fn() {
    const openGop = ["-x264-params", "open-gop=1"];
    const sources: { path: string; gaps: number[] }[] = [];
    for (const container of ["mp4", "mkv"]) {
      const size = { width: 64, height: 48, fps: 25, durationSec: 3, gop: 12, container };
      sources.push({ path: await generateClip({ ...size, bframes: 3, extraArgs: openGop }), gaps: [] });
      sources.push({ path: await generateClip({ ...size, codec: "libx265", bframes: 4 }), gaps: [] });
      const vfr = vfrClipSpec({ gaps: [[1.5, 4]], keyframes: [0, 4.2], container, durationSec: 6 });
      sources.push({ path: await generateClip(vfr), gaps: [1.7, 2.9, 3.95] });
    }
    const cut = await tempFile(".mp4");
    try {
      const src = await generateClip({
        width: 64,
        height: 48,
        durationSec: 3,
        bframes: 3,
        extraArgs: openGop,
      });
      const r = await runCli("ffmpeg", [
        "-v",
        "error",
        "-nostdin",
        "-ss",
        "1.3",
        "-i",
        src,
        "-c",
        "copy",
        "-y",
        cut,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const packets = await ffprobePackets(cut, 0);
      assert.ok(packets.some((p) => p.ptsTime !== null && p.ptsTime < 0), "the cut has frames before 0 s");
      sources.push({ path: cut, gaps: [0, 0.001] });
      const spec = testSpec({ numFrames: 3, width: 8, height: 8 });
      for (const { path, gaps } of sources) {
        const windows = await windowsAfterFrames(path, gaps);
        const tally = decodeItems(
          demuxItems(path, path, { windows, spec, share: false }),
          (problem) => assert.fail(`${path}: ${problem}`),
        );
        assert.deepEqual(tally.failedBy, {}, path);
        assert.equal(tally.delivered, windows.length, path);
      }
    } finally {
      await Deno.remove(cut);
    }
  },
});

Deno.test({
  name:
    "delivery rule in the loader: a damaged file's clip that breaks it is failed and counted, both backends",
  ignore: !CLI,
  async fn() {
    // A MOV whose zeroed bytes leave the frames after its first undecodable: the clip the loader draws in the
    // row's range [0.29, 0.49) would show the frame at 0 s as the one on screen at its start, where the packets put
    // a later one. Found by the fuzzer (fixture clip-corrupt-frame-before-start).
    const dir = await Deno.makeTempDir({ prefix: "sluice-clip-check-" });
    try {
      const bad = `${dir}/damaged.mov`;
      await Deno.copyFile(`${FIXTURE_DIR}clip-corrupt-frame-before-start.bin`, bad);
      const good = await generateClip({ width: 96, height: 64, fps: 25, durationSec: 2, gop: 12 });
      const rows = ["path,label,start,end", `${bad},0,0.2895432103658095,0.4895432103658095`];
      for (let k = 0; k < 3; k++) rows.push(`${good},1,${0.2 * k},${0.2 * k + 0.4}`);
      await Deno.writeTextFile(`${dir}/m.csv`, rows.join("\n"));
      for (const backend of ["inprocess", "subprocess"] as const) {
        await using loader = await videoClassificationLoader({
          dataset: `${dir}/m.csv`,
          batchSize: 2,
          backend,
          clip: { numFrames: 3, width: 32, height: 16, maxPadFraction: 0 },
          onClipError: "skip",
          log: () => {},
        });
        const batches: Batch[] = [];
        for await (const b of loader) batches.push(b);
        const clips = loader.stats().clips;
        assertAccounted(clips, batches, 4, 1, false);
        assert.equal(clips.total.delivered, 3, backend);
        assert.equal(clips.total.failed, 1, backend);
        const [f] = clips.epochs[0].failures;
        assert.equal(f.errorName, "ClipIntegrityError", `${backend}: ${f.error}`);
        assert.match(f.error, /delivery rule \(window\): the first frame is presented at 0 s, before/);
        assert.ok(batches.flatMap((b) => b.clips).every((c) => c.path === good), backend);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
