/**
 * Decode once for several clips, in the clip Worker (issue 14 §2): clips of one video whose packets overlap are
 * demuxed as one group and decoded in one forward pass (`decodeClip` of the group's leader), each clip's frames byte-identical to
 * its decode on its own (same region, flip, padding, times), each in its own buffer, and a clip that fails fails
 * alone; clips too far apart in the epoch's output (the horizon) are not grouped; the pass decodes fewer frames
 * than the clips on their own.
 */
import assert from "node:assert/strict";
import { decodeClip, demuxClips } from "../../src/loader/decode/clip_worker.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { isFailedClip } from "../../src/loader/clip/clip_failure.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";
import { useDouble } from "../nvdec/nvdec_helpers.ts";
import type { ClipPackets, DecodedClip, VideoTask } from "../../src/loader/clip/life.ts";

const CLI = hasFfmpegCliSync();

/** 6 s at 25 fps, B-pyramid, one GOP (keyframe at 0 s only). */
const MEDIA = {
  width: 96,
  height: 64,
  fps: 25,
  durationSec: 6,
  gop: 250,
  bframes: 3,
  extraArgs: ["-x264-params", "b-pyramid=normal"],
};
/** Clip windows in plan order; all in the one GOP; the last one past the end of the file. */
const WINDOWS: [number, number][] = [[3.1, 3.6], [0.4, 0.9], [4.7, 5.2], [2.0, 2.5], [6.5, 7.0]];

function task(path: string, spec: Partial<ClipSpec>, share?: VideoTask["share"]): VideoTask {
  const t: VideoTask = {
    epoch: 0,
    video: 0,
    path,
    clips: WINDOWS.map(([s, e], i) => clipBase(path, s, e, i, 77 + i)),
    spec: testSpec({ numFrames: 8, width: 32, height: 24, ...spec }),
  };
  if (share !== undefined) t.share = share;
  return t;
}

/** `item`'s pass decoded (with NVDEC when `nvdec`): one clip, or its failure as an `Error`, per clip. */
function decode(item: ClipPackets, nvdec: boolean): (DecodedClip | Error)[] {
  if (nvdec) item.spec = { ...item.spec, decoder: "nvdec" };
  return decodeClip(item).value.map((r) => isFailedClip(r) ? new Error(r.failed.error) : r);
}

/** Each clip decoded on its own (no sharing): its clip, or its error. */
function alone(t: VideoTask, nvdec = false): (DecodedClip | Error)[] {
  return (demuxClips(t).value as ClipPackets[]).map((item) => decode(item, nvdec)[0]);
}

/** The grouped decode: demux with `share`, each leader's pass; results by clip index. */
function grouped(t: VideoTask, nvdec = false): { items: ClipPackets[]; out: (DecodedClip | Error)[] } {
  const items = demuxClips(t).value as ClipPackets[];
  const out: (DecodedClip | Error)[] = new Array(items.length);
  for (const [i, item] of items.entries()) {
    if (item.servedBy !== undefined) continue;
    if (item.packets === undefined) {
      out[i] = new Error(item.failure);
      continue;
    }
    const members = [item.meta, ...(item.shared ?? []).map((s) => s.meta)];
    const results = decode(nvdec ? item : structuredClone(item), nvdec);
    assert.equal(results.length, members.length);
    for (const [k, r] of results.entries()) out[members[k].position] = r;
  }
  return { items, out };
}

const strip = (c: DecodedClip) => {
  const { decodedFrames: _d, skippedFrames: _s, passClips: _p, ...rest } = c.outcome!;
  return rest;
};

for (const variant of [{}, { frameRate: 10 }]) {
  const spec: Partial<ClipSpec> = {
    resize: "random-resized-crop",
    flipProbability: 0.5,
    ...(variant.frameRate ? { sampling: { kind: "rate", frameRate: variant.frameRate } } : {}),
  };
  Deno.test({
    name: `decodeClip ${JSON.stringify(variant)}: one pass, each clip byte-identical to its own decode`,
    ignore: !CLI,
    async fn() {
      const path = await generateClip(MEDIA);
      const own = alone(task(path, spec));
      const { items, out } = grouped(task(path, spec, { order: [0, 1, 2, 3, 4], horizon: 8 }));
      // One group of four (led by the clip that comes out first: order 0), the fifth failed at demux.
      assert.equal(items[0].shared?.length, 3);
      assert.deepEqual(items.slice(1, 4).map((x) => x.servedBy), [0, 0, 0]);
      assert.equal(items[4].packets, undefined);
      let decodedAlone = 0, decodedOnce = 0;
      for (let i = 0; i < 4; i++) {
        const a = own[i] as DecodedClip, g = out[i] as DecodedClip;
        assert.ok(sameBytes(g.data as Uint8Array, a.data as Uint8Array), `clip ${i}: pixels`);
        assert.deepEqual(strip(g), strip(a), `clip ${i}: outcome`);
        assert.deepEqual(g.meta, a.meta);
        assert.equal(g.outcome!.passClips, 4);
        assert.notEqual(g.data.buffer, (out[(i + 1) % 4] as DecodedClip).data.buffer, "one buffer per clip");
        decodedAlone += a.outcome!.decodedFrames;
        decodedOnce += g.outcome!.decodedFrames;
      }
      assert.ok(own[4] instanceof Error && out[4] instanceof Error);
      // The last window (4.7 s) decodes through the others: one pass costs about what it costs alone.
      assert.ok(decodedOnce < decodedAlone * 0.6, `decoded ${decodedOnce} in one pass vs ${decodedAlone}`);
    },
  });
}

Deno.test({
  name:
    "decodeClip of a group: a clip that cannot be filled fails alone; the horizon keeps clips far apart separate",
  ignore: !CLI,
  async fn() {
    const path = await generateClip(MEDIA);
    // 20 frames in 0.5 s windows: at most 13 frames, more padding than maxPadFraction 0.5 allows... except the
    // window near the end is cut by the file's end: make only that one fail (0.4 s of 25 fps = 10 frames).
    const t = task(path, { numFrames: 16, maxPadFraction: 0.25 }, { order: [0, 1, 2, 3, 4], horizon: 8 });
    t.clips[2] = { ...t.clips[2], start: 5.7, end: 6.2 };
    const own = alone({ ...t, share: undefined });
    const { out } = grouped(t);
    for (let i = 0; i < 4; i++) {
      if (i === 2) {
        assert.ok(out[2] instanceof Error && /max pad fraction/.test(out[2].message), String(out[2]));
        assert.ok(own[2] instanceof Error);
        continue;
      }
      assert.ok(
        sameBytes((out[i] as DecodedClip).data as Uint8Array, (own[i] as DecodedClip).data as Uint8Array),
      );
    }
    // Horizon 2, windows in start order 1 (output 5), 3 (7), 0 (0), 2 (6): 1 and 3 are 2 apart and share a
    // pass; 0 is 7 away from 3, 2 is 6 away from 0: each is decoded on its own.
    const far = demuxClips(task(path, {}, { order: [0, 5, 6, 7, 8], horizon: 2 })).value as ClipPackets[];
    assert.deepEqual(far[1].shared?.map((s) => s.meta.position), [3]);
    assert.equal(far[3].servedBy, 1);
    assert.deepEqual([far[0].shared, far[2].shared, far[0].servedBy, far[2].servedBy], [
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  },
});

Deno.test({
  name:
    "decodeClip of a group with NVDEC (double): each clip = its own NVDEC decode; non-reference frames skipped",
  ignore: !CLI,
  async fn() {
    await useDouble();
    const path = await generateClip({ ...MEDIA, container: "mkv" });
    const spec: Partial<ClipSpec> = { resize: "short-side" };
    const own = alone(task(path, spec), true);
    const { out } = grouped(task(path, spec, { order: [0, 1, 2, 3, 4], horizon: 8 }), true);
    let skipped = 0;
    for (let i = 0; i < 4; i++) {
      const a = own[i] as DecodedClip, g = out[i] as DecodedClip;
      assert.ok(sameBytes(g.data as Uint8Array, a.data as Uint8Array), `clip ${i}`);
      assert.deepEqual(strip(g), strip(a));
      skipped += g.outcome!.skippedFrames;
    }
    assert.ok(skipped > 0, "pictures not sent to cuvidDecodePicture");
  },
});
