/**
 * The decoded frame's flags through the accessors, on whichever FFmpeg is loaded (scripts/ffmpeg/test_releases.sh
 * runs this on 4.3, 7.1 and 8.1): key frame and interlacing come from `AVFrame.key_frame` / `interlaced_frame`
 * before 6.1 and from `AVFrame.flags` from 6.1 (the fields are gone in 8.0), picture type from `pict_type`. Each
 * frame of a progressive and of an interlaced (MBAFF, top field first) H.264 clip is compared with ffprobe's
 * `key_frame`, `interlaced_frame` and `pict_type`.
 */
import assert from "node:assert/strict";
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { CodecContext, Frame, InputContext, Packet } from "../../src/media/av_objects.ts";
import { codecpar, formatContext, frame, packet, type Ptr, stream } from "../../src/media/structs.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { cstr } from "../../ffi/cstring.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { ffprobeJson, generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();
const PICT = ["?", "I", "P", "B", "S", "SI", "SP", "BI"];

interface Flags {
  key: boolean;
  interlaced: boolean;
  pict: string;
}

/** Every frame of stream 0 of `path`, decoded here, read through `frame.*`. */
function decodeFlags(path: string): Flags[] {
  const f = ffmpeg();
  const ctxOut = new OutParam();
  assert.equal(f.avformat.avformat_open_input(ctxOut.bytes, cstr(path), null, null), 0);
  using fmt = new InputContext(ctxOut.pointer as Ptr);
  assert.ok(f.avformat.avformat_find_stream_info(fmt.ptr, null) >= 0);
  const par = stream.codecpar(formatContext.stream(fmt.ptr, 0));
  const codec = f.avcodec.avcodec_find_decoder(codecpar.codecId(par));
  assert.ok(codec !== null);
  using ctx = new CodecContext(codec);
  assert.equal(f.avcodec.avcodec_parameters_to_context(ctx.ptr, par), 0);
  assert.equal(f.avcodec.avcodec_open2(ctx.ptr, codec, null), 0);
  using pkt = new Packet();
  using fr = new Frame();
  const out: Flags[] = [];
  const drain = () => {
    for (;;) {
      const rc = f.avcodec.avcodec_receive_frame(ctx.ptr, fr.ptr);
      if (rc === AVERROR_EAGAIN || rc === AVERROR_EOF) return;
      assert.ok(rc >= 0, `receive ${rc}`);
      out.push({
        key: frame.keyFrame(fr.ptr),
        interlaced: frame.interlaced(fr.ptr),
        pict: PICT[frame.pictType(fr.ptr)],
      });
      fr.unref();
    }
  };
  while (f.avformat.av_read_frame(fmt.ptr, pkt.ptr) >= 0) {
    if (packet.streamIndex(pkt.ptr) === 0) f.avcodec.avcodec_send_packet(ctx.ptr, pkt.ptr);
    pkt.unref();
    drain();
  }
  f.avcodec.avcodec_send_packet(ctx.ptr, null);
  drain();
  return out;
}

async function probeFlags(path: string): Promise<Flags[]> {
  const j = await ffprobeJson(path, [
    "-select_streams",
    "0",
    "-show_entries",
    "frame=key_frame,interlaced_frame,pict_type",
    "-show_frames",
  ]);
  return (j.frames as Record<string, unknown>[]).map((f) => ({
    key: Number(f.key_frame) === 1,
    interlaced: Number(f.interlaced_frame) === 1,
    pict: String(f.pict_type),
  }));
}

for (
  const [name, extraArgs] of [
    ["progressive", []],
    ["interlaced (MBAFF, tff)", ["-flags", "+ilme+ildct", "-x264opts", "tff=1"]],
  ] as const
) {
  Deno.test({
    name:
      `frame flags: key frame, interlacing and picture type of a ${name} H.264 clip = ffprobe's, frame by frame`,
    ignore: !CLI,
    fn: async () => {
      const clip = await generateClip({
        codec: "libx264",
        width: 64,
        height: 48,
        durationSec: 2,
        gop: 12,
        bframes: 2,
        extraArgs: [...extraArgs],
      });
      const ours = decodeFlags(clip), oracle = await probeFlags(clip);
      assert.equal(ours.length, oracle.length);
      assert.deepEqual(ours, oracle);
      assert.ok(ours.filter((f) => f.key).length >= 4, "several key frames (gop 12, 2 s)");
      assert.ok(ours.some((f) => f.pict === "B"), "B-frames");
      assert.equal(ours.every((f) => f.interlaced), name !== "progressive");
    },
  });
}
