/**
 * NVDEC's `ClipPassDecoder` (the seam the loader's clip pass decodes through, `src/media/decode_pass.ts`): the
 * decoder's crop (display area) and resize (target size) are set per decode, and the clips of a pass differ in
 * both, so each output is decoded from its own packets within the pass's (frames no slot shows are still left
 * out), copied to host memory, and placed by its `FrameWriter` (rotation, flip, layout, `float32`) in one pass.
 * @module
 */
import type {
  ClipPassDecoder,
  OutputRun,
  PassOutput,
  PassRun,
  ResolvedOptions,
} from "../media/decode_pass.ts";
import { packetRange } from "../media/decode_pass.ts";
import { frameLayout } from "../media/frames.ts";
import type { VideoPackets } from "../media/packets.ts";
import { decodeNvdec } from "./decoder.ts";
import { frameIndices } from "../media/frame_index.ts";

/** Decodes each output of a pass with NVDEC; see the module docs. */
function decodeNvdecPass(p: VideoPackets, o: ResolvedOptions, outputs: readonly PassOutput[]): PassRun {
  const run: PassRun = {
    outputs: [],
    decodedFrames: 0,
    skippedFrames: 0,
    failedPackets: 0,
    firstFailure: "",
  };
  for (const out of outputs) {
    try {
      const own = packetRange(p, out.range, out.window);
      const w = out.writer;
      w.init(own.width, own.height);
      const [cw, ch] = w.codedSize;
      const decoded = decodeNvdec(own, {
        width: cw,
        height: ch,
        crop: w.codedRegion ?? undefined,
        pixelFormat: "rgb24-planar",
        sampling: o.sampling,
        numFrames: o.numFrames,
        skipUnshown: o.skipUnshown,
      }, null);
      using frames = decoded.frames;
      const host = frames.toHostSync();
      const n = frames.pts.length;
      const dest = out.dest ?? {
        data: w.spec.norm === null ? new Uint8Array(n * w.frameSize) : new Float32Array(n * w.frameSize),
        offset: 0,
      };
      const from = frameLayout("rgb24-planar", cw, ch);
      for (let k = 0; k < n; k++) {
        const src = host.subarray(k * from.frameSize, (k + 1) * from.frameSize);
        w.place(src, from.planes, dest.data, dest.offset + k * w.frameSize);
      }
      run.decodedFrames += frames.decodedFrames;
      run.skippedFrames += frames.skippedFrames;
      // Indexed by the pass's packets: its own are a part of them, without the frames before.
      const frameIndex = frameIndices(p, decoded.framePts);
      run.outputs.push({ data: dest.data, offset: dest.offset, pts: frames.pts, frameIndex });
    } catch (e) {
      const failed: OutputRun = {
        data: new Uint8Array(0),
        offset: 0,
        pts: new Float64Array(0),
        frameIndex: null,
        error: e,
      };
      run.outputs.push(failed);
    }
  }
  return run;
}

/** NVDEC's {@link ClipPassDecoder}. */
export const nvdecPassDecoder: ClipPassDecoder = { decode: decodeNvdecPass };
