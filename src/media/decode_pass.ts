/**
 * The CPU decode pass: `decodePass(p, o, outputs)` decodes one run of packets once, forward, for one output (a
 * `decodeVideo` call) or several (windows of one video whose packets overlap: the loader's clips), each output a
 * {@link PositionFiller} over its own selector writing through its `FrameWriter`. It leaves undecoded the frames no
 * output shows (`ShownFrames`, sent with `skip_frame = nonref`) and starts over decoding every frame when the
 * stream is not what that assumes (`decodeOrStartOver`), so the output never depends on the shortcut.
 *
 * {@link ClipPassDecoder} is the seam the loader's clip pass (`src/loader/clip_pass.ts`) decodes through: the CPU
 * implements it here ({@link cpuPassDecoder}), NVDEC in `src/nvdec/clip_pass.ts`.
 * @module
 */
import { errorText } from "./ffmpeg.ts";
import { lap } from "./spans.ts";
import type { Frame } from "./av_objects.ts";
import { frame as avframe, type Ptr } from "./structs.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { NOPTS, ptsToSeconds, VideoPackets } from "./packets.ts";
import type { PixelFormat } from "./frames.ts";
import {
  decodeOrStartOver,
  type FrameSampling,
  framesInWindow,
  type PositionPlan,
  positionPlan,
  ShownFrames,
  StartOver,
} from "./frame_select.ts";
import { type FrameTarget, PositionFiller } from "./position_filler.ts";
import { frameIndices } from "./frame_index.ts";
import type { FrameDestination, FrameWriter } from "./frame_writer.ts";
import { acquireDecoder, type Decoder, type FramePool, releaseDecoder } from "./decoder.ts";

/** The decode options a pass follows, checked and with their defaults (see `DecodeOptions` in `decode.ts`). */
export interface ResolvedOptions {
  pixelFormat: PixelFormat;
  sampling: FrameSampling;
  numFrames: number;
  threads: number;
  skipNonRef: boolean;
  skipUnshown: boolean;
  onCorrupt: "skip" | "error";
  flags: number;
}

/** One output of a pass: its own packets among the pass's, its window, and where its frames go. */
export interface PassOutput {
  /**
   * Its own packets `[from, to)` among the pass's: what the demuxer cuts for its window alone. They decide its
   * positions (the stream's extent, what the window can hold) exactly as when it is decoded alone; the frames of the
   * other packets are offered to its selector too, which keeps the same frames (earlier ones are before its start
   * keyframe, so before its window; later ones after its last position or its window).
   */
  range: readonly [number, number];
  /** Its window `[start, end)` seconds, or null for the whole stream. */
  window: readonly [number, number] | null;
  /** Region, size and format of its frames. */
  writer: FrameWriter;
  /** Where its frame `k` goes (`dest.offset + k·writer.frameSize`); null: a buffer grown as needed. */
  dest: FrameDestination | null;
}

/** What a pass did for one output. */
export interface OutputRun {
  /** The buffer holding its frames and the element offset of its frame 0. */
  data: Uint8Array | Float32Array;
  offset: number;
  /** Time of each of its frames (the grid time when resampling). */
  pts: Float64Array;
  /**
   * The presentation time of the frame each position shows (its own, not the grid's): what the delivery rule
   * checks (`src/loader/clip_check.ts`).
   */
  frameTimes: Float64Array;
  /**
   * The index in the stream's presentation order of the frame each position shows (`frame_index.ts`); null when the
   * packets cannot tell.
   */
  frameIndex: Int32Array | null;
  /** Why this output failed (its frames are not valid; the pass's other outputs are unaffected). */
  error?: unknown;
}

/** What a pass did: per output, and the work of the pass as a whole. */
export interface PassRun {
  /** One entry per output, in the order given. */
  outputs: OutputRun[];
  /** Frames the decoder produced (over both attempts when a skipping pass had to start over). */
  decodedFrames: number;
  /** Frames left undecoded because no output shows them. */
  skippedFrames: number;
  /** Packets the decoder rejected, and the first rejection's message. */
  failedPackets: number;
  firstFailure: string;
}

/**
 * One decode pass over a run of packets for several outputs, by some decoder: the CPU's ({@link cpuPassDecoder})
 * or NVDEC's. Output `k` gets exactly the frames it gets when decoded alone from its own packets; a failure that
 * concerns one output is its {@link OutputRun.error}; a failure of the decoder throws.
 */
export interface ClipPassDecoder {
  /** Decodes `p` for `outputs` (one {@link OutputRun} each, in order). */
  decode(p: VideoPackets, o: ResolvedOptions, outputs: readonly PassOutput[]): PassRun;
}

/** The CPU's {@link ClipPassDecoder}: {@link decodePass}. */
export const cpuPassDecoder: ClipPassDecoder = { decode: decodePass };

/**
 * Decodes `p` once, forward, for several outputs (windows of one video whose packets overlap): each decoded frame
 * is offered to every output's selector and written into every output that shows it; decoding stops when every
 * output is full. Output `k` gets exactly the frames it gets when decoded alone from its own packets (`range`).
 * A failure that concerns one output (its destination is too small, its window would fill too many positions) is
 * recorded in its {@link OutputRun.error} and the others go on; a failure of the decoder fails the pass.
 *
 * With `o.skipUnshown`, the frames no output shows ({@link ShownFrames}) are sent with `skip_frame = nonref`: the
 * decoder leaves them undecoded when nothing references them (non-reference B-frames before a window, between the
 * frames a stride or a resampling keeps); where a skipped frame would have come out, its time is offered to the
 * selectors all the same, so they decide exactly as without skipping. The decode is checked as it goes (frames
 * come out in presentation order, one per packet, with the packet's pts; no packet fails): anything else
 * (field-coded pictures, a corrupt packet, packets without timestamps) starts the pass over without skipping.
 */
export function decodePass(p: VideoPackets, o: ResolvedOptions, outputs: readonly PassOutput[]): PassRun {
  const decoder = acquireDecoder(p, o.threads);
  decoder.setSkipNonRef(o.skipNonRef);
  const outs = outputs.map((spec) => new Output(p, o, spec, decoder.pool));
  lap("setup");
  try {
    const shown = o.skipUnshown && !o.skipNonRef ? unshownFrames(p, outs) : null;
    const run = decodeOrStartOver(shown !== null, (leaveOut, before) => {
      if (shown !== null && !leaveOut) {
        // The stream is not what skipping assumes: decode it again, every frame.
        decoder.flush();
        decoder.setSkipNonRef(false);
        for (const out of outs) out.reset();
      }
      const r = runPass(decoder, p, o, outs, leaveOut ? new SkipTracker(p, shown!) : null);
      return { decoded: before + r.decoded, skipped: r.skipped };
    });
    return {
      outputs: outs.map((out) => out.result(p)),
      decodedFrames: run.decoded,
      skippedFrames: run.skipped,
      failedPackets: decoder.failed,
      firstFailure: decoder.firstFailure,
    };
  } catch (e) {
    // A failure mid-stream leaves the codec in an unknown state: drop it rather than reuse it.
    releaseDecoder();
    throw e;
  } finally {
    for (const out of outs) out.release();
  }
}

/**
 * `p`'s packets `[from, to)` as a {@link VideoPackets} of their own (views, no copy) with `window`. A part of the
 * packets has no `firstFrameIndex` (its earliest frame is not theirs): index frames by the whole run.
 */
export function packetRange(
  p: VideoPackets,
  [from, to]: readonly [number, number],
  window: readonly [number, number] | null,
): VideoPackets {
  if (from === 0 && to === p.numPackets && window === p.window) return p;
  return new VideoPackets({
    ...p,
    firstFrameIndex: from === 0 && to === p.numPackets ? p.firstFrameIndex : undefined,
    window: window === null ? null : [window[0], window[1]],
    pts: p.pts.subarray(from, to),
    dts: p.dts.subarray(from, to),
    duration: p.duration.subarray(from, to),
    flags: p.flags.subarray(from, to),
    offsets: p.offsets.subarray(from, to),
    sizes: p.sizes.subarray(from, to),
  });
}

/** Output frames a decode may produce per packet (resampling repeats frames; nothing else does). */
const MAX_POSITIONS_PER_PACKET = 1000;

/** The time range the packets' timestamps claim, for messages. */
function packetSpan(p: VideoPackets): string {
  const plan = positionPlan(p, { sampling: { kind: "consecutive" }, numFrames: Infinity });
  return `[${Number(plan.streamStart.toFixed(3))}, ${Number(plan.streamEnd.toFixed(3))}) s`;
}

// ------------------------------------------------------------------------------------------ timestamps

/** `pts × timeBase` of a decoded frame, falling back to its best-effort timestamp (NaN when it has neither). */
function frameSeconds(f: Ptr, tb: [number, number]): number {
  const ts = avframe.pts(f) ?? avframe.bestEffortTimestamp(f);
  return ts === null || ts === NOPTS ? NaN : ptsToSeconds(ts, tb);
}

// ------------------------------------------------------------------------------------------ skipping

/** The frames no output shows, or null when there is none (or the times cannot tell frames apart). */
function unshownFrames(p: VideoPackets, outs: readonly Output[]): ShownFrames | null {
  const shown = ShownFrames.of(p, outs.filter((out) => out.error === undefined).map((out) => out.plan));
  return shown !== null && shown.unshownCount > 0 ? shown : null;
}

/**
 * What a skipping pass sends and checks: which packets go with `skip_frame = nonref` (those whose frame no output
 * shows), and, as frames come out, which skipped frames passed unseen before each (to be offered as if decoded).
 * Frames must come out in presentation order, one per packet, each with its packet's pts, and every packet sent
 * without skipping must give its frame: anything else is a `StartOver`.
 */
class SkipTracker {
  /** Per packet (decode order): 1 when it is sent with `skip_frame = nonref`. */
  readonly skip: Uint8Array;
  /** Frames skipped (offered unseen) so far. */
  skipped = 0;
  readonly #shown: ShownFrames;
  readonly #sent: Uint8Array;
  #next = 0;

  constructor(p: VideoPackets, shown: ShownFrames) {
    this.#shown = shown;
    this.skip = new Uint8Array(p.numPackets);
    for (let k = 0; k < shown.byRank.length; k++) if (!shown.shown[k]) this.skip[shown.byRank[k]] = 1;
    this.#sent = new Uint8Array(p.numPackets);
  }

  /** Presentation time (seconds) of the frame of rank `r`. */
  time(r: number): number {
    return this.#shown.times[r];
  }

  /** Packet `i` is being sent. */
  send(i: number): void {
    this.#sent[i] = 1;
  }

  /** A frame with pts `pts` came out: the ranks of the skipped frames presented before it, in order. */
  out(pts: bigint | null): number[] {
    const r = pts === null ? -1 : this.#shown.rank(pts);
    if (r < this.#next) throw new StartOver(`a frame with pts ${pts} is not the next packet's`);
    const passed = this.#pass(r);
    if (!this.#sent[this.#shown.byRank[r]]) throw new StartOver(`frame ${pts} came out before its packet`);
    this.#next = r + 1;
    return passed;
  }

  /** End of stream: the ranks of the skipped frames after the last one out (every sent packet must be out). */
  end(): number[] {
    const byRank = this.#shown.byRank;
    let last = byRank.length;
    while (last > this.#next && !this.#sent[byRank[last - 1]]) last--;
    const passed = this.#pass(last);
    this.#next = last;
    return passed;
  }

  /** Ranks `[next, r)`: each was skipped (returned), else the plan is wrong. */
  #pass(r: number): number[] {
    const passed: number[] = [];
    for (let k = this.#next; k < r; k++) {
      const i = this.#shown.byRank[k];
      if (!this.#sent[i] || !this.skip[i]) throw new StartOver(`the frame of packet ${i} did not come out`);
      passed.push(k);
    }
    this.skipped += passed.length;
    return passed;
  }
}

// ------------------------------------------------------------------------------------------ outputs

/** One output of a pass: its positions (a {@link PositionFiller}), the AVFrame it keeps back, and its failure. */
class Output implements FrameTarget<Frame> {
  readonly plan: PositionPlan;
  readonly filler: PositionFiller<Frame>;
  error: unknown = undefined;
  readonly #out: PositionBuffer;
  readonly #pool: FramePool;
  #kept: Frame | null = null;

  constructor(p: VideoPackets, o: ResolvedOptions, spec: PassOutput, pool: FramePool) {
    this.#pool = pool;
    const own = packetRange(p, spec.range, spec.window);
    this.plan = positionPlan(own, o);
    this.filler = new PositionFiller(this.plan, this);
    const capacity = this.filler.selector.capacity(framesInWindow(own));
    this.#out = new PositionBuffer(p.source, spec.writer, spec.dest, capacity);
    if (capacity > MAX_POSITIONS_PER_PACKET * Math.max(1, own.numPackets)) {
      // Only resampling repeats frames; this many repeats means the timestamps (or the window) are not a video's.
      this.error = new MediaError(
        p.source,
        "decode",
        `${own.numPackets} packets with timestamps over ${
          packetSpan(own)
        } would fill ${capacity} output frames ` +
          `(more than ${MAX_POSITIONS_PER_PACKET} a packet): pass numFrames or a narrower window`,
      );
    }
  }

  /** Full, or failed: no later frame changes it. */
  get done(): boolean {
    return this.error !== undefined || this.filler.done;
  }

  /** End of stream: the frame kept back fills the positions left. */
  finish(): void {
    if (this.error === undefined) this.filler.finish();
  }

  /** Back to the start (the pass starts over); a failure stays. */
  reset(): void {
    this.filler.reset();
  }

  /** What it got; `p`: the pass's packets (its frames' indices are theirs). */
  result(p: VideoPackets): OutputRun {
    const run: OutputRun = {
      data: this.#out.data,
      offset: this.#out.offset,
      pts: this.filler.times(),
      frameTimes: this.filler.frameTimes(),
      frameIndex: frameIndices(p, this.filler.framePts()),
    };
    if (this.error !== undefined) run.error = this.error;
    return run;
  }

  /** Lets go of the frame kept back. */
  release(): void {
    this.filler.release();
  }

  /** A decoded frame comes out: offered to its slots; frames out of order fail this output alone. */
  offer(f: Frame, t: number, pts: bigint): void {
    try {
      this.filler.offer(f, t, pts);
    } catch (e) {
      if (!(e instanceof MediaError)) throw e; // StartOver, or a bug
      this.error = e;
      this.filler.release();
    }
  }

  write(f: Frame, first: number, count: number): void {
    if (this.error !== undefined) return;
    lap("decode");
    try {
      this.#out.fill(f.ptr, first, count);
    } catch (e) {
      this.error = e; // its destination or its memory: this output's failure alone
    }
    lap("convert");
  }

  keep(f: Frame): void {
    this.drop();
    this.#pool.hold(f);
    this.#kept = f;
  }

  writeKept(first: number, count: number): void {
    this.write(this.#kept!, first, count);
  }

  drop(): void {
    if (this.#kept !== null) this.#pool.release(this.#kept);
    this.#kept = null;
  }
}

// ------------------------------------------------------------------------------------------ decode loop

/** Bound on receive calls per packet: a decoder never yields this many frames for one packet. */
const MAX_FRAMES_PER_PACKET = 4096;

/** State of one run through the packets. */
interface PassState {
  decoder: Decoder;
  p: VideoPackets;
  o: ResolvedOptions;
  outs: readonly Output[];
  skips: SkipTracker | null;
  decoded: number;
}

function allDone(outs: readonly Output[]): boolean {
  for (const out of outs) if (!out.done) return false;
  return true;
}

/** Sends the packets (skipping per `skips`) until every output is done; returns the frames decoded and skipped. */
function runPass(
  decoder: Decoder,
  p: VideoPackets,
  o: ResolvedOptions,
  outs: readonly Output[],
  skips: SkipTracker | null,
): { decoded: number; skipped: number } {
  const st: PassState = { decoder, p, o, outs, skips, decoded: 0 };
  try {
    for (let i = 0; i < p.numPackets && !allDone(outs); i++) {
      if (skips !== null) {
        decoder.setSkipNonRef(skips.skip[i] === 1);
        skips.send(i);
      }
      let ret = decoder.send(p, i);
      if (ret === AVERROR_EAGAIN) {
        drain(st, i);
        ret = decoder.send(p, i);
      }
      if (ret < 0 && ret !== AVERROR_EAGAIN) failPacket(st, ret, `packet ${i} (pts ${p.pts[i]})`);
      drain(st, i);
    }
    if (!allDone(outs)) {
      decoder.sendEof();
      drain(st, -1);
      if (skips !== null) offerSkipped(st, skips.end());
      for (const out of outs) out.finish();
    }
  } catch (e) {
    if (e instanceof StartOver) e.decoded = st.decoded;
    throw e;
  }
  return { decoded: st.decoded, skipped: skips?.skipped ?? 0 };
}

function failPacket(st: PassState, code: number, what: string): void {
  // A skipping pass decodes exactly what a full one does only on a clean stream: start over.
  if (st.skips !== null) throw new StartOver(`${what}: ${errorText(code)}`);
  st.decoder.noteFailure(code, what);
  if (st.o.onCorrupt === "error") {
    throw new MediaError(
      st.decoder.source,
      "decode",
      `${what} is corrupt: ${errorText(code)} (onCorrupt: "error")`,
      code,
    );
  }
}

function offerSkipped(st: PassState, ranks: number[]): void {
  for (const r of ranks) {
    const t = st.skips!.time(r);
    for (const out of st.outs) if (!out.done) out.filler.offerSkipped(t);
  }
}

function drain(st: PassState, i: number): void {
  const { decoder, p, outs, skips } = st;
  for (let n = 0; n < MAX_FRAMES_PER_PACKET && !allDone(outs); n++) {
    const cur = decoder.pool.take();
    try {
      const ret = decoder.receive(cur);
      if (ret === AVERROR_EAGAIN || ret === AVERROR_EOF) return;
      if (ret < 0) {
        failPacket(st, ret, i < 0 ? "draining the decoder" : `frame after packet ${i}`);
        if (i < 0) return; // a failing drain may keep failing: stop
        continue;
      }
      st.decoded++;
      const pts = avframe.pts(cur.ptr);
      if (skips !== null) offerSkipped(st, skips.out(pts));
      const t = frameSeconds(cur.ptr, p.timeBase);
      for (const out of outs) if (!out.done) out.offer(cur, t, pts ?? NOPTS);
    } finally {
      decoder.pool.release(cur);
    }
  }
}

// ------------------------------------------------------------------------------------------ output

/** The output positions: the caller's destination, or a buffer grown as frames come. */
class PositionBuffer {
  data: Uint8Array | Float32Array;
  offset: number;
  readonly #source: string;
  readonly #writer: FrameWriter;
  readonly #fixed: boolean;
  #capacity: number;

  constructor(source: string, writer: FrameWriter, dest: FrameDestination | null, capacity: number) {
    this.#source = source;
    this.#writer = writer;
    this.#fixed = dest !== null;
    this.data = dest?.data ?? new Uint8Array(0);
    this.offset = dest?.offset ?? 0;
    this.#capacity = Math.max(1, capacity);
  }

  /** Writes frame `f` into positions `[first, first + count)`: converted once, copied for the others. */
  fill(f: Ptr, first: number, count: number): void {
    const w = this.#writer;
    if (!w.ready) w.init(avframe.width(f), avframe.height(f));
    this.#reserve(first + count);
    const size = w.frameSize, at = this.offset + first * size;
    w.write(f, this.data, at, this.#source);
    for (let k = 1; k < count; k++) this.data.copyWithin(at + k * size, at, at + size);
  }

  #reserve(positions: number): void {
    const size = this.#writer.frameSize;
    if (this.#fixed) {
      if (this.offset + positions * size > this.data.length) {
        throw new InvalidArgumentError(
          `${this.#source}: the destination has room for ${
            Math.floor((this.data.length - this.offset) / size)
          } ` +
            `frames of ${size} elements from offset ${this.offset}; frame ${positions - 1} does not fit`,
        );
      }
      return;
    }
    if (this.data.length === 0) this.data = this.#alloc(this.#capacity * size);
    if (positions * size <= this.data.length) return;
    this.#capacity = Math.max(positions, this.#capacity + 4, Math.ceil(this.#capacity * 1.5));
    const next = this.#alloc(this.#capacity * size);
    next.set(this.data);
    this.data = next;
  }

  #alloc(bytes: number): Uint8Array {
    try {
      return new Uint8Array(bytes);
    } catch (e) {
      throw new MediaError(
        this.#source,
        "decode",
        `no memory for ${this.#capacity} output frames (${(bytes / 2 ** 20).toFixed(1)} MiB): ${e}`,
        undefined,
        { cause: e },
      );
    }
  }
}
