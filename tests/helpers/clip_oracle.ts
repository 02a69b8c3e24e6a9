/**
 * Oracles for a loader clip, written apart from sluice's own code: which frames of a stream its slots show
 * (the rule of `frame_select.ts`, slot by slot, from ffprobe's frame times), and the ffmpeg CLI's frames through
 * the clip's crop, scale, turn and flip; with the conversions between a clip's layouts and sample types. Shared
 * by the clip truth test and the differential harness (tests/differential).
 * @module
 */
import assert from "node:assert/strict";
import type { ClipOutcome, ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { codedRect, orientedSize } from "../../src/media/orient.ts";
import { framesOnScreen } from "./decode_oracles.ts";
import { oracleCli, runCli } from "./media.ts";

/**
 * The rule of `frame_select.ts`, slot by slot: the index of the frame each sampled slot shows, from every frame's
 * time in presentation order (ffprobe's list) and `end`, when the stream stops being on screen (grid slots and
 * the frame on screen at the start end there; default: never).
 */
export function expectedFrames(
  t: readonly number[],
  [s, e]: readonly [number, number],
  spec: Pick<ClipSpec, "sampling" | "numFrames">,
  end = Infinity,
): number[] {
  const inWin = framesOnScreen(t, [s, e], end);
  const sm = spec.sampling;
  if (sm.kind === "consecutive") return inWin.slice(0, spec.numFrames);
  if (sm.kind === "stride") return inWin.filter((_, j) => j % sm.stride === 0).slice(0, spec.numFrames);
  const rate = sm.kind === "rate" ? sm.frameRate : spec.numFrames / (e - s);
  const slotOf = (x: number) => {
    const v = (x - s) * rate;
    return sm.kind === "rate" ? Math.floor(v + 0.5 + 1e-9) : Math.ceil(v - 1e-9);
  };
  if (s >= end) return [];
  const n = Math.min(spec.numFrames, Math.ceil((Math.min(e, end) - s) * rate - 1e-9));
  const shown = t.flatMap((x, i) => x < e ? [i] : []);
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    let pick = shown[0];
    for (const i of shown) if (slotOf(t[i]) <= k) pick = i;
    out.push(pick);
  }
  return out;
}

/**
 * The CLI's frames (every frame of the file, in order) through the clip's filters: packed RGB24, or with `gbrp`
 * (what swscale writes for planar RGB: its yuv → gbrp path interpolates chroma fully, its yuv → rgb24 path does
 * not, so the two layouts differ at sharp colour edges in FFmpeg too) reordered to planes R, G, B.
 */
export async function cliFrames(
  path: string,
  spec: Pick<ClipSpec, "width" | "height">,
  m: Pick<ClipOutcome, "rotated" | "crop" | "flipped">,
  rotation: number,
  [codedW, codedH]: readonly [number, number],
  flags: string,
  planar: boolean,
  frames: number,
  streamIndex?: number,
): Promise<Uint8Array> {
  const turn = m.rotated ? rotation : 0;
  const [sw, sh] = orientedSize(spec.width, spec.height, turn);
  const filters: string[] = [];
  const [x, y, w, h] = m.crop;
  const [dw, dh] = orientedSize(codedW, codedH, turn);
  if (!(x === 0 && y === 0 && w === dw && h === dh)) {
    const [cx, cy, rw, rh] = codedRect([x, y, w, h], codedW, codedH, turn);
    // exact: the crop filter otherwise rounds an odd width or height of a 4:2:0 frame down to even
    filters.push(`crop=${rw}:${rh}:${cx}:${cy}:exact=1`);
  }
  const fmt = planar ? "gbrp" : "rgb24";
  // NVDEC (the double): resize in YUV (bicubic), then the kernel converts at 1:1, as swscale's yuv → rgb24 does.
  if (flags === "nvdec") {
    filters.push(`scale=${sw}:${sh}:flags=bicubic`, "format=yuv420p", "scale=flags=bilinear");
  } else filters.push(`scale=${sw}:${sh}:flags=${flags}`);
  filters.push(`format=${fmt}`);
  if (turn === 90) filters.push("transpose=cclock");
  else if (turn === 270 || turn === -90) filters.push("transpose=clock");
  else if (turn === 180 || turn === -180) filters.push("hflip", "vflip");
  if (m.flipped) filters.push("hflip");
  const map = streamIndex === undefined ? "0:v:0" : `0:${streamIndex}`;
  const args = ["-v", "error", "-nostdin", "-noautorotate", "-threads", "1", "-i", path, "-map", map];
  args.push("-vf", filters.join(","), "-pix_fmt", fmt, "-vsync", "passthrough", "-frames:v", String(frames));
  args.push("-f", "rawvideo", "-");
  const r = await runCli(oracleCli("ffmpeg"), args);
  assert.equal(r.code, 0, r.stderr);
  if (!planar) return r.stdout;
  const px = spec.width * spec.height, out = new Uint8Array(r.stdout.length);
  for (let f = 0; f < out.length; f += 3 * px) {
    out.set(r.stdout.subarray(f + 2 * px, f + 3 * px), f); // R
    out.set(r.stdout.subarray(f, f + px), f + px); // G
    out.set(r.stdout.subarray(f + px, f + 2 * px), f + 2 * px); // B
  }
  return out;
}

/** A frame in the clip's layout (`planar`: planes R, G, B; else packed) → the clip's dtype. */
export function asClipFrame(
  frame: Uint8Array,
  spec: Pick<ClipSpec, "dtype" | "planar" | "width" | "height" | "mean" | "std">,
): Uint8Array | Float32Array {
  if (spec.dtype === "uint8") return frame;
  const px = spec.width * spec.height;
  return Float32Array.from(frame, (v, i) => {
    const c = spec.planar ? Math.floor(i / px) : i % 3;
    // (v/255 − mean)/std, as sluice defines it in float64: v · 1/(255·std) + (−mean/std), then float32.
    return v * (1 / (255 * spec.std[c])) + -spec.mean[c] / spec.std[c];
  });
}

/** Packed RGB24 frames → planar R, G, B planes. */
export function packedToPlanar(rgb: Uint8Array, px: number): Uint8Array {
  const out = new Uint8Array(rgb.length);
  for (let f = 0; f < rgb.length; f += 3 * px) {
    for (let i = 0; i < px; i++) for (let c = 0; c < 3; c++) out[f + c * px + i] = rgb[f + i * 3 + c];
  }
  return out;
}

/** Float32 clip samples back to bytes (for PSNR). */
export function bytesOf(
  x: Uint8Array | Float32Array,
  spec: Pick<ClipSpec, "planar" | "width" | "height" | "mean" | "std">,
): Uint8Array {
  if (x instanceof Uint8Array) return x;
  return Uint8Array.from(x, (v, i) => {
    const c = spec.planar ? Math.floor(i / (spec.width * spec.height)) % 3 : i % 3;
    return Math.round((v * spec.std[c] + spec.mean[c]) * 255);
  });
}
