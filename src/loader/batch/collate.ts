/**
 * `collate`: joins decoded clips into one batch: one array shaped `[B, T, H, W, 3]` (layout `"BTHWC"`, from
 * packed clips) or `[B, 3, T, H, W]` (layout `"BCTHW"`, from planar clips, whose frames are `[3, H, W]` each and
 * are regrouped plane by plane), bytes (`Uint8Array`) or normalised floats (`Float32Array`) as the clips are,
 * plus the labels as an `Int32Array` and per-clip metadata ({@link ClipMeta}). Every clip already holds exactly
 * `T` frames (the decode Workers pad a short clip by repeating its last frame and say so in its metadata).
 * A batch is `Disposable` (see {@link Batch}).
 * @module
 */

import { fmtSec, InvalidArgumentError } from "../../errors.ts";
import { releaseBuffers } from "../../pipeline/transfer.ts";
import type { BufferPool } from "../../memory/buffer_pool.ts";
import type { ClipDtype } from "../clip/clip_spec.ts";
import type { ClipMeta, DecodedClip } from "../clip/life.ts";

/** Memory layout of a batch. */
export type BatchLayout = "BTHWC" | "BCTHW";

/**
 * A batch of clips. Disposable: `for await (using batch of loader)` (or `batch[Symbol.dispose]()`) frees its
 * pixels and labels as soon as the step is done instead of at V8's next garbage collection, which keeps the
 * loader's memory flat at its working set. After that, `data` and `labels` read as empty. `cacheLoader` keeps
 * the batches it replays alive through their consumers' `using`.
 */
export interface Batch extends Disposable {
  /**
   * Samples: bytes for `dtype` `"uint8"`, normalised floats for `"float32"`; see `shape`. A batch in device
   * memory (`device` set) has no host samples: reading `data` throws, {@link Batch.toHost} copies them.
   */
  data: Uint8Array | Float32Array;
  /** Set when the samples live in GPU memory (`decode: "nvdec"` with batch slots); absent: host memory. */
  device?: BatchDevice;
  /** The samples in host memory: `data` itself, or (a device batch) a copy made now, device to host. */
  toHost(): Uint8Array | Float32Array;
  /** The sample type of `data`. */
  dtype: ClipDtype;
  /** `[B, T, H, W, 3]` or `[B, 3, T, H, W]`. */
  shape: number[];
  /** Which of the two `shape` is. */
  layout: BatchLayout;
  /** `labels[b]` is the class of clip `b`. */
  labels: Int32Array;
  /** `clips[b]` says what clip `b` is. */
  clips: ClipMeta[];
  /**
   * With the loader's `audio` option: each clip's audio, `float32` `[B, channels, samples]` (`audioShape`), in
   * host memory; `clips[b].audio` says whether clip `b`'s is the track's or zeros (see docs/clips.md).
   */
  audio?: Float32Array;
  /** `[B, channels, samples]`, with `audio`. */
  audioShape?: number[];
}

/**
 * Where a device batch's samples are: `byteLength` bytes at `pointer` (a CUDA device address, valid in every
 * thread of this process that makes the device's primary context current) on CUDA device `device`, laid out
 * as `shape` says, tight. Valid until the batch is disposed.
 */
export interface BatchDevice {
  /** CUDA device ordinal. */
  device: number;
  /** Device address of sample 0 (never dereference it on the host). */
  pointer: bigint;
  /** Bytes of the batch's samples. */
  byteLength: number;
}

/**
 * Where {@link collate} puts the pixels: `data` (exactly the batch's samples, e.g. a batch slot); with `placed`,
 * the clips' pixels are already there, in order (decoded into their places), and are not copied. Or `device`:
 * the clips were decoded into their places in device memory (in the batch's layout); `toHost` copies them.
 */
export type CollateInto = {
  data: Uint8Array | Float32Array;
  placed: boolean;
  /** Where the clips' audio goes (exactly the batch's), when they have audio. */
  audio?: Float32Array;
} | {
  device: BatchDevice;
  toHost: () => Uint8Array;
};

/**
 * Collates clips of `numFrames` frames each into a batch (a new buffer, or `into`); see the module docs. With
 * `recycle` and no `into`, the new buffer comes from that pool when it holds one of the batch's size, and goes
 * back to it when the batch is disposed (moved, so the batch's views read as empty as without it).
 */
export function collate(
  clips: readonly DecodedClip[],
  numFrames: number,
  layout: BatchLayout,
  into?: CollateInto,
  recycle?: BufferPool,
): Batch {
  if (clips.length === 0) throw new InvalidArgumentError("collate: no clips");
  const g = geometryOf(clips, numFrames);
  const { data, audio, onDevice } = destinationOf(g, into, recycle);
  const placed = data === null || (into !== undefined && "data" in into && into.placed);
  const labels = new Int32Array(g.B);
  const metas: ClipMeta[] = [];
  for (const [b, c] of clips.entries()) {
    const what = `collate: clip ${c.meta.path} [${fmtSec(c.meta.start)}, ${fmtSec(c.meta.end)})`;
    checkClip(what, c, g, data !== null);
    if (!placed) putClip(data!, c.data, b, g, layout);
    if (c.audio?.length !== g.audioLen) {
      throw new InvalidArgumentError(
        `${what} has ${c.audio?.length ?? 0} audio samples, the batch ${g.audioLen ?? 0}`,
      );
    }
    if (audio !== undefined) audio.set(c.audio!, b * g.audioLen!);
    labels[b] = c.meta.label;
    metas.push({ ...c.meta, ...c.outcome });
  }
  const { B, T, H, W } = g;
  const shape = layout === "BTHWC" ? [B, T, H, W, 3] : [B, 3, T, H, W];
  const dtype = g.float ? "float32" : "uint8";
  const b = { dtype, shape, layout, labels, clips: metas } as const;
  const batch = data !== null
    ? hostBatch(data, b, into === undefined ? recycle : undefined)
    : deviceBatch(onDevice!, b);
  if (audio !== undefined) {
    batch.audio = audio;
    const channels = clips[0].audioChannels ?? 1;
    batch.audioShape = [B, channels, g.audioLen! / channels];
  }
  return batch;
}

/** The sizes of a batch of `clips` (as its first clip is) of `T` frames each. */
interface BatchGeometry {
  B: number;
  T: number;
  H: number;
  W: number;
  /** Float samples (else bytes). */
  float: boolean;
  /** Samples of a frame (`W·H·3`). */
  frameSize: number;
  /** Samples of one channel's plane of a frame (`W·H`). */
  plane: number;
  /** Audio samples of a clip; undefined: the clips have no audio. */
  audioLen: number | undefined;
}

/** The {@link BatchGeometry} of `clips` of `numFrames` frames each. */
function geometryOf(clips: readonly DecodedClip[], numFrames: number): BatchGeometry {
  const { width: W, height: H } = clips[0];
  return {
    B: clips.length,
    T: numFrames,
    H,
    W,
    float: clips[0].data instanceof Float32Array,
    frameSize: W * H * 3,
    plane: W * H,
    audioLen: clips[0].audio?.length,
  };
}

/**
 * Where a batch of `g` goes: host samples (`into`'s, or a new buffer, from `recycle` when it holds one of the
 * batch's size) or `into`'s device memory, and its audio (`into`'s, or new).
 * @throws {InvalidArgumentError} when `into` does not hold exactly the batch's samples or audio
 */
function destinationOf(
  g: BatchGeometry,
  into: CollateInto | undefined,
  recycle: BufferPool | undefined,
): {
  data: Uint8Array | Float32Array | null;
  audio: Float32Array | undefined;
  onDevice: Extract<CollateInto, { device: BatchDevice }> | null;
} {
  const { B, T, frameSize, float, audioLen } = g;
  const onDevice = into !== undefined && "device" in into ? into : null;
  const host = into !== undefined && "data" in into ? into : null;
  const bytes = B * T * frameSize * (float ? 4 : 1);
  const buffer = into !== undefined
    ? null
    : (recycle?.bytes === bytes ? recycle.take() : undefined) ?? new ArrayBuffer(bytes);
  const data = host?.data ??
    (buffer === null ? null : float ? new Float32Array(buffer) : new Uint8Array(buffer));
  if (
    data !== null
      ? data.length !== B * T * frameSize || (data instanceof Float32Array) !== float
      : onDevice!.device.byteLength !== bytes
  ) {
    throw new InvalidArgumentError(`collate: the destination does not hold ${B} clips of ${T} frames`);
  }
  const audio = audioLen === undefined ? undefined : host?.audio ?? new Float32Array(B * audioLen);
  if (audio !== undefined && audio.length !== B * audioLen!) {
    throw new InvalidArgumentError(`collate: the audio destination does not hold ${B} clips' audio`);
  }
  return { data, audio, onDevice };
}

/**
 * Throws `InvalidArgumentError` naming clip `c` (`what`) when its size or sample type is not the batch's, or
 * (`hostSamples`: it is copied into host samples) its frames are not `T`.
 */
function checkClip(what: string, c: DecodedClip, g: BatchGeometry, hostSamples: boolean): void {
  if (c.width !== g.W || c.height !== g.H) {
    throw new InvalidArgumentError(`${what} is ${c.width}x${c.height}, batch is ${g.W}x${g.H}`);
  }
  if ((c.data instanceof Float32Array) !== g.float) {
    throw new InvalidArgumentError(`${what}: sample type differs from the batch's first clip`);
  }
  if (hostSamples && c.data.length !== g.T * g.frameSize) {
    throw new InvalidArgumentError(`${what} has ${c.data.length / g.frameSize} frames, the batch ${g.T}`);
  }
}

/** Copies clip `b`'s samples into `data`: whole (`"BTHWC"`), or regrouped plane by plane (`"BCTHW"`). */
function putClip(
  data: Uint8Array | Float32Array,
  clip: Uint8Array | Float32Array,
  b: number,
  g: BatchGeometry,
  layout: BatchLayout,
): void {
  const { T, frameSize, plane } = g;
  if (layout === "BTHWC") {
    (data as Uint8Array).set(clip as Uint8Array, b * T * frameSize);
    return;
  }
  for (let t = 0; t < T; t++) {
    const frame = clip.subarray(t * frameSize, (t + 1) * frameSize);
    for (let ch = 0; ch < 3; ch++) {
      (data as Uint8Array).set(
        frame.subarray(ch * plane, (ch + 1) * plane) as Uint8Array,
        ((b * 3 + ch) * T + t) * plane,
      );
    }
  }
}

/**
 * A batch in host memory: `data` and the rest of `b`; disposing it frees its pixels, labels and audio (its pixels'
 * buffer moves to `recycle`, when given, for a later batch).
 */
export function hostBatch(
  data: Uint8Array | Float32Array,
  b: Pick<Batch, "dtype" | "shape" | "layout" | "labels" | "clips">,
  recycle?: BufferPool,
): Batch {
  return {
    ...b,
    data,
    toHost() {
      return this.data;
    },
    [Symbol.dispose]() {
      if (recycle !== undefined) recycle.give(this.data.buffer);
      releaseBuffers([this.data, this.labels, ...(this.audio ? [this.audio] : [])]);
    },
  };
}

/** A batch whose samples stay in device memory; see {@link Batch.data}. */
function deviceBatch(
  into: { device: BatchDevice; toHost: () => Uint8Array },
  b: Pick<Batch, "dtype" | "shape" | "layout" | "labels" | "clips">,
): Batch {
  let live = true;
  const where = `a batch in GPU memory (device ${into.device.device})`;
  return {
    ...b,
    get data(): Uint8Array | Float32Array {
      throw new InvalidArgumentError(
        `${where} has no host samples: hand on \`batch.device.pointer\`, or copy them with \`batch.toHost()\``,
      );
    },
    device: into.device,
    toHost() {
      if (!live) throw new InvalidArgumentError(`${where} was disposed: its slot holds another batch now`);
      const bytes = into.toHost();
      return b.dtype === "float32"
        ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
        : bytes;
    },
    [Symbol.dispose]() {
      live = false;
      releaseBuffers([this.labels, ...(this.audio ? [this.audio] : [])]);
    },
  };
}
