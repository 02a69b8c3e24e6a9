/**
 * NVDEC's `ClipPassDecoder` (the seam the loader's clip pass decodes through, `src/media/decode_pass.ts`): the
 * decoder's crop (display area) and resize (target size) are set per decode, and the clips of a pass differ in
 * both, so each output is decoded from its own packets within the pass's (frames no position shows are still left
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
import type { DeviceFrames, FrameDestination, FrameWriter } from "../media/frame_writer.ts";
import { InvalidArgumentError } from "../errors.ts";
import { decodeNvdec } from "./decoder.ts";
import { frameIndices } from "../media/frame_index.ts";
import { copyOnDevice, CudaBuffer, type CudaFrames } from "./cuda_buffer.ts";
import { placeFrames } from "./convert.ts";

/** Decodes each output of a pass with NVDEC on `device`; see the module docs. */
function decodeNvdecPass(
  p: VideoPackets,
  o: ResolvedOptions,
  outputs: readonly PassOutput[],
  device: number,
): PassRun {
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
        device,
        width: cw,
        height: ch,
        crop: w.codedRegion ?? undefined,
        pixelFormat: "rgb24-planar",
        sampling: o.sampling,
        numFrames: o.numFrames,
        skipUnshown: o.skipUnshown,
      }, null);
      using frames = decoded.frames;
      const n = frames.pts.length;
      const dest = out.dest ?? {
        data: w.spec.norm === null ? new Uint8Array(n * w.frameSize) : new Float32Array(n * w.frameSize),
        offset: 0,
      };
      placeOnDevice(frames, w, dest, o.numFrames);
      run.decodedFrames += frames.decodedFrames;
      run.skippedFrames += frames.skippedFrames;
      // Indexed by the pass's packets: its own are a part of them, without the frames before.
      const frameIndex = frameIndices(p, decoded.framePts);
      run.outputs.push({
        data: dest.data,
        offset: dest.offset,
        pts: frames.pts,
        frameTimes: decoded.frameTimes,
        frameIndex,
      });
    } catch (e) {
      const failed: OutputRun = {
        data: new Uint8Array(0),
        offset: 0,
        pts: new Float64Array(0),
        frameTimes: new Float64Array(0),
        frameIndex: null,
        error: e,
      };
      run.outputs.push(failed);
    }
  }
  return run;
}

const PASSES = new Map<number, ClipPassDecoder>();

/** NVDEC's {@link ClipPassDecoder} on CUDA device `device` (made once per device). */
export function nvdecPassDecoder(device = 0): ClipPassDecoder {
  let d = PASSES.get(device);
  if (d === undefined) {
    d = { decode: (p, o, outputs) => decodeNvdecPass(p, o, outputs, device) };
    PASSES.set(device, d);
  }
  return d;
}

/** Whether `decoder` is NVDEC's (it alone writes into device memory, {@link FrameDestination}`.device`). */
export function isNvdecPass(decoder: ClipPassDecoder): boolean {
  return [...PASSES.values()].includes(decoder);
}

/**
 * The writer's frames made from `frames` on the GPU (`placeFrames`: its orientation, layout and sample type):
 * straight into a device destination (a batch slot's place; `planesFirst`: `[3, T, H, W]`, as a `"BCTHW"` batch
 * holds it), else in a device buffer copied into `dest` once.
 */
function placeOnDevice(frames: CudaFrames, w: FrameWriter, dest: FrameDestination, numFrames: number): void {
  const n = frames.pts.length;
  if (n === 0) return;
  const size = w.spec.norm === null ? 1 : 4;
  const bytes = n * w.frameSize * size;
  const p = w.planes, plane = w.frameSize / 3;
  const onDevice = dest.device;
  const strides = p.length === 1
    ? { x: 3, y: p[0].stride, c: 1, t: w.frameSize }
    : onDevice?.planesFirst
    ? { x: 1, y: p[0].stride, c: numFrames * plane, t: plane }
    : { x: 1, y: p[0].stride, c: p[1].offset, t: w.frameSize };
  const place = (dst: bigint) =>
    placeFrames(frames, dst, {
      width: w.width,
      height: w.height,
      strides,
      rotation: w.spec.rotation,
      mirror: w.spec.mirror,
      norm: w.spec.norm,
    });
  if (onDevice !== undefined) {
    if (onDevice.device !== frames.device) {
      throw new InvalidArgumentError(
        `NVDEC clip: decoded on device ${frames.device}, its place is on ${onDevice.device}`,
      );
    }
    return place(onDevice.address + BigInt(dest.offset * size));
  }
  using placed = CudaBuffer.alloc(bytes, frames.device);
  place(placed.devicePtr);
  const d = dest.data;
  const out = new Uint8Array(d.buffer, d.byteOffset + dest.offset * size, bytes);
  placed.copyToHost(0, bytes, bytes, 1, out);
}

/**
 * Fills frames `filled .. numFrames - 1` of a clip in device memory with copies of its last frame (held or
 * padded frames), device to device; `frameBytes`: one frame's bytes.
 */
export function repeatLastFrameOnDevice(
  where: DeviceFrames,
  filled: number,
  numFrames: number,
  frameBytes: number,
): void {
  const a = where.address;
  // [3, T, H, W]: a frame is three planes T planes apart; [T, ...]: one block
  const [rowBytes, rows, pitch] = where.planesFirst
    ? [frameBytes / 3, 3, numFrames * frameBytes / 3]
    : [frameBytes, 1, frameBytes];
  const last = BigInt((filled - 1) * rowBytes);
  for (let k = filled; k < numFrames; k++) {
    copyOnDevice(where.device, {
      src: a + last,
      dst: a + BigInt(k * rowBytes),
      rowBytes,
      rows,
      srcPitch: pitch,
      dstPitch: pitch,
    });
  }
}
