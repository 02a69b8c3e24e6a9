/**
 * End-to-end check of the layout table in use: open real files with `avformat_open_input`, read
 * AVFormatContext / AVStream / AVCodecParameters fields through the typed accessors, and compare with ffprobe.
 */
import assert from "node:assert/strict";
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { InputContext } from "../../src/media/av_objects.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { codecpar, formatContext, type Ptr, stream } from "../../src/media/structs.ts";
import { cstr, readCString } from "../../ffi/cstring.ts";
import { acceptedContainerDurations, ffprobeInfo, sharedMedia } from "../helpers/media.ts";

const AVMEDIA_TYPES = ["video", "audio", "data", "subtitle", "attachment"];

function open(path: string): InputContext {
  const f = ffmpeg();
  const out = new OutParam();
  const rc = f.avformat.avformat_open_input(out.bytes, cstr(path), null, null);
  assert.equal(rc, 0, `avformat_open_input(${path}) = ${rc}`);
  const ctx = new InputContext(out.pointer as Ptr);
  assert.ok(f.avformat.avformat_find_stream_info(ctx.ptr, null) >= 0);
  return ctx;
}

/** "1/90000" → [1, 90000]. */
const ratio = (s: string): [number, number] => s.split("/").map(Number) as [number, number];

async function compareWithFfprobe(path: string): Promise<void> {
  const probe = await ffprobeInfo(path);
  using ctx = open(path);
  const n = formatContext.nbStreams(ctx.ptr);
  assert.equal(n, probe.format.nb_streams);
  assert.equal(n, probe.streams.length);
  if (probe.format.duration !== undefined) {
    const us = Number(formatContext.duration(ctx.ptr));
    const accepted = acceptedContainerDurations(probe);
    assert.ok(accepted.some((d) => Math.abs(us - d * 1e6) <= 1), `duration ${us} µs, not one of ${accepted}`);
  }
  assert.equal(probe.format.format_name, formatContext.formatName(ctx.ptr));
  for (let i = 0; i < n; i++) {
    const st = formatContext.stream(ctx.ptr, i);
    const want = probe.streams[i];
    assert.equal(stream.index(st), want.index);
    assert.deepEqual(stream.timeBase(st), ratio(want.time_base), `stream ${i} time_base`);
    assert.deepEqual(stream.avgFrameRate(st), ratio(want.avg_frame_rate), `stream ${i} avg_frame_rate`);
    const par = stream.codecpar(st);
    assert.equal(AVMEDIA_TYPES[codecpar.codecType(par)], want.codec_type, `stream ${i} codec_type`);
    const name = readCString(ffmpeg().avcodec.avcodec_get_name(codecpar.codecId(par)));
    assert.equal(name, want.codec_name, `stream ${i} codec name`);
    if (want.codec_type === "video") {
      assert.equal(codecpar.width(par), want.width, `stream ${i} width`);
      assert.equal(codecpar.height(par), want.height, `stream ${i} height`);
    }
  }
}

const SHARED = ["h264_nasa_bframes_aac.mp4", "vp9_odd_161x121.webm", "h264_opus_pancake.mkv", "av1_aac.mp4"];
for (const file of SHARED) {
  const path = sharedMedia(file);
  Deno.test({
    name: `structs: ${file} read through the layout table agrees with ffprobe`,
    ignore: path === null,
    fn: () => compareWithFfprobe(path!),
  });
}

Deno.test("structs: a generated 2-stream clip read through the layout table agrees with ffprobe", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-structs-" });
  try {
    const path = `${dir}/clip.mkv`;
    const out = await new Deno.Command("ffmpeg", {
      args: [
        ...["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=176x144:rate=25", "-f", "lavfi"],
        ...["-i", "sine=frequency=440:sample_rate=22050", "-t", "1", "-c:v", "mpeg4", "-c:a", "pcm_s16le"],
        path,
      ],
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    await compareWithFfprobe(path);
    using ctx = open(path);
    const audio = stream.codecpar(formatContext.stream(ctx.ptr, 1));
    assert.equal(codecpar.sampleRate(audio), 22050);
    assert.equal(codecpar.width(stream.codecpar(formatContext.stream(ctx.ptr, 0))), 176);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
