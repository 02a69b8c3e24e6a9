/**
 * The thread's swscale wrapper stays owned when the decoder changes. `decodeVideo` takes this thread's scaler
 * before it picks a decoder; when the codec parameters differ from the previous call's, the cached decoder is
 * replaced. That used to release the scaler too (while the frame writer still held it), so every change of
 * video left a fresh `SwsContext` that nothing owned, freed only by the FinalizationRegistry safety net — found
 * by the soak (`bench/soak.ts`: SwsContext objects finalized in every epoch).
 * @module
 */
import assert from "node:assert/strict";
import { decodeVideo, releaseDecoder } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { nativeObjectCounts } from "../../src/media/av_objects.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

Deno.test({
  name: "decodeVideo: a change of decoder keeps one owned SwsContext per thread, freed by releaseDecoder",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const a = await generateClip({ codec: "libx264", width: 160, height: 120, durationSec: 1 });
    const b = await generateClip({
      codec: "mpeg4",
      container: "avi",
      width: 176,
      height: 144,
      durationSec: 1,
    });
    const live = () => nativeObjectCounts().live.SwsContext ?? 0;
    const finalized = () => nativeObjectCounts().finalized.SwsContext ?? 0;
    releaseDecoder();
    const before = live(), finalizedBefore = finalized();
    for (const f of [a, b, a, b]) {
      const frames = await decodeVideo(await demuxVideo(f, { window: [0, 0.3] }), { width: 32, height: 32 });
      assert.ok(frames.shape[0] > 0);
    }
    // Unowned contexts would still be alive here (until a garbage collection finds them) or already finalized.
    assert.equal(
      live() - before + finalized() - finalizedBefore,
      1,
      "one scaler context, owned by the thread",
    );
    releaseDecoder();
    assert.equal(live(), before, "releaseDecoder frees the thread's scaler context");
  },
});
