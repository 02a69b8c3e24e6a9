/**
 * The decoders the loader runs, registered once: the one module of the loader that names NVDEC. The main thread
 * asks it for a {@link DecodeDevice} (what the loader builds differently for a decoder: the decode stage's default
 * concurrency, decode once, FFmpeg threads, where batch slots live) by the loader's `decode` option; a decode
 * Worker asks it for the {@link ClipPassDecoder} a clip's spec names (`ClipSpec.decoder`), so one Worker export
 * decodes for either, and the generic clip pass (`clip_pass.ts`) asks the device things only through that seam.
 * @module
 */

import { cpuPassDecoder } from "../../media/decode_pass.ts";
import type { ClipPassDecoder } from "../../media/pass_decoder.ts";
import { nvdecPassDecoder } from "../../nvdec/pass_decoder.ts";
import { nvdecAvailable, nvdecConcurrency, nvdecEngines, selectDecoder } from "../../nvdec/available.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";

/** A decoder the loader can use. */
export type DecoderKind = "cpu" | "nvdec";

/** What the loader builds differently for a decoder (main thread). */
export interface DecodeDevice {
  /** Which decoder. */
  readonly kind: DecoderKind;
  /** The decode stage's concurrency when the options leave it out: one task per core, or the GPU's NVDEC engines. */
  defaultConcurrency(device: number): number;
  /**
   * Clips whose packets overlap share one decode pass (decode once, across rows and across a node's ranks).
   * NVDEC decodes each clip of a pass on its own (its crop and size are per session), so it shares nothing.
   */
  readonly sharesPasses: boolean;
  /** Idle cores go to decode tasks as FFmpeg threads (`decodeLess.threads`, `decode_threads.ts`). */
  readonly threadBudget: boolean;
  /** Batch slots live in the device's memory (CUDA IPC slots on the GPU) rather than in host memory. */
  readonly deviceSlots: boolean;
  /** Without slots, clips are decoded into reused host buffers (`buffer_pool.ts`). */
  readonly reusesClipBuffers: boolean;
  /**
   * The hardware decode engines on CUDA device `device` that decode `codec` (`sluice doctor` reports them).
   * @param device the CUDA device's ordinal
   * @param codec the codec asked about, by FFmpeg's name (default h264, which every NVDEC decodes)
   * @returns the engine count; `undefined` for the CPU, where no engine decodes `codec`, or where the driver
   *   does not say
   */
  engines(device: number, codec?: string): number | undefined;
}

const DEVICES: Readonly<Record<DecoderKind, DecodeDevice>> = {
  cpu: {
    kind: "cpu",
    defaultConcurrency: () => navigator.hardwareConcurrency ?? 1,
    sharesPasses: true,
    threadBudget: true,
    deviceSlots: false,
    reusesClipBuffers: true,
    engines: () => undefined,
  },
  nvdec: {
    kind: "nvdec",
    defaultConcurrency: nvdecConcurrency,
    sharesPasses: false,
    threadBudget: false,
    deviceSlots: true,
    reusesClipBuffers: false,
    engines: nvdecEngines,
  },
};

/** The {@link DecodeDevice} of `kind`. */
export function decodeDevice(kind: DecoderKind): DecodeDevice {
  return DEVICES[kind];
}

/**
 * The decoder for the loader's `decode` option on CUDA device `device`: `"auto"` is NVDEC when it is available,
 * else the CPU (logging one line); `"nvdec"` throws `unavailable(reason)` when NVDEC is not available.
 */
export function chooseDecoder(
  want: DecoderKind | "auto",
  device: number,
  log: (line: string) => void,
  unavailable: (reason: string) => Error,
): DecodeDevice {
  if (want === "nvdec") {
    const a = nvdecAvailable(device);
    if (!a.ok) throw unavailable(a.reason);
  }
  return DEVICES[selectDecoder(want, log, device)];
}

/** The decoder a decode Worker uses for a clip of `spec` (its `decoder`, the CPU's by default, on its `device`). */
export function passDecoderFor(spec: Pick<ClipSpec, "decoder" | "device">): ClipPassDecoder {
  return spec.decoder === "nvdec" ? nvdecPassDecoder(spec.device) : cpuPassDecoder;
}

/** Frees this thread's cached decoders of every kind (a decode Worker, before it ends). */
export function releaseDecoders(): void {
  try {
    cpuPassDecoder.release();
  } finally {
    nvdecPassDecoder().release();
  }
}
