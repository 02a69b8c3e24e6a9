import assert from "node:assert/strict";
import { demuxVideo } from "../../src/media/demux.ts";
import { NOPTS, ptsToSeconds, type VideoPackets } from "../../src/media/packets.ts";
import {
  ffmpegPacketMd5s,
  ffprobePackets,
  ffprobeStreamEnd,
  generateClip,
  hasFfmpegCliSync,
  md5Hex,
  type ProbedPacket,
  sharedMedia,
} from "../helpers/media.ts";
import { mulberry32 } from "../../src/dataset/random.ts";

const CLI = hasFfmpegCliSync();
const NASA = sharedMedia("h264_nasa_bframes_aac.mp4");
const PANCAKE = sharedMedia("h264_opus_pancake.mkv");
const BBB = sharedMedia("vp9_opus_bbb.webm");

async function assertWholeStreamMatchesCli(path: string, streamIndex: number): Promise<void> {
  const got = await demuxVideo(path, { streamIndex });
  const { packets, extradataMd5 } = await ffmpegPacketMd5s(path, streamIndex);
  assert.equal(got.numPackets, packets.length, "packet count");
  for (let i = 0; i < packets.length; i++) {
    assert.equal(got.sizes[i], packets[i].size, `size of packet ${i}`);
    assert.equal(Number(got.pts[i]), packets[i].pts, `pts of packet ${i}`);
    assert.equal(await md5Hex(got.packet(i)), packets[i].md5, `payload of packet ${i}`);
  }
  if (extradataMd5 !== null) assert.equal(await md5Hex(got.extradata), extradataMd5, "extradata");
  assert.equal(
    got.data.byteLength,
    packets.reduce((a, p) => a + p.size, 0),
    "payload is exactly the packets",
  );
}

Deno.test({
  name: "demuxVideo: whole stream = ffmpeg -c copy packets (pts, size, payload MD5, extradata), MP4 B-frames",
  ignore: !CLI || NASA === null,
  fn: () => assertWholeStreamMatchesCli(NASA!, 0),
});

Deno.test({
  name: "demuxVideo: whole stream = ffmpeg -c copy packets, second video stream of the same file",
  ignore: !CLI || NASA === null,
  fn: () => assertWholeStreamMatchesCli(NASA!, 3),
});

Deno.test({
  name: "demuxVideo: whole stream = ffmpeg -c copy packets, MKV and WebM",
  ignore: !CLI || PANCAKE === null || BBB === null,
  fn: async () => {
    await assertWholeStreamMatchesCli(PANCAKE!, 0);
    await assertWholeStreamMatchesCli(BBB!, 0);
  },
});

Deno.test({
  name: "demuxVideo: in-memory bytes give the same packets as the path, with a <bytes N> source label",
  ignore: NASA === null,
  fn: async () => {
    const bytes = await Deno.readFile(NASA!);
    const a = await demuxVideo(NASA!, { streamIndex: 0, window: [2, 3] });
    const b = await demuxVideo(bytes, { streamIndex: 0, window: [2, 3] });
    assert.equal(b.source, `<bytes ${bytes.byteLength}>`);
    assert.equal(a.source, NASA);
    assert.deepEqual(b.pts, a.pts);
    assert.deepEqual(b.sizes, a.sizes);
    assert.deepEqual(b.data, a.data);
  },
});

/**
 * The window property, checked against ffprobe's packet list of the whole stream: the returned packets are a
 * contiguous run of it (decode order) that starts at the last keyframe presented at or before `s` (or the
 * stream's first keyframe), contains every packet presented in [s, e), and ends with the last packet (decode
 * order) presented before e; its frames stay on screen until the first packet presented at or after e (`endSec`),
 * or, when none is, until the end of the last frame.
 */
function assertWindow(
  w: VideoPackets,
  all: ProbedPacket[],
  streamEnd: number,
  s: number,
  e: number,
): void {
  const what = `window [${s.toFixed(3)}, ${e.toFixed(3)})`;
  const t = (p: ProbedPacket) => p.ptsTime ?? p.dtsTime ?? NaN;
  assert.deepEqual(w.window, [s, e], what);
  const first = all.findIndex((p) => p.pts === Number(w.pts[0]) && p.size === w.sizes[0]);
  assert.ok(first >= 0, `${what}: first packet (pts ${w.pts[0]}) not in the stream`);
  for (let i = 0; i < w.numPackets; i++) {
    assert.equal(Number(w.pts[i]), all[first + i].pts, `${what}: packet ${i} pts (contiguous run)`);
    assert.equal(w.sizes[i], all[first + i].size, `${what}: packet ${i} size`);
  }
  const last = first + w.numPackets - 1;
  const keys = all.map((p, i) => ({ p, i })).filter(({ p }) => p.keyframe);
  const wantFirst = keys.filter(({ p }) => t(p) <= s).at(-1)?.i ?? keys[0].i;
  assert.equal(first, wantFirst, `${what}: starts at the last keyframe presented at or before the start`);
  assert.ok(all[first].keyframe && (w.flags[0] & 1) === 1, `${what}: first packet is a keyframe`);
  let wantLast = first;
  all.forEach((p, i) => {
    if (i >= first && t(p) < e) wantLast = i;
  });
  assert.equal(last, wantLast, `${what}: ends at the last packet presented before the end`);
  all.forEach((p, i) => {
    if (t(p) >= s && t(p) < e) {
      assert.ok(i >= first && i <= last, `${what}: packet ${i} (pts ${t(p)}) missing`);
    }
  });
  for (let i = 0; i < w.numPackets; i++) {
    assert.ok(w.pts[i] !== NOPTS, `${what}: packet ${i} has a pts`);
  }
  const after = all.map(t).filter((x) => x >= e);
  const end = after.length > 0 ? Math.min(...after) : streamEnd;
  assert.ok(Math.abs(w.endSec! - end) < 1e-6, `${what}: on screen until ${w.endSec}, not ${end}`);
}

async function checkRandomWindows(
  path: string,
  streamIndex: number,
  seed: number,
  count: number,
): Promise<void> {
  const all = await ffprobePackets(path, streamIndex);
  const times = all.map((p) => p.ptsTime ?? 0);
  const t0 = Math.min(...times), t1 = Math.max(...times);
  const next = mulberry32(seed);
  const windows: [number, number][] = [];
  for (let i = 0; i < count; i++) {
    const s = t0 + next() * (t1 - t0);
    windows.push([s, s + 0.05 + next() * 2]);
  }
  windows.push([t0, t0 + 0.3], [t1 - 0.01, t1 + 5]); // stream start; overlapping the end
  // One open for all windows...
  const many = await demuxVideo(path, { streamIndex, windows });
  assert.equal(many.length, windows.length);
  const end = await ffprobeStreamEnd(path, streamIndex);
  for (let i = 0; i < windows.length; i++) assertWindow(many[i], all, end, ...windows[i]);
  // ...equals one open per window.
  for (const i of [0, 1, windows.length - 1]) {
    const one = await demuxVideo(path, { streamIndex, window: windows[i] });
    assert.deepEqual(one.pts, many[i].pts);
    assert.deepEqual(one.data, many[i].data);
  }
}

Deno.test({
  name: "demuxVideo windows: random windows on the B-frame NASA stream cover exactly the frames in [s, e)",
  ignore: !CLI || NASA === null,
  fn: () => checkRandomWindows(NASA!, 0, 1, 12),
});

Deno.test({
  name:
    "demuxVideo windows: random windows on a generated -bf 2 -g 12 MP4 and MKV (many non-keyframe starts)",
  ignore: !CLI,
  fn: async () => {
    const mp4 = await generateClip({ bframes: 2, gop: 12, durationSec: 4 });
    await checkRandomWindows(mp4, 0, 2, 16);
    const mkv = await generateClip({ bframes: 2, gop: 12, durationSec: 4, container: "mkv" });
    await checkRandomWindows(mkv, 0, 3, 16);
  },
});

Deno.test({
  name: "demuxVideo windows: VP9 WebM with audio",
  ignore: !CLI || BBB === null,
  fn: () => checkRandomWindows(BBB!, 0, 4, 8),
});

Deno.test({
  name: "demuxVideo windows: results come back in the caller's order, overlapping windows share packets",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ bframes: 2, gop: 12, durationSec: 4 });
    const ws: [number, number][] = [[3, 3.5], [0.5, 1.5], [1, 2], [0.5, 1.5]];
    const out = await demuxVideo(clip, { windows: ws });
    out.forEach((w, i) => assert.deepEqual(w.window, ws[i]));
    assert.deepEqual(out[1].data, out[3].data);
    assert.ok(ptsToSeconds(out[0].pts[0], out[0].timeBase) <= 3);
    // Each window owns its buffers: transferring one window to a Worker must not detach another's.
    const extradata = out[1].extradata.slice();
    structuredClone(out[0], { transfer: out[0].transferables() });
    assert.deepEqual(out[1].extradata, extradata);
    assert.ok(extradata.length > 0);
  },
});

Deno.test({
  name: "demuxVideo bsf: h264_mp4toannexb packets and extradata equal the ffmpeg CLI's",
  ignore: !CLI || NASA === null,
  fn: async () => {
    const got = await demuxVideo(NASA!, { streamIndex: 0, bsf: "h264_mp4toannexb" });
    const { packets } = await ffmpegPacketMd5s(NASA!, 0, "h264_mp4toannexb");
    assert.equal(got.numPackets, packets.length);
    for (let i = 0; i < packets.length; i++) {
      assert.equal(await md5Hex(got.packet(i)), packets[i].md5, `packet ${i}`);
    }
    const p0 = got.packet(0);
    assert.ok(
      p0[0] === 0 && p0[1] === 0 && (p0[2] === 1 || (p0[2] === 0 && p0[3] === 1)),
      "Annex-B start code",
    );
    const win = await demuxVideo(NASA!, { streamIndex: 0, bsf: "h264_mp4toannexb", window: [9, 10] });
    const first = packets.findIndex((p) => p.pts === Number(win.pts[0]));
    for (let i = 0; i < win.numPackets; i++) {
      assert.equal(await md5Hex(win.packet(i)), packets[first + i].md5, `window packet ${i} after a seek`);
    }
  },
});

Deno.test({
  name: "demuxVideo: codec parameters and timing fields match the stream",
  ignore: NASA === null,
  fn: async () => {
    const v = await demuxVideo(NASA!, { streamIndex: 0 });
    assert.equal(v.codec, "h264");
    assert.equal(v.streamIndex, 0);
    assert.equal(v.width, 320);
    assert.equal(v.height, 180);
    assert.deepEqual(v.timeBase, [1, 12800]);
    assert.equal(v.frameRate, 25);
    assert.equal(v.window, null);
    assert.ok(v.keyframeIndices.length >= 1 && v.keyframeIndices[0] === 0);
  },
});
