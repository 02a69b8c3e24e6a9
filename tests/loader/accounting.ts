/** The loader's clip-accounting invariant, shared by the loader tests. */
import assert from "node:assert/strict";
import type { ClipStats } from "../../src/loader/batch/clip_stats.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";

/**
 * The accounting invariant, asserted by every loader test: each epoch ran to its end and every planned clip is
 * delivered, failed, dropped or skipped (before a resume point); the batches hold exactly the delivered clips plus
 * the substitutes; failures are listed with their cause; padded and held frames are the batches' own.
 */
export function assertAccounted(
  clips: ClipStats,
  batches: Batch[],
  perEpoch: number,
  epochs: number,
  dropLast: boolean,
): void {
  assert.equal(clips.epochs.length, epochs);
  for (const e of clips.epochs) {
    assert.ok(e.complete, `epoch ${e.epoch} complete`);
    assert.equal(e.planned, perEpoch);
    assert.equal(e.pending, 0);
    assert.equal(
      e.planned,
      e.delivered + e.failed + e.dropped + e.skipped,
      `epoch ${e.epoch}: planned = delivered + failed + dropped + skipped`,
    );
    assert.ok(e.replaced <= e.failed);
    if (!dropLast) assert.equal(e.dropped, 0);
    assert.equal(e.failures.length + e.unlisted, e.failed + e.substitutesFailed);
    for (const f of e.failures) {
      assert.ok(f.path !== "" && f.end > f.start && f.stage !== "" && f.error !== "", JSON.stringify(f));
    }
  }
  const inBatches = batches.flatMap((b) => b.clips);
  assert.equal(inBatches.filter((c) => c.replaces === undefined).length, clips.total.delivered);
  assert.equal(inBatches.filter((c) => c.replaces !== undefined).length, clips.total.replaced);
  assert.equal(inBatches.reduce((n, c) => n + c.padded, 0), clips.total.paddedFrames);
  assert.equal(inBatches.filter((c) => c.padded > 0).length, clips.total.paddedClips);
  assert.equal(inBatches.reduce((n, c) => n + c.held, 0), clips.total.heldFrames);
  assert.equal(inBatches.filter((c) => c.held > 0).length, clips.total.heldClips);
}
