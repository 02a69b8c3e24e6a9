/**
 * Rotation as a player shows it: `decodeVideo(..., { rotate: true })` against the ffmpeg CLI's autorotate (its
 * default), byte for byte in yuv420p (a quarter turn of each plane is exact on both sides), on the shared phone
 * clip (display matrix -90) and on copies of a generated clip tagged `rotate=90` / `rotate=270` / `rotate=180`.
 * Also: `codedRect` maps a region of the turned image to the coded region that turns into it.
 */
import assert from "node:assert/strict";
import { demuxVideo } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { codedRect, orientedSize, orientPlane } from "../../src/media/orient.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";
import {
  ffprobeInfo,
  generateClip,
  hasFfmpegCliSync,
  runCli,
  sharedMedia,
  tempFile,
} from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();
const PHONE = sharedMedia("h264_rot90_3frames.mov");

async function autorotated(path: string): Promise<Uint8Array> {
  const r = await runCli("ffmpeg", [
    "-v",
    "error",
    "-threads",
    "1",
    "-i",
    path,
    "-map",
    "0:v:0",
    "-pix_fmt",
    "yuv420p",
    "-vsync",
    "passthrough",
    "-f",
    "rawvideo",
    "-",
  ]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

async function assertAsPlayer(path: string, rotation: number): Promise<void> {
  const packets = await demuxVideo(path);
  assert.equal(packets.rotation, rotation, `${path}: rotation`);
  const frames = await decodeVideo(packets, { pixelFormat: "yuv420p", rotate: true });
  assert.equal(frames.rotated, rotation !== 0);
  const [w, h] = orientedSize(packets.width, packets.height, rotation);
  assert.deepEqual([frames.width, frames.height], [w, h]);
  const cli = await autorotated(path);
  assert.equal(frames.data.length, cli.length, `${path}: frame bytes`);
  assert.ok(sameBytes(frames.data, cli), `${path}: frames equal ffmpeg's autorotate`);
  const raw = await decodeVideo(packets, { pixelFormat: "yuv420p", rotate: false });
  assert.deepEqual(
    [raw.width, raw.height],
    [packets.width, packets.height],
    "rotate: false keeps coded pixels",
  );
}

Deno.test({
  name: "rotation: the shared phone clip (display matrix -90) = ffmpeg autorotate, byte for byte",
  ignore: !CLI || PHONE === null,
  fn: () => assertAsPlayer(PHONE!, -90),
});

Deno.test({
  name: "rotation: clips tagged rotate=90/180/270 = ffmpeg autorotate, byte for byte",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ width: 96, height: 64, durationSec: 1, bframes: 2 });
    for (const tag of [90, 180, 270]) {
      const out = await tempFile(".mp4");
      try {
        const r = await runCli("ffmpeg", [
          "-v",
          "error",
          "-i",
          clip,
          "-c",
          "copy",
          "-metadata:s:v:0",
          `rotate=${tag}`,
          "-y",
          out,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const probed = await ffprobeInfo(out);
        const rotation = probed.streams[0].side_data_list?.find((d) => d.rotation !== undefined)?.rotation;
        assert.ok(rotation !== undefined && rotation !== 0, `ffprobe reports a rotation for rotate=${tag}`);
        await assertAsPlayer(out, rotation);
      } finally {
        await Deno.remove(out).catch(() => {});
      }
    }
  },
});

Deno.test("codedRect: the coded region turns into the region asked for, for every quarter turn and mirror", () => {
  const W = 7, H = 5;
  const coded = new Uint8Array(W * H).map((_, i) => i);
  for (const deg of [0, 90, 180, 270]) {
    for (const mirror of [false, true]) {
      const [ow, oh] = orientedSize(W, H, deg);
      const turned = new Uint8Array(ow * oh);
      orientPlane(
        { data: coded, width: W, height: H, stride: W, bytesPerPixel: 1 },
        { data: turned, width: ow, height: oh, stride: ow, bytesPerPixel: 1 },
        deg,
        mirror,
      );
      const rect: [number, number, number, number] = [1, 2, 3, 2];
      const [x, y, w, h] = codedRect(rect, W, H, deg, mirror);
      // Every pixel of the asked region of the turned image comes from inside the coded region, and vice versa.
      const from = new Set<number>();
      for (let j = rect[1]; j < rect[1] + rect[3]; j++) {
        for (let i = rect[0]; i < rect[0] + rect[2]; i++) from.add(turned[j * ow + i]);
      }
      const inside = new Set<number>();
      for (let j = y; j < y + h; j++) for (let i = x; i < x + w; i++) inside.add(coded[j * W + i]);
      assert.deepEqual([...from].sort(), [...inside].sort(), `${deg}° mirror=${mirror}`);
    }
  }
});
