import { OutParam } from "../../ffi/out_param.ts";
import assert from "node:assert/strict";
import { CodecContext, Frame, nativeObjectCounts, Packet } from "../../src/media/av_objects.ts";
import { frame, packet } from "../../src/media/structs.ts";
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { SluiceError } from "../../src/errors.ts";

Deno.test("owned objects: released once, use after release is a SluiceError", () => {
  const p = new Packet();
  assert.equal(p.released, false);
  p[Symbol.dispose]();
  assert.equal(p.released, true);
  p[Symbol.dispose](); // second release is a no-op, not a double free
  assert.throws(() => p.ptr, (e: unknown) => e instanceof SluiceError && /Packet used after/.test(e.message));
});

Deno.test("owned objects: `using` releases at the end of the scope", () => {
  let seen: Frame;
  {
    using f = new Frame();
    seen = f;
    // A fresh AVFrame has no format and no timestamp, as av_frame_alloc documents.
    assert.equal(frame.format(f.ptr), -1);
    assert.equal(frame.pts(f.ptr), null);
  }
  assert.equal(seen.released, true);
});

Deno.test("owned objects: av_new_packet payload is visible through the accessors", () => {
  using p = new Packet();
  assert.equal(ffmpeg().avcodec.av_new_packet(p.ptr, 100), 0);
  assert.equal(packet.size(p.ptr), 100);
  assert.notEqual(packet.data(p.ptr), null);
  packet.setTiming(p.ptr, 42n, null, 3n, 1);
  assert.equal(packet.pts(p.ptr), 42n);
  assert.equal(packet.dts(p.ptr), null);
  assert.equal(packet.duration(p.ptr), 3n);
  assert.equal(packet.flags(p.ptr), 1);
  p.unref();
  assert.equal(packet.size(p.ptr), 0);
});

Deno.test("owned objects: a codec context for a decoder found by name", () => {
  const { avcodec } = ffmpeg();
  const codec = avcodec.avcodec_find_decoder_by_name(new TextEncoder().encode("h264\0"));
  assert.notEqual(codec, null);
  using ctx = new CodecContext(codec);
  assert.notEqual(ctx.ptr, null);
});

Deno.test("pointer slots round-trip a pointer value", () => {
  const p = Deno.UnsafePointer.create(0x1234_5678n);
  assert.equal(Deno.UnsafePointer.value(new OutParam(p).pointer), 0x1234_5678n);
  assert.equal(new OutParam().pointer, null);
});

Deno.test("owned objects: live counts per class follow allocation and release", () => {
  const live = (k: string) => nativeObjectCounts().live[k] ?? 0;
  const packets = live("AVPacket"), frames = live("AVFrame");
  const p1 = new Packet(), p2 = new Packet();
  {
    using _f = new Frame();
    assert.equal(live("AVFrame"), frames + 1);
  }
  assert.equal(live("AVFrame"), frames);
  assert.equal(live("AVPacket"), packets + 2);
  p1[Symbol.dispose]();
  p1[Symbol.dispose]();
  assert.equal(live("AVPacket"), packets + 1, "a second release is not counted twice");
  p2[Symbol.dispose]();
  assert.equal(live("AVPacket"), packets);
  assert.equal(nativeObjectCounts().finalized.AVPacket ?? 0, 0, "nothing was left to the safety net");
});
