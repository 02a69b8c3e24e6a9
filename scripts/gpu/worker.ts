/// <reference lib="deno.worker" />
/**
 * A decode thread of the GPU kit (a Deno Worker: its own libcuda/libnvcuvid handles, decoder and parser, on the
 * process's one primary context). Messages:
 * - `{ op: "hash", file, window }` → `{ sha, frames }`: NV12 of the window, SHA-256 of the host copy;
 * - `{ op: "speed", file, startAt, seconds }` → `{ frames, decodes, seconds }`: decodes the whole file to planar
 *   RGB at its size, over and over, from `startAt` (epoch ms) until `seconds` later, into one buffer allocated
 *   before the start;
 * - `{ op: "close" }`: destroys the decoder.
 * Replies carry `{ error }` instead when the work failed.
 * @module
 */
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { CudaBuffer } from "../../src/cuda/cuda_buffer.ts";
import { packetsOf } from "./compare.ts";
import type { VideoPackets } from "../../src/media/packets.ts";

type Message =
  | { op: "hash"; file: string; window?: [number, number] }
  | { op: "speed"; file: string; startAt: number; seconds: number }
  | { op: "close" };

const packets = new Map<string, VideoPackets>();
const buffers = new Map<string, CudaBuffer>();

async function packetsFor(file: string, window?: [number, number]): Promise<VideoPackets> {
  const key = `${file}@${window?.join("-") ?? "all"}`;
  let p = packets.get(key);
  if (!p) packets.set(key, p = await packetsOf(file, window));
  return p;
}

async function hash(file: string, window?: [number, number]) {
  using frames = await decodeVideoNvdec(await packetsFor(file, window), { pixelFormat: "nv12" });
  const host = new Uint8Array(await frames.toHost());
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", host));
  return { sha: [...digest].map((b) => b.toString(16).padStart(2, "0")).join(""), frames: frames.pts.length };
}

async function speed(file: string, startAt: number, seconds: number) {
  const p = await packetsFor(file);
  let batch = buffers.get(file);
  if (!batch) {
    // One decode (unmeasured) sizes the output buffer, made once: the timed loop allocates nothing.
    using first = await decodeVideoNvdec(p, { pixelFormat: "rgb24-planar" });
    batch = CudaBuffer.alloc(first.frameSize * first.pts.length, first.device);
    buffers.set(file, batch);
  }
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, Math.min(5, startAt - Date.now())));
  const t0 = performance.now(), end = t0 + seconds * 1000;
  let frames = 0, decodes = 0, last = t0;
  while (performance.now() < end) {
    using out = await decodeVideoNvdec(p, { pixelFormat: "rgb24-planar", batch });
    frames += out.pts.length;
    decodes++;
    last = performance.now();
  }
  return { frames, decodes, seconds: (last - t0) / 1000 };
}

self.onmessage = async (e: MessageEvent<Message>) => {
  const m = e.data;
  try {
    if (m.op === "hash") self.postMessage(await hash(m.file, m.window));
    else if (m.op === "speed") self.postMessage(await speed(m.file, m.startAt, m.seconds));
    else {
      for (const b of buffers.values()) b[Symbol.dispose]();
      buffers.clear();
      releaseDecoderNvdec();
      self.postMessage({ closed: true });
    }
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
};
