/**
 * One output's positions as a decoder fills them: the bookkeeping between the frame selector (`frame_select.ts`) and a
 * decoder's pixels, written once for the CPU decode pass (`decode_pass.ts`) and the NVDEC session
 * (`src/nvdec/session.ts`). A decoder hands each frame it outputs (in presentation order) to
 * {@link PositionFiller.offer}, and the time of each frame it left out to {@link PositionFiller.offerSkipped}; the filler
 * asks the selector what the frame does and tells the decoder's {@link FrameTarget} what to write where: this
 * frame into positions, the frame kept back (held for later positions) into positions, this frame kept back. It records which
 * frame (its pts) each position shows, for the positions' `frameIndex` (`frame_index.ts`). Anything a left-out frame would have had to do (fill a position, directly or as
 * the frame kept back) throws `StartOver`.
 * @module
 */
import { FrameSelector, type PositionPlan, StartOver } from "./frame_select.ts";
import { NOPTS } from "./packets.ts";

/** Where one output's frames go: the decoder's side of a {@link PositionFiller} (`F`: its frame handle). */
export interface FrameTarget<F> {
  /** Writes `frame` into positions `[first, first + count)` (converted once, copied into the others). */
  write(frame: F, first: number, count: number): void;
  /** Keeps `frame` for later positions, in place of the frame kept before. */
  keep(frame: F): void;
  /** Writes the frame kept into positions `[first, first + count)`. */
  writeKept(first: number, count: number): void;
  /** Lets go of the frame kept, if any. */
  drop(): void;
}

/** The frame a filler keeps back: none, one with pixels, or one left out (its time only). */
type Kept = "none" | "frame" | "phantom";

/** Drives one output's {@link FrameSelector} with a decoder's frames; see the module docs. */
export class PositionFiller<F> {
  readonly plan: PositionPlan;
  #sel: FrameSelector;
  readonly #target: FrameTarget<F>;
  readonly #keeps: ((pts: bigint) => boolean) | null;
  #kept: Kept = "none";
  #keptPts: bigint = NOPTS;
  /** The pts and the time (seconds) of the frame each filled position shows. */
  #framePts: bigint[] = [];
  #frameTimes: number[] = [];
  #keptTime = NaN;

  /**
   * @param plan the output's positions
   * @param target where its frames go
   * @param keeps whether a frame the selector holds back will fill a position (then it is kept with its pixels;
   *   otherwise only its time is): absent, every frame held back is kept
   */
  constructor(plan: PositionPlan, target: FrameTarget<F>, keeps: ((pts: bigint) => boolean) | null = null) {
    this.plan = plan;
    this.#sel = new FrameSelector(plan);
    this.#target = target;
    this.#keeps = keeps;
  }

  /** The selector (its capacity, `done`, position times). */
  get selector(): FrameSelector {
    return this.#sel;
  }

  /** Positions filled so far. */
  get filled(): number {
    return this.#sel.filled;
  }

  /** True once no later frame can fill a position. */
  get done(): boolean {
    return this.#sel.done;
  }

  /**
   * A decoded frame presented at `t` seconds (pts `pts`, NOPTS when it has none) comes out.
   * @throws {MediaError} when it comes out of presentation order where that matters (`FrameSelector.offer`)
   */
  offer(frame: F, t: number, pts: bigint): void {
    const before = this.#sel.filled;
    const d = this.#sel.offer(t);
    this.#writeKept(before, d.held);
    if (d.current > 0) {
      this.#target.write(frame, before + d.held, d.current);
      this.#record(pts, t, d.current);
    }
    if (!d.hold) return;
    if (this.#keeps !== null && !this.#keeps(pts)) {
      this.#leaveOut();
      return;
    }
    this.#target.keep(frame);
    this.#kept = "frame";
    this.#keptPts = pts;
    this.#keptTime = t;
  }

  /** A frame left out (not decoded) presented at `t` would have come out here: it must fill no position. */
  offerSkipped(t: number): void {
    const before = this.#sel.filled;
    const d = this.#sel.offer(t);
    this.#writeKept(before, d.held);
    if (d.current > 0) throw new StartOver(`the frame left out at ${t} s fills a position`);
    if (d.hold) this.#leaveOut();
  }

  /** End of the stream: the frame kept back fills the positions left. */
  finish(): void {
    const before = this.#sel.filled;
    this.#writeKept(before, this.#sel.finish());
  }

  /** Back to the start (the decode starts over). */
  reset(): void {
    this.release();
    this.#sel = new FrameSelector(this.plan);
    this.#framePts = [];
    this.#frameTimes = [];
  }

  /** Lets go of the frame kept back. */
  release(): void {
    if (this.#kept === "frame") this.#target.drop();
    this.#kept = "none";
  }

  /** The time each filled position reports (its grid time, or its frame's). */
  times(): Float64Array {
    const out = new Float64Array(this.#sel.filled);
    for (let k = 0; k < out.length; k++) out[k] = this.#sel.time(k);
    return out;
  }

  /** The pts of the frame each filled position shows (NOPTS for a frame without one). */
  framePts(): BigInt64Array {
    return BigInt64Array.from(this.#framePts);
  }

  /**
   * The presentation time (seconds) of the frame each filled slot shows: its pts, or its best-effort timestamp
   * when it has none. It is {@link times} for the native kinds; the grid kinds report slot times there.
   */
  frameTimes(): Float64Array {
    return Float64Array.from(this.#frameTimes);
  }

  #writeKept(first: number, count: number): void {
    if (count === 0) return;
    if (this.#kept !== "frame") throw new StartOver("a frame that was not kept fills a position");
    this.#target.writeKept(first, count);
    this.#record(this.#keptPts, this.#keptTime, count);
  }

  #record(pts: bigint, t: number, count: number): void {
    for (let k = 0; k < count; k++) {
      this.#framePts.push(pts);
      this.#frameTimes.push(t);
    }
  }

  #leaveOut(): void {
    this.release();
    this.#kept = "phantom";
  }
}
