import assert from "node:assert/strict";
import { InvalidArgumentError, MediaError, SluiceError } from "../../src/errors.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { probe } from "../../src/media/probe.ts";
import type { MediaInput } from "../../src/media/source.ts";
import { generateClip, hasFfmpegCliSync, sharedMedia, tempFile } from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();

/** Asserts that `p` rejects with a MediaError naming `source`, `operation` and a cause matching `reason`. */
async function rejectsMedia(
  p: Promise<unknown>,
  source: string,
  operation: string,
  reason: RegExp,
): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof MediaError, `expected MediaError, got ${e}`);
    assert.equal(e.source, source);
    assert.equal(e.operation, operation);
    assert.match(e.reason, reason);
    assert.ok(e.message.includes(source) && e.message.includes(operation), e.message);
    return true;
  });
}

Deno.test("missing file: MediaError with FFmpeg's ENOENT message, from probe and demux", async () => {
  const path = "/nonexistent/dir/clip.mp4";
  await rejectsMedia(probe(path), path, "avformat_open_input", /No such file or directory/);
  await rejectsMedia(demuxVideo(path), path, "avformat_open_input", /No such file or directory/);
});

Deno.test("empty file and empty bytes: MediaError", async () => {
  const path = await tempFile(".mp4");
  await Deno.writeFile(path, new Uint8Array(0));
  try {
    await rejectsMedia(probe(path), path, "avformat_open_input", /Invalid data|End of file/);
    await rejectsMedia(demuxVideo(path), path, "avformat_open_input", /Invalid data|End of file/);
  } finally {
    await Deno.remove(path);
  }
  await rejectsMedia(probe(new Uint8Array(0)), "<bytes 0>", "avformat_open_input", /empty/);
});

Deno.test("non-media bytes: MediaError naming the <bytes N> source", async () => {
  const text = new TextEncoder().encode("this is not a video\n".repeat(100));
  await rejectsMedia(probe(text), "<bytes 2000>", "avformat_open_input", /Invalid data/);
  await rejectsMedia(demuxVideo(text), "<bytes 2000>", "avformat_open_input", /Invalid data/);
});

Deno.test({
  name: "audio-only file: probe reports no video; demux and a non-video streamIndex give MediaError",
  ignore: !CLI,
  fn: async () => {
    const m4a = await generateClip({ audio: true, extraArgs: ["-vn"], container: "m4a" });
    const info = await probe(m4a);
    assert.equal(info.video, null);
    assert.equal(info.audio?.codec, "aac");
    await rejectsMedia(demuxVideo(m4a), m4a, "demux", /no video stream/);
    await rejectsMedia(demuxVideo(m4a, { streamIndex: 0 }), m4a, "demux", /stream 0 is audio, not video/);
    await rejectsMedia(demuxVideo(m4a, { streamIndex: 7 }), m4a, "demux", /stream 7 does not exist/);
  },
});

Deno.test({
  name: "truncated files: MP4 without its moov fails cleanly; faststart MP4 and MKV give the packets present",
  ignore: !CLI,
  fn: async () => {
    const plain = await Deno.readFile(await generateClip({ bframes: 2 }));
    const cut = plain.subarray(0, plain.length >> 1);
    await rejectsMedia(demuxVideo(cut), `<bytes ${cut.length}>`, "avformat_open_input", /Invalid data/);
    for (const spec of [{ extraArgs: ["-movflags", "+faststart"] }, { container: "mkv" }]) {
      const whole = await Deno.readFile(await generateClip({ bframes: 2, ...spec }));
      const full = await demuxVideo(whole);
      const half = await demuxVideo(whole.subarray(0, whole.length >> 1));
      assert.ok(
        half.numPackets > 0 && half.numPackets < full.numPackets,
        `${half.numPackets}/${full.numPackets}`,
      );
      for (let i = 0; i < half.numPackets - 1; i++) {
        assert.deepEqual(half.packet(i), full.packet(i), `packet ${i} intact`);
      }
      const win = await demuxVideo(whole.subarray(0, whole.length >> 1), { window: [0.3, 0.5] });
      assert.ok(win.numPackets > 0, "a window inside the part that survived");
    }
  },
});

Deno.test({
  name: "shared broken files: truncated-header MKV gives MediaError; corrupt-NAL MP4 demuxes all 50 packets",
  ignore: sharedMedia("broken_truncated_header.mkv") === null ||
    sharedMedia("broken_h264_corrupt_nal.mp4") === null,
  fn: async () => {
    const mkv = sharedMedia("broken_truncated_header.mkv")!;
    await rejectsMedia(probe(mkv), mkv, "avformat_open_input", /End of file/);
    await rejectsMedia(demuxVideo(mkv, { window: [0, 1] }), mkv, "avformat_open_input", /End of file/);
    const nal = sharedMedia("broken_h264_corrupt_nal.mp4")!;
    // The damage is inside one sample's payload: demuxing copies it faithfully; the decoder reports it.
    assert.equal((await demuxVideo(nal)).numPackets, 50);
  },
});

Deno.test({
  name: "windows outside the stream: MediaError naming the duration; malformed windows: InvalidArgumentError",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ durationSec: 2 });
    await rejectsMedia(
      demuxVideo(clip, { window: [5, 6] }),
      clip,
      "demux window",
      /file ends at 2 s \(stream 0: start 0 s \+ duration 2 s\), before the window \[5, 6\)/,
    );
    await rejectsMedia(
      demuxVideo(clip, { windows: [[0, 1], [2, 3]] }),
      clip,
      "demux window",
      /file ends at 2 s .*before the window \[2, 3\)/,
    );
    await rejectsMedia(demuxVideo(clip, { window: [-3, -1] }), clip, "demux window", /ends before/);
    for (const w of [[1, 1], [2, 1], [NaN, 1], [0, Infinity]]) {
      await assert.rejects(demuxVideo(clip, { window: w as [number, number] }), InvalidArgumentError);
    }
    await assert.rejects(demuxVideo(clip, { window: [0, 1], windows: [[0, 1]] }), InvalidArgumentError);
    const overlapping = await demuxVideo(clip, { window: [1.5, 10] });
    assert.ok(overlapping.numPackets > 0, "a window overlapping the end is clipped to the stream");
  },
});

Deno.test({
  name: "bitstream filters: unknown name and a filter for the wrong codec give MediaError",
  ignore: !CLI,
  fn: async () => {
    const vp9 = await generateClip({ codec: "libvpx-vp9", container: "webm", durationSec: 0.5 });
    await rejectsMedia(demuxVideo(vp9, { bsf: "no_such_bsf" }), vp9, "av_bsf_get_by_name", /unknown/);
    await rejectsMedia(
      demuxVideo(vp9, { bsf: "h264_mp4toannexb" }),
      vp9,
      "av_bsf_init(h264_mp4toannexb)",
      /./,
    );
  },
});

Deno.test({
  name: "randomly corrupted bytes never crash or hang: results or SluiceErrors only",
  ignore: !CLI,
  fn: async () => {
    const inputs: Uint8Array[] = [];
    for (const spec of [{ bframes: 2 }, { container: "mkv" }, { extraArgs: ["-movflags", "+faststart"] }]) {
      inputs.push(
        await Deno.readFile(await generateClip({ ...spec, durationSec: 1, width: 160, height: 120 })),
      );
    }
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    for (let iter = 0; iter < 60; iter++) {
      const b = inputs[iter % inputs.length].slice();
      const flips = 1 + (next() % 20);
      const region = iter % 2 === 0 ? Math.min(b.length, 4096) : b.length; // headers half the time
      for (let k = 0; k < flips; k++) b[next() % region] = next() & 0xff;
      for (
        const run of [
          () => probe(b as MediaInput),
          () => demuxVideo(b),
          () => demuxVideo(b, { window: [0.3, 0.7] }),
        ]
      ) {
        try {
          await run();
        } catch (e) {
          assert.ok(e instanceof SluiceError, `iteration ${iter}: ${e}`);
        }
      }
    }
  },
});
