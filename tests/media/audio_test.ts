/**
 * Clip audio (issue 25 item 3): each window's samples, decoded in the demux's open of the file, resampled and
 * mixed by libswresample, equal PyAV's decode + `AudioResampler` of the whole track cut to the same window
 * (within 1e-3 RMS) for AAC, Opus, MP3 and AC-3; zeros and "missing" without an audio track; "short" and
 * zeros past the end of a track that ends early.
 */
import assert from "node:assert/strict";
import { demuxGroupsSync, type TimeWindow } from "../../src/media/demux.ts";
import { audioSampleRange, checkAudioSpec, type ClipAudio } from "../../src/media/audio.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { ffprobeJson, hasFfmpegCliSync, tempFile } from "../helpers/media.ts";
import {
  audioSource,
  type AudioSourceSpec,
  hasPyav,
  pyavAudio,
  rms,
  rmsDiff,
} from "../helpers/audio_oracle.ts";

const READY = hasFfmpegCliSync() && hasPyav();
/** Windows inside the track: one at its start, one that starts between samples, a few across packet edges. */
const WINDOWS: TimeWindow[] = [[0, 0.64], [1.0, 1.5], [0.3313, 1.2101], [2.04, 2.68], [1.7, 1.9]];

function demuxAudio(path: string, windows: TimeWindow[], sampleRate: number, channels: number): ClipAudio[] {
  const { audio, failures } = demuxGroupsSync(path, {
    windows,
    join: () => false,
    audio: { sampleRate, channels },
  });
  assert.deepEqual(failures, windows.map(() => null));
  return audio!.map((a) => a!);
}

async function assertMatchesPyav(spec: AudioSourceSpec, rate: number, channels: number): Promise<void> {
  const path = await audioSource(spec);
  const ours = demuxAudio(path, WINDOWS, rate, channels);
  const ref = await pyavAudio(path, rate, channels, WINDOWS);
  assert.equal(ref.first, 0, "the oracle's track starts at 0 s: its grid is the rule's");
  WINDOWS.forEach(([s, e], i) => {
    const what = `${spec.codec} ${spec.channels ?? 2}ch → ${channels}ch @${rate}, window [${s}, ${e})`;
    assert.equal(ours[i].status, "ok", `${what}: ${ours[i].reason}`);
    assert.equal(ours[i].samples.length, channels * Math.round((e - s) * rate), what);
    assert.ok(rms(ref.windows[i]) > 0.1, `${what}: the oracle holds the tone`);
    const err = rmsDiff(ours[i].samples, ref.windows[i]);
    assert.ok(err < 1e-3, `${what}: RMS difference ${err}`);
  });
}

for (
  const [codec, container] of [["aac", "mp4"], ["libopus", "mp4"], ["libmp3lame", "mp4"], ["ac3", "mp4"]]
) {
  Deno.test({
    name: `audio: ${codec} in ${container}, stereo → mono and stereo at 16 kHz equal PyAV's within 1e-3 RMS`,
    ignore: !READY,
    fn: async () => {
      await assertMatchesPyav({ codec, container }, 16000, 1);
      await assertMatchesPyav({ codec, container }, 16000, 2);
    },
  });
}

Deno.test({
  name: "audio: a mono track → 2 channels and an upsample to 48 kHz equal PyAV's",
  ignore: !READY,
  fn: async () => {
    await assertMatchesPyav({ codec: "aac", container: "mp4", channels: 1, rate: 22050 }, 48000, 2);
  },
});

Deno.test({
  name: 'audio: a video without an audio track gives zeros and "missing"; the video windows are served',
  ignore: !READY,
  fn: async () => {
    const path = await audioSource({});
    const out = demuxAudio(path, [[0.5, 1.0], [1.0, 2.2]], 16000, 2);
    for (const a of out) {
      assert.equal(a.status, "missing");
      assert.ok(a.samples.every((x) => x === 0));
    }
    assert.equal(out[0].samples.length, 2 * 8000);
    assert.equal(out[1].samples.length, 2 * 19200);
  },
});

Deno.test({
  name: 'audio: a track that ends inside the window gives its samples, then zeros, and "short"',
  ignore: !READY,
  fn: async () => {
    const spec = { codec: "ac3", container: "mp4", videoSec: 3, audioSec: 1.5 };
    const path = await audioSource(spec);
    const windows: TimeWindow[] = [[1.0, 2.0], [0.2, 1.2], [2.2, 2.8]];
    const [across, inside, after] = demuxAudio(path, windows, 16000, 1);
    const ref = await pyavAudio(path, 16000, 1, windows);
    assert.equal(inside.status, "ok");
    assert.equal(across.status, "short");
    assert.equal(after.status, "short");
    assert.ok(after.samples.every((x) => x === 0));
    assert.ok(rmsDiff(across.samples, ref.windows[0]) < 1e-3, "the track's part equals PyAV's");
    // PyAV's track ends where ours does: past it, both are zeros.
    const end = across.samples.findLastIndex((x) => x !== 0);
    assert.ok(end > 7000 && end < 9000, `last sample ${end} near 1.5 s`);
    assert.ok(across.samples.subarray(end + 1).every((x) => x === 0));
  },
});

Deno.test({
  name:
    "audio: a window's samples do not depend on the windows decoded before it in the same open (AAC, AC-3)",
  ignore: !READY,
  fn: async () => {
    // AAC's noise substitution and AC-3's dither draw from a generator a decoder flush keeps.
    for (const codec of ["aac", "ac3"]) {
      const path = await audioSource({ codec, container: "mp4" });
      const w: TimeWindow = [1.279, 2.079];
      const [alone] = demuxAudio(path, [w], 16000, 1);
      for (const other of [[1.638, 2.438], [0.105, 0.905]] as TimeWindow[]) {
        const [, after] = demuxAudio(path, [other, w], 16000, 1);
        const i = after.samples.findIndex((x, k) => x !== alone.samples[k]);
        assert.equal(i, -1, `${codec}: ${w} after ${other}: sample ${i} differs`);
      }
    }
  },
});

Deno.test({
  name: "audio: windows of one open, sought back and forth, equal PyAV's in MKV (AC-3, AAC) and AVI (MP3)",
  ignore: !READY,
  fn: async () => {
    // Matroska's cues index only the video: with the video discarded, FFmpeg's default seek stream (-1) was the
    // audio one, and once the video demux had read past the last keyframe a seek back landed clusters late
    // ("short", all zeros, where PyAV and the ffmpeg CLI decode sound: issue 30 item 1).
    // Rates whose frames last whole milliseconds (AC-3 1536 samples at 48 kHz, AAC 1024 at 32 kHz): Matroska's
    // millisecond timestamps then place every frame exactly (see docs/clips.md, "Limit").
    const windows: TimeWindow[] = [[6.64, 6.8], [9.57, 9.73], [2.01, 2.5], [0.1, 0.3]];
    for (
      const spec of [
        { codec: "ac3", container: "mkv", rate: 48000, videoSec: 10 },
        { codec: "aac", container: "mkv", rate: 32000, videoSec: 10 },
        { codec: "libmp3lame", container: "avi", videoSec: 10 },
      ]
    ) {
      const path = await audioSource(spec);
      const ours = demuxAudio(path, windows, 16000, 1);
      const ref = await pyavAudio(path, 16000, 1, windows);
      windows.forEach((w, i) => {
        const what = `${spec.codec} in ${spec.container}, window ${w} after ${windows.slice(0, i).join(" ")}`;
        assert.equal(ours[i].status, "ok", `${what}: ${ours[i].reason}`);
        assert.ok(rms(ref.windows[i]) > 0.1, `${what}: the oracle holds the tone`);
        const err = rmsDiff(ours[i].samples, ref.windows[i]);
        assert.ok(err < 1e-3, `${what}: RMS difference ${err}`);
      });
    }
  },
});

Deno.test({
  name:
    "audio: windows in a Matroska file's first milliseconds equal PyAV's: Opus's first block, before the video's",
  ignore: !READY,
  fn: async () => {
    // Opus's codec delay puts the track's first block at -7 ms, before the video's first keyframe (7 ms), where
    // the cues start: a Matroska seek lands no earlier than the first cue and drops the blocks before it, by
    // either stream's index, so the audio started with the next block, 14 ms on ("short", the first 21 ms
    // zeros). Windows before the resampler's margin (50 ms) are placed by the track's first frame: exact.
    const path = await audioSource({ codec: "libopus", container: "mkv" });
    const probe = await ffprobeJson(path, ["-show_packets", "-show_entries", "packet=stream_index,pts_time"]);
    const [first, second] = probe.packets as { stream_index: number; pts_time: string }[];
    assert.ok(
      first.stream_index === 1 && Number(first.pts_time) < 0 && second.stream_index === 0,
      "the audio's first block precedes the video's first packet",
    );
    for (const windows of [[[0, 0.2]], [[0.007, 0.3]], [[2, 2.5], [0.007, 0.2], [0.045, 0.3], [0, 0.64]]]) {
      const ours = demuxAudio(path, windows as TimeWindow[], 16000, 2);
      const ref = await pyavAudio(path, 16000, 2, windows as TimeWindow[]);
      windows.forEach((w, i) => {
        if (w[0] >= 0.05) return; // a frame placed by its millisecond timestamp: see docs/clips.md, "Limit"
        const what = `window ${w} after ${windows.slice(0, i).join(" ")}`;
        assert.equal(ours[i].status, "ok", `${what}: ${ours[i].reason}`);
        const err = rmsDiff(ours[i].samples, ref.windows[i]);
        assert.ok(err < 1e-3, `${what}: RMS difference ${err}`);
      });
    }
  },
});

Deno.test("audio: the window rule and the spec check", () => {
  assert.deepEqual(audioSampleRange(16000, 1.0, 1.5), [16000, 8000]);
  // Windows of one length hold one count of samples wherever they start.
  assert.equal(audioSampleRange(16000, 0.33131, 0.97131)[1], audioSampleRange(16000, 2, 2.64)[1]);
  assert.deepEqual(checkAudioSpec({ sampleRate: 16000, channels: 1 }), { sampleRate: 16000, channels: 1 });
  for (
    const bad of [null, {}, { sampleRate: 16000 }, { sampleRate: 0, channels: 1 }, {
      sampleRate: 8e3,
      channels: 9,
    }]
  ) {
    assert.throws(() => checkAudioSpec(bad), InvalidArgumentError);
  }
});

Deno.test({
  name: 'audio: a corrupt audio packet in the window gives zeros and "error"; the video window is served',
  ignore: !READY,
  fn: async () => {
    const path = await audioSource({ codec: "ac3", container: "mp4" });
    const probe = await ffprobeJson(path, ["-select_streams", "a", "-show_packets"]);
    const packets = probe.packets as { pts_time: string; pos: string }[];
    const bytes = await Deno.readFile(path);
    // Break the sync word of the AC-3 frames presented in [1.2, 1.3).
    let broken = 0;
    for (const p of packets) {
      const t = Number(p.pts_time);
      if (t >= 1.2 && t < 1.3) {
        bytes.fill(0, Number(p.pos), Number(p.pos) + 2);
        broken++;
      }
    }
    assert.ok(broken > 0);
    const copy = await tempFile(".mp4");
    try {
      await Deno.writeFile(copy, bytes);
      const [bad, good] = demuxAudio(copy, [[1.0, 1.5], [2.0, 2.5]], 16000, 1);
      assert.equal(bad.status, "error", bad.reason);
      assert.ok(bad.samples.every((x) => x === 0));
      assert.equal(good.status, "ok");
    } finally {
      await Deno.remove(copy);
    }
  },
});
