/**
 * NVDEC decoding less (issue 14 §1) on the double: non-reference pictures no position shows (`ref_pic_flag` 0) are
 * not sent to `cuvidDecodePicture`, with the same frames as with every picture decoded (H.264 with B-pyramids in
 * MP4 and MPEG-TS, HEVC in MKV; windows in the first and last GOP, with and without resampling); a frame is
 * mapped and converted only when it fills a position; a stream where picture k is not packet k starts over.
 */
import assert from "node:assert/strict";
import { decodeVideoNvdec, type NvdecOptions, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { type ClipSpec, generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { readPackets, rebuildPackets } from "../helpers/read_packets.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";
import { useDouble } from "./nvdec_helpers.ts";

const CLI = hasFfmpegCliSync();

const base = { width: 96, height: 64, fps: 25, durationSec: 4, gop: 40, bframes: 3 };
const SOURCES: { name: string; media: ClipSpec }[] = [
  { name: "H.264 B-pyramid MP4", media: { ...base, extraArgs: ["-x264-params", "b-pyramid=normal"] } },
  { name: "H.264 MPEG-TS", media: { ...base, container: "ts" } },
  { name: "HEVC MKV", media: { ...base, codec: "libx265", container: "mkv" } },
];
const WINDOWS: [number, number][] = [[0.36, 0.96], [1.3, 1.94], [3.46, 3.98]];

interface Decoded {
  pts: number[];
  pixels: Uint8Array;
  decoded: number;
  skipped: number;
  /** Frames mapped (each map is a conversion). */
  maps: number;
}

const mapped = (log: string[]) => log.filter((l) => l.startsWith("cuvidMapVideoFrame64 rc=0")).length;

async function decode(p: VideoPackets, opts: NvdecOptions): Promise<Decoded> {
  const dbl = await useDouble();
  const before = mapped(dbl.log());
  using f = await decodeVideoNvdec(p, { width: 32, height: 24, ...opts });
  const maps = mapped(dbl.log()) - before;
  return {
    pts: [...f.pts],
    pixels: await f.toHost(),
    decoded: f.decodedFrames,
    skipped: f.skippedFrames,
    maps,
  };
}

/** A test on a freshly configured double, its decoder released at the end. */
function withDouble(fn: () => Promise<void>): () => Promise<void> {
  return async () => {
    (await useDouble()).configure();
    try {
      await fn();
    } finally {
      releaseDecoderNvdec();
    }
  };
}

async function compare(packets: () => VideoPackets, opts: NvdecOptions, what: string) {
  const on = await decode(packets(), opts);
  const off = await decode(packets(), { ...opts, skipUnshown: false });
  assert.deepEqual(on.pts, off.pts, `${what}: times`);
  assert.ok(on.pts.length > 0 && sameBytes(on.pixels, off.pixels), `${what}: pixels`);
  return { on, off };
}

for (const src of SOURCES) {
  Deno.test({
    name: `nvdec skipUnshown: ${src.name}: same frames with the switch on and off, fewer pictures decoded`,
    ignore: !CLI,
    fn: withDouble(async () => {
      const path = await generateClip(src.media);
      const start = readPackets(path).startTimeSec;
      let skipped = 0;
      for (const [a, b] of WINDOWS) {
        const w: [number, number] = [start + a, start + b];
        for (const opts of [{ numFrames: 6 }, { frameRate: 8 }] as NvdecOptions[]) {
          const { on, off } = await compare(
            () => readPackets(path, { window: w }),
            opts,
            `${w} ${JSON.stringify(opts)}`,
          );
          assert.ok(on.decoded <= off.decoded);
          skipped += on.skipped;
        }
      }
      assert.ok(skipped > 0, "non-reference pictures were left undecoded");
    }),
  });
}

Deno.test({
  name: "nvdec: resampling 25 -> 8 fps maps (converts) only the frames it shows, once each",
  ignore: !CLI,
  fn: withDouble(async () => {
    const path = await generateClip(SOURCES[0].media);
    for (const skipUnshown of [true, false]) {
      const r = await decode(readPackets(path, { window: [1.3, 2.3] }), { frameRate: 8, skipUnshown });
      // 8 positions over 1 s at 8 fps, each a different frame: 8 maps (every frame used to be mapped: 25).
      assert.equal(r.pts.length, 8);
      assert.equal(r.maps, 8, `skipUnshown ${skipUnshown}: ${r.maps} frames mapped`);
    }
  }),
});

/** `p` with packets `i` and `i + 1` in one packet (two pictures, one timestamp). */
function merged(p: VideoPackets, i: number): VideoPackets {
  const keep = Array.from({ length: p.numPackets }, (_, k) => k).filter((k) => k !== i + 1);
  return rebuildPackets(
    p,
    keep,
    (k) => k === i ? new Uint8Array([...p.packet(i), ...p.packet(i + 1)]) : undefined,
  );
}

Deno.test({
  name: "nvdec skipUnshown: two pictures in one packet (picture k is not packet k): starts over, same frames",
  ignore: !CLI,
  fn: withDouble(async () => {
    const path = await generateClip(SOURCES[1].media);
    const start = readPackets(path).startTimeSec;
    const packets = () => merged(readPackets(path, { window: [start + 1.3, start + 1.9] }), 5);
    const { on, off } = await compare(packets, {}, "merged packets");
    assert.equal(on.skipped, 0);
    assert.ok(
      on.decoded > off.decoded,
      `the first attempt's pictures count too: ${on.decoded} vs ${off.decoded}`,
    );
  }),
});
