/**
 * The loader's per-clip cost breakdown (`profile: true`, `sluice load --profile`): where a clip's time goes, by
 * phase, from the loader's own spans (`src/media/spans.ts`). Workers time their tasks (demux: open and probe,
 * seek, packet read; decode: decoder, scaler and writer setup, decode, convert and scale, finishing) and send
 * the times back with the task's result; the main thread times writing clips into batch slots and collating
 * batches, and counts the rest of its CPU time since the loader started as "pipeline" (messages to and from the
 * Workers, transfers, the pipeline's stages). A pass that serves several clips counts its times once; each clip
 * counts once. Times are CPU milliseconds of the thread that spent them (see `threadMs`), so other load on the
 * machine does not inflate them.
 * @module
 */

import { addPhases, type PhaseTimes, threadMs } from "../../media/spans.ts";

/** The phases, in the order of a clip's way, and where each runs. */
export const PHASES = [
  ["open", "worker", "open the input, probe its streams, close it (demux)"],
  ["seek", "worker", "seek to each window's keyframe (demux)"],
  ["read", "worker", "read and cut packets (demux)"],
  ["audio", "worker", "decode and resample each window's audio (demux, with the audio option)"],
  ["setup", "worker", "check the clip, decoder and scaler setup, frame writer"],
  ["decode", "worker", "send packets, receive frames, choose them"],
  ["convert", "worker", "convert and scale each frame into its place"],
  ["finish", "worker", "padding, the clip's outcome, freeing its packets"],
  ["pipeline", "main", "the main thread's other CPU: messages, transfers, the pipeline's stages"],
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
  /** Milliseconds per clip on the Workers. */
  workerMsPerClip: number;
  /** Milliseconds per clip on the main thread. */
  mainMsPerClip: number;
  /**
   * NVDEC's steps (`decode: "nvdec"`; `src/nvdec/step_times.ts`), per clip: wall and CPU milliseconds of the
   * decode threads, and calls; a step's wall well above its CPU is a wait that sleeps, the two close a busy one.
   */
  nvdecSteps: { step: string; wallMsPerClip: number; cpuMsPerClip: number; callsPerClip: number }[];
}

/** Adds up phase times per clip; see the module docs. */
export class ClipProfile {
  readonly #ms: PhaseTimes = {};
  #clips = 0;
  /** The main thread's CPU time when the profile started. */
  readonly #start = threadMs();

  /** Adds a task's phase times (a Worker's spans, or main-thread times). */
  add(times: PhaseTimes | null | undefined): void {
    if (times) addPhases(this.#ms, times);
  }

  /** Adds `ms` to the main-thread phase `phase` (`place` or `collate`; `pipeline` is the rest). */
  addMain(phase: "place" | "collate", ms: number): void {
    this.#ms[phase] = (this.#ms[phase] ?? 0) + ms;
  }

  /** Counts `n` clips. */
  count(n = 1): void {
    this.#clips += n;
  }

  /** The breakdown so far. */
  stats(): ProfileStats {
    const n = Math.max(1, this.#clips);
    const main = threadMs() - this.#start;
    this.#ms.pipeline = Math.max(0, main - (this.#ms.place ?? 0) - (this.#ms.collate ?? 0));
    const phases = PHASES.map(([phase, where]) => {
      const totalMs = this.#ms[phase] ?? 0;
      return { phase, where, totalMs, msPerClip: totalMs / n };
    });
    const sum = (w: string) => phases.filter((p) => p.where === w).reduce((s, p) => s + p.msPerClip, 0);
    const nvdecSteps = Object.keys(this.#ms).filter((k) => k.startsWith("nvdec:") && k.endsWith(":wall")).map(
      (k) => {
        const step = k.slice(6, -5), at = (what: string) => (this.#ms[`nvdec:${step}:${what}`] ?? 0) / n;
        return { step, wallMsPerClip: at("wall"), cpuMsPerClip: at("cpu"), callsPerClip: at("calls") };
      },
    );
    return {
      clips: this.#clips,
      phases,
      workerMsPerClip: sum("worker"),
      mainMsPerClip: sum("main"),
      nvdecSteps,
    };
  }
}

/** The breakdown as a table (`sluice load --profile`). */
export function formatProfile(p: ProfileStats): string {
  const lines = [`per-clip breakdown over ${p.clips} clips (CPU ms per clip of the thread that spent it):`];
  for (const [phase, where, what] of PHASES) {
    const s = p.phases.find((x) => x.phase === phase)!;
    lines.push(`  ${phase.padEnd(8)} ${where.padEnd(6)} ${s.msPerClip.toFixed(3).padStart(8)}  ${what}`);
  }
  lines.push(
    `  workers ${p.workerMsPerClip.toFixed(3)} ms/clip, main thread ${p.mainMsPerClip.toFixed(3)} ms/clip`,
  );
  return lines.join("\n");
}
