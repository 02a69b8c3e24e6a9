import assert from "node:assert/strict";
import { ClipAccounting, KEPT_EPOCHS } from "../../src/loader/batch/clip_stats.ts";
import { PipelineFailure } from "../../src/errors.ts";
import type { ClipFailure, ClipMeta, DecodedClip, PlacedClip } from "../../src/loader/clip/life.ts";

/** A clip of 4 frames (`padded` of them padding, `held` held), decoded with 10 frames, 2 skipped, alone. */
function clip(position: number, padded = 0, replaces?: ClipFailure, passClips = 1, held = 0): DecodedClip {
  const meta = { path: "a.mp4", video: 0, label: 0, start: 0, end: 1, epoch: 0, position, seed: 1 };
  return {
    meta: replaces === undefined ? meta : { ...meta, replaces },
    data: new Uint8Array(0),
    width: 1,
    height: 1,
    outcome: {
      pts: [0, 0.04, 0.08, 0.12],
      frameIndex: [0, 1, 2, 3],
      frameKind: ["sampled", "sampled", "sampled", "sampled"],
      held,
      padded,
      span: [0, 1],
      rotation: 0,
      rotated: false,
      crop: [0, 0, 1, 1],
      flipped: false,
      decodedFrames: 10,
      skippedFrames: 2,
      passClips,
    },
  };
}

function failure(position: number, attempt = 0, stage = "decode"): ClipFailure {
  return {
    path: `bad${position}.mp4`,
    video: 1,
    epoch: 0,
    position,
    start: 0,
    end: 1,
    stage,
    errorName: "MediaError",
    error: "MediaError: no frame",
    attempt,
  };
}

/** The clip's metadata in a batch of `epoch` (what the accounting reads). */
const meta = (c: DecodedClip, epoch: number): ClipMeta => ({ ...c.meta, epoch, ...c.outcome });

const ok = (p: number, padded = 0): PlacedClip => ({ clip: clip(p, padded), failures: [] });

/** A batch closed by the pipeline and, unless dropped, handed to the consumer. */
function batch(acc: ClipAccounting, epoch: number, slots: PlacedClip[], dropped = false): void {
  acc.collated(epoch, slots, dropped);
  if (dropped) return;
  acc.delivered(slots.flatMap((s) => s.clip === null ? [] : [meta(s.clip, epoch)]));
}

Deno.test("counts: planned = delivered + failed + dropped; replaced apart; padding; substitutes' failures listed", () => {
  const lines: string[] = [];
  const acc = new ClipAccounting(8, { rate: 0.9, after: 100 }, (l) => lines.push(l));
  acc.begin(0);
  batch(acc, 0, [ok(0), ok(1, 2), {
    clip: clip(2, 0, failure(2)),
    failures: [failure(2), failure(2, 1, "demux")],
  }]);
  batch(acc, 0, [{ clip: null, failures: [failure(3, 0, "fetch")] }, ok(4), ok(5)]);
  let e = acc.stats().epochs[0];
  assert.equal(e.pending, 2);
  assert.equal(e.complete, false);
  batch(acc, 0, [ok(6), { clip: clip(7, 0, failure(7)), failures: [failure(7)] }], true); // a short last batch, dropped
  acc.complete(0);
  const s = acc.stats();
  e = s.epochs[0];
  assert.deepEqual(
    { ...e, failures: e.failures.map((f) => [f.position, f.attempt]) },
    {
      epoch: 0,
      complete: true,
      planned: 8,
      delivered: 4,
      failed: 3,
      replaced: 1,
      dropped: 1,
      skipped: 0,
      pending: 0,
      substitutesFailed: 1,
      paddedFrames: 2,
      paddedClips: 1,
      heldFrames: 0,
      heldClips: 0,
      failedByStage: { decode: 2, fetch: 1 },
      audioMissing: 0,
      audioShort: 0,
      audioError: 0,
      failures: [[2, 0], [2, 1], [3, 0], [7, 0]],
      unlisted: 0,
      // 5 clips in delivered batches (4 delivered, 1 substitute), 2 padded frames.
      decodedFrames: 50,
      skippedFrames: 10,
      emittedFrames: 18,
      sharedClips: 0,
      decodeAmplification: 50 / 18,
    },
  );
  assert.equal(e.planned, e.delivered + e.failed + e.dropped);
  const { epoch: _e, complete: _c, failures: _f, unlisted: _u, ...counts } = e;
  assert.deepEqual(s.total, counts);
  assert.equal(lines.length, 4);
  assert.match(
    lines[1],
    /^sluice loader: epoch 0: demux failed on bad2\.mp4: MediaError: no frame \(substitute 1 for position 2, clip \[0\.000, 1\.000\)\)$/,
  );
});

Deno.test("a resumed epoch: its skipped positions are accounted for, planned = delivered + failed + dropped + skipped", () => {
  const acc = new ClipAccounting(8, 10, () => {});
  acc.begin(0);
  acc.skipped(0, 3);
  let e = acc.stats().epochs[0];
  assert.deepEqual([e.skipped, e.pending], [3, 5]);
  batch(acc, 0, [ok(3), ok(4), { clip: null, failures: [failure(5)] }]);
  batch(acc, 0, [ok(6), ok(7)]);
  acc.complete(0);
  e = acc.stats().epochs[0];
  assert.deepEqual([e.delivered, e.failed, e.dropped, e.skipped, e.pending], [4, 1, 0, 3, 0]);
  assert.equal(acc.stats().total.skipped, 3);
});

Deno.test("totals add epochs; failure lists and log lines are bounded", () => {
  const lines: string[] = [];
  const acc = new ClipAccounting(300, 1000, (l) => lines.push(l));
  for (const epoch of [0, 1]) {
    batch(
      acc,
      epoch,
      Array.from({ length: 150 }, (_, p) => ({ clip: null, failures: [{ ...failure(p), epoch }] })),
    );
    batch(acc, epoch, Array.from({ length: 150 }, (_, p) => ok(150 + p, 1)));
    acc.complete(epoch);
  }
  const s = acc.stats();
  assert.equal(s.total.planned, 600);
  assert.equal(s.total.failed, 300);
  assert.equal(s.total.delivered, 300);
  assert.equal(s.total.paddedFrames, 300);
  assert.deepEqual(s.total.failedByStage, { decode: 300 });
  assert.equal(s.epochs[1].failures.length, 100);
  assert.equal(s.epochs[1].unlisted, 50);
  assert.equal(lines.length, 11, "the first 10 failures of the run, then one line");
  assert.match(lines[10], /further failures are counted in stats\(\)\.clips/);
});

Deno.test("epochs beyond KEPT_EPOCHS fold into the total: listed epochs stay bounded, the sums stay whole", () => {
  const acc = new ClipAccounting(2, 10, () => {});
  const epochs = KEPT_EPOCHS * 3 + 5;
  for (let epoch = 0; epoch < epochs; epoch++) {
    acc.begin(epoch);
    batch(acc, epoch, [ok(0, 1), { clip: null, failures: [{ ...failure(1, 0, "demux"), epoch }] }]);
    acc.complete(epoch);
  }
  acc.begin(epochs); // an epoch under way is never folded
  const s = acc.stats();
  assert.equal(s.epochs.length, KEPT_EPOCHS);
  assert.equal(s.foldedEpochs, epochs + 1 - KEPT_EPOCHS);
  assert.deepEqual(
    s.epochs.map((e) => e.epoch),
    Array.from({ length: KEPT_EPOCHS }, (_, i) => epochs + 1 - KEPT_EPOCHS + i),
  );
  assert.equal(s.total.planned, 2 * (epochs + 1));
  assert.equal(s.total.delivered, epochs);
  assert.equal(s.total.failed, epochs);
  assert.equal(s.total.pending, 2);
  assert.equal(s.total.paddedFrames, epochs);
  assert.deepEqual(s.total.failedByStage, { demux: epochs });
  assert.equal(s.total.decodeAmplification, 10 / 3);
});

Deno.test("maxFailures: more failed clips than the budget ends the epoch with PipelineFailure naming the first", () => {
  const acc = new ClipAccounting(100, { rate: 0.5, after: 4 }, () => {});
  batch(acc, 0, [ok(0), { clip: null, failures: [failure(1)] }, ok(2)]);
  assert.throws(
    () => batch(acc, 0, [{ clip: null, failures: [failure(3)] }, { clip: null, failures: [failure(4)] }]),
    (e: Error) =>
      e instanceof PipelineFailure &&
      /3 of 5 clips failed in epoch 0, above maxFailures \(rate 0\.5 after 4\); first: decode failed on bad1\.mp4/
        .test(
          e.message,
        ),
  );
  const n = new ClipAccounting(10, 1, () => {});
  batch(n, 0, [{ clip: null, failures: [failure(0)] }]);
  assert.throws(
    () => batch(n, 0, [{ clip: null, failures: [failure(1)] }]),
    /2 of 2 clips failed in epoch 0, above maxFailures \(1\)/,
  );
});

Deno.test("a batch closed but never handed to the consumer (an epoch stopped early) leaves its clips pending", () => {
  const acc = new ClipAccounting(4, 10, () => {});
  batch(acc, 0, [ok(0), ok(1)]);
  acc.collated(0, [ok(2), { clip: null, failures: [failure(3)] }]);
  const e = acc.stats().epochs[0];
  assert.deepEqual([e.delivered, e.failed, e.pending, e.complete], [2, 1, 1, false]);
});

Deno.test("counts: frames decoded, skipped and emitted (padding and held frames excluded); amplification = decoded / emitted", () => {
  const acc = new ClipAccounting(4, 10, () => {});
  acc.begin(0);
  batch(acc, 0, [ok(0), ok(1, 1), { clip: clip(2, 0, undefined, 2, 2), failures: [] }]);
  const e = acc.stats().epochs[0];
  // 3 clips x 10 decoded, 2 skipped; 4 + 3 + 2 frames emitted (padded and held frames are not decoded output).
  assert.equal(e.decodedFrames, 30);
  assert.equal(e.skippedFrames, 6);
  assert.equal(e.emittedFrames, 9);
  assert.deepEqual([e.paddedFrames, e.paddedClips, e.heldFrames, e.heldClips], [1, 1, 2, 1]);
  assert.equal(e.sharedClips, 1);
  assert.equal(e.decodeAmplification, 30 / 9);
  acc.begin(1);
  batch(acc, 1, [ok(0)]);
  const { total, epochs } = acc.stats();
  assert.equal(epochs[1].decodeAmplification, 10 / 4);
  assert.equal(total.decodedFrames, 40);
  assert.equal(total.heldFrames, 2);
  assert.equal(total.decodeAmplification, 40 / 13, "the total's ratio, not a sum of ratios");
});

Deno.test("a delivery taken back (a relay's client discarded the batch): pending again, the epoch not complete", () => {
  const acc = new ClipAccounting(4, 0, () => {});
  batch(acc, 0, [ok(0), ok(1, 2)]);
  batch(acc, 0, [ok(2), ok(3)]);
  acc.complete(0);
  const before = acc.stats().epochs[0];
  assert.deepEqual([before.complete, before.delivered, before.pending, before.paddedFrames], [true, 4, 0, 2]);
  // the client discarded the first batch unused
  acc.delivered([meta(clip(0), 0), meta(clip(1, 2), 0)], -1);
  const e = acc.stats().epochs[0];
  assert.deepEqual(
    [e.complete, e.delivered, e.pending, e.paddedFrames, e.paddedClips, e.decodedFrames, e.emittedFrames],
    [false, 2, 2, 0, 0, 20, 8],
  );
  assert.equal(e.decodeAmplification, 20 / 8);
});

Deno.test("a snapshot with clips not consumed yet (a relay's batches on their way) counts them pending, in the copy only", () => {
  const acc = new ClipAccounting(4, 0, () => {});
  batch(acc, 0, [ok(0), ok(1, 2)]);
  batch(acc, 0, [ok(2), ok(3)]);
  acc.complete(0);
  // the relay's client took the first batch; the second waits in its queue
  const { epochs: [e], total } = acc.stats([meta(clip(2), 0), meta(clip(3), 0)]);
  assert.deepEqual(
    [e.complete, e.delivered, e.pending, e.paddedFrames, e.decodedFrames, e.emittedFrames],
    [false, 2, 2, 2, 20, 6],
  );
  assert.deepEqual([total.delivered, total.pending, total.decodedFrames], [2, 2, 20]);
  assert.equal(total.decodeAmplification, 20 / 6);
  // the accounting itself is as it was
  const after = acc.stats().epochs[0];
  assert.deepEqual([after.complete, after.delivered, after.pending], [true, 4, 0]);
});
