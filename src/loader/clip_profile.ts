/**
 * The loader's per-clip cost breakdown (`profile: true`, `sluice load --profile`): where a clip's time goes, by
 * phase, from the loader's own spans (`src/spans.ts`). Workers time their tasks (demux: open and probe, seek,
 * packet read; decode: decoder, scaler and writer setup, decode, convert and scale, finishing) and send the
 * times back with the task's result; the main thread times what it does itself around them: the hop (a task's
 * time on the main thread's clock less the Worker's own, so the transfers between threads, the messages and the
 * wait for a free Worker), writing a clip into its batch slot, and collating batches. A pass that serves
 * several clips counts its times once; each clip counts once. Times are wall milliseconds of the thread that
 * spent them (close to CPU time on an idle core; on a busy machine they include time the thread waited for one).
 * @module
 */

import { addPhases, type PhaseTimes } from "../spans.ts";

/** The phases, in the order of a clip's way, and where each runs. */
export const PHASES = [
  ["open", "worker", "open the input, probe its streams, close it (demux)"],
  ["seek", "worker", "seek to each window's keyframe (demux)"],
  ["read", "worker", "read and cut packets (demux)"],
  ["setup", "worker", "check the clip, decoder and scaler setup, frame writer"],
  ["decode", "worker", "send packets, receive frames, choose them"],
  ["convert", "worker", "convert and scale each frame into its place"],
  ["finish", "worker", "padding, the clip's outcome, freeing its packets"],
  ["hop", "main", "a Worker task's time beyond its own: transfers, messages, the wait for a Worker"],
  ["place", "main", "writing a clip into its batch slot"],
  ["collate", "main", "closing batches: accounting, collate"],
] as const;

/** A phase's name. */
export type Phase = (typeof PHASES)[number][0];

/** One phase of {@link ProfileStats}. */
export interface PhaseStats {
  /** The phase's name (see {@link PHASES}). */
  phase: string;
  /** `"worker"` or `"main"` (the thread it runs on). */
  where: string;
  /** Milliseconds in all. */
  totalMs: number;
  /** Milliseconds per clip. */
  msPerClip: number;
}

/** `loader.stats().profile`: the breakdown so far. */
export interface ProfileStats {
  /** Clips counted (loaded, or failed at decode). */
  clips: number;
  /** One entry per phase, in {@link PHASES} order. */
  phases: PhaseStats[];
  /** Milliseconds per clip on the Workers and on the main thread. */
  workerMsPerClip: number;
  mainMsPerClip: number;
}

/** Adds up phase times per clip; see the module docs. */
export class ClipProfile {
  readonly #ms: PhaseTimes = {};
  #clips = 0;

  /** Adds a task's phase times (a Worker's spans, or main-thread times). */
  add(times: PhaseTimes | null | undefined): void {
    if (times) addPhases(this.#ms, times);
  }

  /** Adds `ms` to the main-thread phase `phase`. */
  addMain(phase: Phase, ms: number): void {
    this.#ms[phase] = (this.#ms[phase] ?? 0) + ms;
  }

  /** Counts `n` clips. */
  count(n = 1): void {
    this.#clips += n;
  }

  /** The breakdown so far. */
  stats(): ProfileStats {
    const n = Math.max(1, this.#clips);
    const phases = PHASES.map(([phase, where]) => {
      const totalMs = this.#ms[phase] ?? 0;
      return { phase, where, totalMs, msPerClip: totalMs / n };
    });
    const sum = (w: string) => phases.filter((p) => p.where === w).reduce((s, p) => s + p.msPerClip, 0);
    return { clips: this.#clips, phases, workerMsPerClip: sum("worker"), mainMsPerClip: sum("main") };
  }
}

/** Sum of a task's phase times (its time in the Worker). */
export function phaseSum(times: PhaseTimes | null | undefined): number {
  let s = 0;
  for (const v of Object.values(times ?? {})) s += v;
  return s;
}

/** The breakdown as a table (`sluice load --profile`). */
export function formatProfile(p: ProfileStats): string {
  const lines = [`per-clip breakdown over ${p.clips} clips (ms per clip, thread wall time):`];
  for (const [phase, where, what] of PHASES) {
    const s = p.phases.find((x) => x.phase === phase)!;
    lines.push(`  ${phase.padEnd(8)} ${where.padEnd(6)} ${s.msPerClip.toFixed(3).padStart(8)}  ${what}`);
  }
  lines.push(
    `  workers ${p.workerMsPerClip.toFixed(3)} ms/clip, main thread ${p.mainMsPerClip.toFixed(3)} ms/clip`,
  );
  return lines.join("\n");
}
