/**
 * `demuxGroupsSync` (issue 14 §2): windows whose packets overlap come back as one run of packets, each window's
 * own packets within it exactly those `demuxEachSync` cuts for it alone; `join` can refuse a window; a window that
 * cannot be served fails alone.
 */
import assert from "node:assert/strict";
import { demuxEachSync, demuxGroupsSync, type TimeWindow } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { SluiceError } from "../../src/errors.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();

/** 4 s at 25 fps, B-frames, keyframes at 0, 1.6 and 3.2 s. */
const MEDIA = { width: 96, height: 64, fps: 25, durationSec: 4, gop: 40, bframes: 3 };

/**
 * In start order: three windows in the first GOP (the third's packets run past the keyframe at 1.6 s), one in
 * the second GOP (its keyframe lies inside the packets before it), one in the last GOP (no overlap), one past the
 * end of the file.
 */
const WINDOWS: TimeWindow[] = [[0.9, 1.3], [0.2, 0.6], [1.5, 1.8], [2.5, 2.9], [3.5, 3.9], [5.0, 5.4]];

/** Packet `i` of `p` as comparable values. */
function packetAt(p: VideoPackets, i: number): [bigint, bigint, number, number[]] {
  return [p.pts[i], p.dts[i], p.flags[i], [...p.packet(i)]];
}

/** Asserts packets `[from, to)` of `group` are `alone`'s packets. */
function assertSame(
  group: VideoPackets,
  [from, to]: [number, number],
  alone: VideoPackets,
  what: string,
): void {
  assert.equal(to - from, alone.numPackets, `${what}: packet count`);
  for (let i = 0; i < alone.numPackets; i++) {
    assert.deepEqual(packetAt(group, from + i), packetAt(alone, i), `${what}: packet ${i}`);
  }
}

for (const container of ["mp4", "ts"]) {
  Deno.test({
    name:
      `demuxGroupsSync (${container}): overlapping windows share one run; each window's packets are its own`,
    ignore: !CLI,
    async fn() {
      const path = await generateClip({ ...MEDIA, container });
      const start = demuxEachSync(path)[0] as VideoPackets;
      const windows = WINDOWS.map(([a, b]): TimeWindow => [start.startTimeSec + a, start.startTimeSec + b]);
      const alone = demuxEachSync(path, { windows });
      const { groups, failures } = demuxGroupsSync(path, { windows, join: () => true });
      assert.deepEqual(groups.map((g) => g.members.map((m) => m.window)), [[1, 0, 2, 3], [4]]);
      assert.ok(failures[5] instanceof SluiceError && /file ends at/.test(failures[5].message));
      assert.deepEqual(failures.slice(0, 5), [null, null, null, null, null]);
      for (const g of groups) {
        const ws = g.members.map((m) => windows[m.window]);
        assert.deepEqual(g.packets.window, [
          Math.min(...ws.map((w) => w[0])),
          Math.max(...ws.map((w) => w[1])),
        ]);
        for (const m of g.members) {
          assertSame(g.packets, m.range, alone[m.window] as VideoPackets, `window ${m.window}`);
        }
      }
      // The first group's packets are read once: fewer than the windows' packets added up.
      const sum = groups[0].members.reduce((n, m) => n + (alone[m.window] as VideoPackets).numPackets, 0);
      assert.ok(groups[0].packets.numPackets < sum);
    },
  });
}

Deno.test({
  name: "demuxGroupsSync: a window join refuses starts a group of its own; the next one may join it",
  ignore: !CLI,
  async fn() {
    const path = await generateClip(MEDIA);
    const windows = WINDOWS.slice(0, 5);
    const alone = demuxEachSync(path, { windows });
    const { groups } = demuxGroupsSync(path, { windows, join: (_members, next) => next !== 0 });
    assert.deepEqual(groups.map((g) => g.members.map((m) => m.window)), [[1], [0, 2, 3], [4]]);
    for (const g of groups) {
      for (const m of g.members) {
        assertSame(g.packets, m.range, alone[m.window] as VideoPackets, `${m.window}`);
      }
    }
    // join never: one group per window, each the window's own packets.
    const single = demuxGroupsSync(path, { windows, join: () => false });
    assert.equal(single.groups.length, 5);
    for (const g of single.groups) {
      assert.deepEqual(g.members[0].range, [0, g.packets.numPackets]);
      assertSame(g.packets, g.members[0].range, alone[g.members[0].window] as VideoPackets, "alone");
    }
  },
});

Deno.test({
  name:
    "demuxGroupsSync: optional windows only join groups other windows open (in their GOP), never seek alone",
  ignore: !CLI,
  async fn() {
    const path = await generateClip(MEDIA);
    // own: 0.9–1.3 s; optional: 0.2–0.6 (same GOP, before it), 2.5–2.9 (next GOP: its keyframe at 1.6 s is past
    // the group's packets), 3.5–3.9 (no group near it)
    const windows: TimeWindow[] = [[0.9, 1.3], [0.2, 0.6], [2.5, 2.9], [3.5, 3.9]];
    const alone = demuxEachSync(path, { windows });
    const { groups, failures } = demuxGroupsSync(path, { windows, join: () => true, optionalFrom: 1 });
    assert.deepEqual(groups.map((g) => g.members.map((m) => m.window)), [[1, 0]]);
    assert.deepEqual(failures, [null, null, null, null]);
    for (const m of groups[0].members) {
      assertSame(groups[0].packets, m.range, alone[m.window] as VideoPackets, `window ${m.window}`);
    }
    // An own window reaching past the keyframe at 1.6 s brings the next GOP's optional window in; `join` still
    // decides.
    const more: TimeWindow[] = [[0.9, 1.3], [1.5, 1.8], [0.2, 0.6], [2.5, 2.9], [3.5, 3.9]];
    const aloneMore = demuxEachSync(path, { windows: more });
    const joined = demuxGroupsSync(path, { windows: more, join: () => true, optionalFrom: 2 });
    assert.deepEqual(joined.groups.map((g) => g.members.map((m) => m.window)), [[2, 0, 1, 3]]);
    for (const m of joined.groups[0].members) {
      assertSame(
        joined.groups[0].packets,
        m.range,
        aloneMore[m.window] as VideoPackets,
        `window ${m.window}`,
      );
    }
    const refused = demuxGroupsSync(path, { windows: more, join: (_m, next) => next !== 2, optionalFrom: 2 });
    assert.deepEqual(refused.groups.map((g) => g.members.map((m) => m.window)), [[0, 1, 3]]);
  },
});
