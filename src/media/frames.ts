/**
 * `VideoFrames`: decoded video frames in one contiguous buffer, with their timestamps and how to read the
 * bytes. The layouts (`T` frames of `W`×`H`):
 *
 * | pixelFormat | shape | bytes per frame |
 * | --- | --- | --- |
 * | `rgb24`, `bgr24` | `[T, H, W, 3]` (packed) | `W·H·3` |
 * | `gray` | `[T, H, W, 1]` | `W·H` |
 * | `rgb24-planar` | `[T, 3, H, W]` (planes R, G, B) | `W·H·3` |
 * | `yuv420p` | `[T, H·3/2, W]` (tight I420: Y, then U, then V) | `W·H·3/2` |
 *
 * `yuv420p` with an odd width or height rounds the chroma planes up: each is `⌈W/2⌉×⌈H/2⌉`, so a frame is
 * `W·H + 2·⌈W/2⌉·⌈H/2⌉` bytes, which no `[H', W]` shape describes; the shape is then `[T, frameSize]` and
 * `planes` gives each plane's offset and size (it is always filled, for even sizes too).
 * @module
 */

/** Pixel formats `decodeVideo` can produce. */
export type PixelFormat = "rgb24" | "bgr24" | "gray" | "yuv420p" | "rgb24-planar";

/** Every {@link PixelFormat}, for validating user input. */
export const PIXEL_FORMATS: readonly PixelFormat[] = ["rgb24", "bgr24", "gray", "yuv420p", "rgb24-planar"];

/** Where one plane of a frame lies inside the frame's bytes. */
export interface PlaneLayout {
  /** Byte offset from the start of the frame. */
  offset: number;
  /** Plane width in samples. */
  width: number;
  /** Plane height in rows. */
  height: number;
  /** Bytes per row (tight: no padding). */
  stride: number;
}

/** Decoded frames of one video (or one window of it). See the module docs for the layouts. */
export interface VideoFrames {
  /** All frames back to back, `frameSize` bytes each. */
  data: Uint8Array;
  /** `[T, H, W, C]`, `[T, C, H, W]` for `rgb24-planar`, `[T, H·3/2, W]` (or `[T, frameSize]`) for `yuv420p`. */
  shape: number[];
  /** Presentation time of each frame in seconds on the stream's absolute timeline (`pts × timeBase`). */
  pts: Float64Array;
  /**
   * Index of each frame in the stream's presentation order (ffprobe's frame order: 0 is the stream's first frame),
   * however far into the stream the packets start; null when the packets cannot tell (see
   * `VideoPackets.firstFrameIndex`). Resampled positions give the index of the frame they show.
   */
  frameIndex: Int32Array | null;
  /** Layout of `data` (see the module docs). */
  pixelFormat: PixelFormat;
  /** Output frame width and height in pixels. */
  width: number;
  /** See `width`. */
  height: number;
  /** Bytes per frame. */
  frameSize: number;
  /** The planes of one frame (one entry for packed formats). */
  planes: PlaneLayout[];
  /** Display rotation of the stream in degrees, counter-clockwise, as ffprobe reports it (0, 90, 180, -90). */
  rotation: number;
  /** True when `rotation` was applied (`rotate: true`): the pixels are as displayed; else in coded orientation. */
  rotated: boolean;
  /** Packets the decoder rejected or failed on (corrupt bitstream); their frames are missing. */
  failedPackets: number;
  /** Frames the decoder produced in total, including those outside the window and those resampling dropped. */
  decodedFrames: number;
  /** Frames left undecoded because no output position shows them (`DecodeOptions.skipUnshown`). */
  skippedFrames: number;
  /** True when `numFrames` asked for more frames than the packets hold (T is then smaller). */
  short: boolean;
  /** Where the packets came from, for messages. */
  source: string;
}

/** Layout of one frame of `format` at `width`×`height`: its planes and its byte size. */
export function frameLayout(format: PixelFormat, width: number, height: number): {
  planes: PlaneLayout[];
  frameSize: number;
} {
  const area = width * height;
  switch (format) {
    case "rgb24":
    case "bgr24":
      return { planes: [{ offset: 0, width, height, stride: width * 3 }], frameSize: area * 3 };
    case "gray":
      return { planes: [{ offset: 0, width, height, stride: width }], frameSize: area };
    case "rgb24-planar": {
      const planes = [0, 1, 2].map((i) => ({ offset: i * area, width, height, stride: width }));
      return { planes, frameSize: area * 3 };
    }
    case "yuv420p": {
      const cw = Math.ceil(width / 2), ch = Math.ceil(height / 2);
      const planes = [
        { offset: 0, width, height, stride: width },
        { offset: area, width: cw, height: ch, stride: cw },
        { offset: area + cw * ch, width: cw, height: ch, stride: cw },
      ];
      return { planes, frameSize: area + 2 * cw * ch };
    }
  }
}

/** The `shape` of `count` frames (see the module docs). */
export function frameShape(format: PixelFormat, count: number, width: number, height: number): number[] {
  switch (format) {
    case "rgb24":
    case "bgr24":
      return [count, height, width, 3];
    case "gray":
      return [count, height, width, 1];
    case "rgb24-planar":
      return [count, 3, height, width];
    case "yuv420p":
      if (width % 2 === 0 && height % 2 === 0) return [count, (height * 3) / 2, width];
      return [count, frameLayout(format, width, height).frameSize];
  }
}

/** Frame `i` of `frames` (a view, no copy). */
export function frameAt(frames: VideoFrames, i: number): Uint8Array {
  return frames.data.subarray(i * frames.frameSize, (i + 1) * frames.frameSize);
}
