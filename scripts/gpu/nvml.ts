/**
 * Decoder utilisation from NVML (`nvmlDeviceGetDecoderUtilization`: the share of its last sampling period the
 * decode engines were busy), polled while a measurement runs.
 * @module
 */
import { loadNvml, nvmlErrorText, type NvmlLibrary } from "../../ffi/nvml/library.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { round } from "./result.ts";

/** What a polling window saw. */
export interface UtilizationSummary {
  meanPercent: number | null;
  maxPercent: number | null;
  samples: number;
}

/** NVML opened on device 0. */
export class DecoderUtilization {
  readonly #lib: NvmlLibrary;
  readonly #device: Deno.PointerValue;

  private constructor(lib: NvmlLibrary, device: Deno.PointerValue) {
    this.#lib = lib;
    this.#device = device;
  }

  /** NVML on device 0, or why it cannot be read. */
  static open(): DecoderUtilization | string {
    let lib: NvmlLibrary;
    try {
      lib = loadNvml();
    } catch (e) {
      return (e as Error).message.split("\n")[0];
    }
    const n = lib.symbols;
    let rc = n.nvmlInit_v2();
    if (rc !== 0) {
      lib.close();
      return `nvmlInit_v2: ${nvmlErrorText(n, rc)}`;
    }
    const dev = new OutParam();
    rc = n.nvmlDeviceGetHandleByIndex_v2(0, dev.bytes);
    if (rc !== 0) {
      n.nvmlShutdown();
      lib.close();
      return `nvmlDeviceGetHandleByIndex_v2: ${nvmlErrorText(n, rc)}`;
    }
    return new DecoderUtilization(lib, dev.pointer);
  }

  /** The utilisation now (percent) and the period it covers (µs). */
  read(): { percent: number; periodUs: number } {
    const v = new Uint32Array(2);
    const rc = this.#lib.symbols.nvmlDeviceGetDecoderUtilization(
      this.#device,
      new Uint8Array(v.buffer, 0, 4),
      new Uint8Array(v.buffer, 4, 4),
    );
    if (rc !== 0) throw new Error(`nvmlDeviceGetDecoderUtilization: ${nvmlErrorText(this.#lib.symbols, rc)}`);
    return { percent: v[0], periodUs: v[1] };
  }

  /** Polls every `ms` until the returned function is called; it returns the summary. */
  poll(ms = 100): () => UtilizationSummary {
    const seen: number[] = [];
    this.read(); // starts the double's (and a fresh) period
    const timer = setInterval(() => seen.push(this.read().percent), ms);
    return () => {
      clearInterval(timer);
      seen.push(this.read().percent);
      return {
        meanPercent: seen.length ? round(seen.reduce((a, b) => a + b, 0) / seen.length) : null,
        maxPercent: seen.length ? Math.max(...seen) : null,
        samples: seen.length,
      };
    };
  }

  close(): void {
    this.#lib.symbols.nvmlShutdown();
    this.#lib.close();
  }
}
