import assert from "node:assert/strict";
import { cstr } from "../../ffi/cstring.ts";
import { MediaError, ProtocolError } from "../../src/errors.ts";
import { checkCodecParams, codecParamsProblem } from "../../src/media/codec_params.ts";
import { Decoder } from "../../src/media/decoder.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { ffprobeInfo, generateClip, hasFfmpegCliSync, lacksDecoder } from "../helpers/media.ts";

const noCli = !hasFfmpegCliSync();
const FORGED = new URL("./fixtures/forged_decode.ts", import.meta.url).pathname;

/** Runs the forged-packets fixture in its own process; returns its exit status and its one line of output. */
async function forgedDecode(
  kind: string,
  clip: string,
): Promise<{ code: number; signal: string | null; line: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", FORGED, kind, clip],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim() + new TextDecoder().decode(out.stderr).trim();
  return { code: out.code, signal: out.signal, line: text };
}

const mpeg2 = () =>
  generateClip({ codec: "mpeg2video", container: "ts", width: 160, height: 120, durationSec: 1 });

Deno.test({
  name:
    "MPEG-2 packets with bitsPerRawSample 9/10/12/16 are a MediaError, not heap corruption (child process)",
  ignore: noCli,
  async fn() {
    const clip = await mpeg2();
    for (const bits of [9, 10, 12, 16]) {
      const r = await forgedDecode(`bits:${bits}`, clip);
      assert.equal(r.signal, null, `bits ${bits}: the decoding process was killed by ${r.signal}: ${r.line}`);
      assert.equal(r.code, 0, `bits ${bits}: ${r.line}`);
      assert.match(
        r.line,
        new RegExp(`^threw MediaError: .*codec parameters failed: bitsPerRawSample ${bits} `),
      );
    }
    // The same clip with its own value decodes.
    assert.match((await forgedDecode("bits:0", clip)).line, /^frames 25$/);
  },
});

Deno.test({
  name: "a 10-bit pixel format on an 8-bit-only codec is refused too (the IDCT follows bitsPerRawSample)",
  ignore: noCli,
  async fn() {
    const clip = await mpeg2();
    const p10 = ffmpeg().avutil.av_get_pix_fmt(cstr("yuv420p10le"));
    const r = await forgedDecode(`format:${p10}/10`, clip);
    assert.equal(r.signal, null, r.line);
    assert.match(
      r.line,
      /^threw MediaError: .*format yuv420p10le has 10-bit samples; FFmpeg decodes mpeg2video at 8/,
    );
  },
});

Deno.test({
  name: "forged wrapped_avframe packets (pointers in packet bytes) never reach FFmpeg (child process)",
  ignore: noCli,
  async fn() {
    const r = await forgedDecode("wrapped_avframe", await mpeg2());
    assert.equal(r.signal, null, `killed by ${r.signal}: ${r.line}`);
    assert.match(r.line, /^threw MediaError: .*codecId 135169 is not a video codec id/);
  },
});

/** Clips of the codecs and pixel formats users have; what ffprobe reports for each must pass the checks. */
const CLIPS = [
  { codec: "libx264", container: "mp4", pixFmt: "yuv420p" },
  { codec: "libx264", container: "mkv", pixFmt: "yuv420p10le" },
  { codec: "libx265", container: "mov", pixFmt: "yuv422p10le" },
  { codec: "libvpx-vp9", container: "webm", pixFmt: "yuv420p10le" },
  { codec: "mpeg4", container: "avi", pixFmt: "yuv420p" },
  { codec: "mpeg2video", container: "ts", pixFmt: "yuv422p" },
  { codec: "mjpeg", container: "avi", pixFmt: "yuvj422p" },
  { codec: "prores_ks", container: "mov", pixFmt: "yuv444p10le" },
  { codec: "ffv1", container: "mkv", pixFmt: "yuv420p12le" },
  { codec: "png", container: "mov", pixFmt: "rgb48be" },
];

Deno.test({
  name: "what FFmpeg's demuxers produce passes: demuxed packets with ffprobe's pixel format and depth decode",
  ignore: noCli,
  async fn() {
    const { decodeVideo } = await import("../../src/media/decode.ts");
    for (const spec of CLIPS) {
      if (spec.codec === "png" && lacksDecoder("png")) continue;
      const clip = await generateClip({ ...spec, width: 96, height: 64, durationSec: 0.4 });
      const st = (await ffprobeInfo(clip)).streams.find((s) => s.codec_type === "video")!;
      const p = await demuxVideo(clip);
      const format = ffmpeg().avutil.av_get_pix_fmt(cstr(st.pix_fmt!));
      const bits = Number(st.bits_per_raw_sample ?? 0) || 0;
      const q = VideoPackets.deserialize(
        new VideoPackets({ ...p, format, bitsPerRawSample: bits }).serialize(),
      );
      assert.doesNotThrow(() => checkCodecParams(q), `${spec.codec} ${spec.pixFmt}`);
      const frames = await decodeVideo(q, { width: 16, height: 16 });
      assert.equal(frames.shape[0], 10, `${spec.codec} ${spec.pixFmt}`);
    }
  },
});

Deno.test({
  name: "every out-of-range field is refused, naming it: MediaError before FFmpeg, ProtocolError at its byte",
  ignore: noCli,
  async fn() {
    const p = await demuxVideo(await generateClip({ width: 64, height: 48, durationSec: 0.4 }));
    checkCodecParams(p);
    const cases: [Partial<VideoPackets>, string, number | null][] = [
      [{ codecId: 0 }, "codecId", 36],
      [{ codecId: 0x10000 }, "codecId", 36], // first audio codec
      [{ codecId: 0x21001 }, "codecId", 36], // wrapped_avframe
      [{ codecId: 0xfff0 }, "codecId", null], // in range, unknown to FFmpeg
      [{ codec: "hevc" }, "codec", null],
      [{ width: -1 }, "width", 52],
      [{ height: -5 }, "height", 56],
      [{ width: 20000, height: 20000 }, "width", 52],
      [{ format: -2 }, "format", 60],
      [{ format: 1000 }, "format", null], // no such pixel format in this FFmpeg
      [{ format: ffmpeg().avutil.av_get_pix_fmt(cstr("vaapi")) }, "format", null], // hardware format
      [{ bitsPerRawSample: -1 }, "bitsPerRawSample", 64],
      [{ bitsPerRawSample: 33 }, "bitsPerRawSample", 64],
      [{ bitsPerRawSample: 10 }, "bitsPerRawSample", null], // format unknown (-1): at most 8
      [{ format: 0, bitsPerRawSample: 10 }, "bitsPerRawSample", null], // yuv420p is 8-bit
      [{ profile: -1 }, "profile", 44],
      [{ level: 70000 }, "level", 48],
      [{ sampleAspectRatio: [-1, 1] }, "sampleAspectRatio", 96],
      [{ fieldOrder: 6 }, "fieldOrder", 68],
      [{ colorRange: 3 }, "colorRange", 72],
      [{ colorPrimaries: -1 }, "colorPrimaries", 76],
      [{ colorTrc: 19 }, "colorTrc", 80],
      [{ colorSpace: 18 }, "colorSpace", 84],
      [{ chromaLocation: 7 }, "chromaLocation", 88],
    ];
    for (const [change, field, offset] of cases) {
      const bad = new VideoPackets({ ...p, ...change });
      const what = JSON.stringify(change);
      assert.throws(() => checkCodecParams(bad), (e: unknown) => {
        assert.ok(e instanceof MediaError, `${what}: ${e}`);
        assert.equal(e.operation, "codec parameters");
        assert.ok(e.message.startsWith(`${p.source}: `), e.message);
        assert.ok(e.reason.startsWith(`${field} `), `${what}: ${e.reason}`);
        return true;
      });
      assert.equal(codecParamsProblem(bad)?.field ?? null, offset === null ? null : field, what);
      if (offset === null) continue;
      assert.throws(() => VideoPackets.deserialize(bad.serialize()), (e: unknown) => {
        assert.ok(e instanceof ProtocolError, `${what}: ${e}`);
        assert.equal(e.offset, offset, what);
        return true;
      });
    }
  },
});

Deno.test({
  name: "the decoder cache key changes with every field the decoder copies, the time base and the threads",
  ignore: noCli,
  async fn() {
    const p = await demuxVideo(await generateClip({ width: 64, height: 48, durationSec: 0.4 }));
    const key = Decoder.keyOf(p, 1);
    assert.equal(Decoder.keyOf(new VideoPackets({ ...p }), 1), key);
    const changes: Partial<VideoPackets>[] = [
      { codecId: p.codecId + 1 },
      { codecTag: p.codecTag + 1 },
      { format: p.format + 1 },
      { bitsPerRawSample: p.bitsPerRawSample + 1 },
      { profile: p.profile + 1 },
      { level: p.level + 1 },
      { width: p.width + 1 },
      { height: p.height + 1 },
      { sampleAspectRatio: [p.sampleAspectRatio[0] + 1, p.sampleAspectRatio[1]] },
      { sampleAspectRatio: [p.sampleAspectRatio[0], p.sampleAspectRatio[1] + 1] },
      { fieldOrder: p.fieldOrder + 1 },
      { colorRange: p.colorRange + 1 },
      { colorPrimaries: p.colorPrimaries + 1 },
      { colorTrc: p.colorTrc + 1 },
      { colorSpace: p.colorSpace + 1 },
      { chromaLocation: p.chromaLocation + 1 },
      { extradata: Uint8Array.of(...p.extradata, 0) },
      { timeBase: [p.timeBase[0], p.timeBase[1] + 1] },
    ];
    for (const c of changes) {
      assert.notEqual(
        Decoder.keyOf(new VideoPackets({ ...p, ...c }), 1),
        key,
        JSON.stringify(Object.keys(c)),
      );
    }
    assert.notEqual(Decoder.keyOf(p, 2), key);
  },
});
