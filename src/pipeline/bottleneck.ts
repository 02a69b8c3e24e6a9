/**
 * The bottleneck verdict, one rule for the stats table and the auto-concurrency controller.
 *
 * A stage's slots spend their time working, blocked putting an output on a full queue, or idle waiting for
 * input. In a pipeline of bounded queues the slowest stage is the one that works all the time: stages upstream of
 * it spend part of their time blocked on its full input queue, stages downstream spend theirs waiting on empty
 * queues. So the verdict is read from each stage's busy fraction (compute time over the slot time it had:
 * concurrency × time; the source: time spent in its iterator; the consumer: time not spent waiting for the next
 * item), less the fraction it spent blocked on its output (a stage that waits for its downstream is not the limit),
 * weighted a little by how full its input queue was (a bottleneck always has work waiting). A stage is named only
 * when its score reaches {@link BOTTLENECK_MIN_SCORE}: in a pipeline where every stage mostly waits, none stands
 * out. A cheap source before an idle queue is therefore never named, however empty its output queue.
 * @module
 */

/** What the verdict reads of one stage over some span of time (cumulative, or one window of the controller). */
export interface Load {
  /** Fraction (0..1) of the stage's capacity spent working. */
  busy: number;
  /** Fraction (0..1) of the stage's capacity spent blocked on a full output queue. */
  blocked: number;
  /** Mean fill (0..1) of its input queue: mean occupancy / capacity; 1 for the source, whose input is its own. */
  inputFill: number;
}

/** Below this score no stage is named. */
export const BOTTLENECK_MIN_SCORE = 0.5;

/** How much a stage looks like the bottleneck (0..1): busy less blocked, weighted by its input queue's fill. */
export function loadScore(l: Load): number {
  return clamp01(clamp01(l.busy) - clamp01(l.blocked)) * (0.75 + 0.25 * clamp01(l.inputFill));
}

/** Index of the bottleneck among `loads` (the highest score, if it reaches the minimum), or -1 for none. */
export function bottleneckIndex(loads: readonly Load[]): number {
  let best = -1;
  let bestScore = BOTTLENECK_MIN_SCORE;
  for (let i = 0; i < loads.length; i++) {
    const s = loadScore(loads[i]);
    if (s >= bestScore && (best < 0 || s > bestScore)) {
      best = i;
      bestScore = s;
    }
  }
  return best;
}

function clamp01(x: number): number {
  return x > 1 ? 1 : x > 0 ? x : 0;
}
