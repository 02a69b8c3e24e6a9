/**
 * NVDEC's `ClipPassDecoder` (the seam the loader's clip pass decodes through, `src/media/decode_pass.ts`): the
 * decoder's crop (display area) and resize (target size) are set per decode, and the clips of a pass differ in
 * both, so each output is decoded from its own packets within the pass's (frames no slot shows are still left
 * out); the clip kernel turns, flips, lays out and converts (`float32`) its frames on the GPU as its
 * `FrameWriter` asks, and the finished frames are copied once into the destination: no pixel is touched by the CPU.
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
import type { VideoPackets } from "../media/packets.ts";
import type { FrameDestination, FrameWriter } from "../media/frame_writer.ts";
import { decodeVideoNvdecSync } from "./decoder.ts";
import { CudaBuffer, type CudaFrames } from "./cuda_buffer.ts";
import { placeFrames } from "./convert.ts";

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
      using frames = decodeVideoNvdecSync(own, {
        width: cw,
        height: ch,
        crop: w.codedRegion ?? undefined,
        pixelFormat: "rgb24-planar",
        sampling: o.sampling,
        numFrames: o.numFrames,
        skipUnshown: o.skipUnshown,
      });
      const n = frames.pts.length;
      const dest = out.dest ?? {
        data: w.spec.norm === null ? new Uint8Array(n * w.frameSize) : new Float32Array(n * w.frameSize),
        offset: 0,
      };
      placeOnDevice(frames, w, dest);
      run.decodedFrames += frames.decodedFrames;
      run.skippedFrames += frames.skippedFrames;
      run.outputs.push({ data: dest.data, offset: dest.offset, pts: frames.pts });
    } catch (e) {
      const failed: OutputRun = { data: new Uint8Array(0), offset: 0, pts: new Float64Array(0), error: e };
      run.outputs.push(failed);
    }
  }
  return run;
}

/** NVDEC's {@link ClipPassDecoder}. */
export const nvdecPassDecoder: ClipPassDecoder = { decode: decodeNvdecPass };

/**
 * The writer's frames made from `frames` on the GPU (`placeFrames`: its orientation, layout and sample type) in a
 * device buffer, then copied into `dest` as they are.
 */
function placeOnDevice(frames: CudaFrames, w: FrameWriter, dest: FrameDestination): void {
  const n = frames.pts.length;
  if (n === 0) return;
  const size = w.spec.norm === null ? 1 : 4;
  const bytes = n * w.frameSize * size;
  const p = w.planes;
  const strides = p.length === 1
    ? { x: 3, y: p[0].stride, c: 1, t: w.frameSize }
    : { x: 1, y: p[0].stride, c: p[1].offset, t: w.frameSize };
  using placed = CudaBuffer.alloc(bytes, frames.device);
  placeFrames(frames, placed.devicePtr, {
    width: w.width,
    height: w.height,
    strides,
    rotation: w.spec.rotation,
    mirror: w.spec.mirror,
    norm: w.spec.norm,
  });
  const d = dest.data;
  const out = new Uint8Array(d.buffer, d.byteOffset + dest.offset * size, bytes);
  placed.copyToHost(0, bytes, bytes, 1, out);
}
