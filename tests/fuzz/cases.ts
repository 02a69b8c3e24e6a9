/**
 * Fuzz cases: case `index` of a run seeded `seed` is a pure function of the two and of the input list, so any
 * case replays alone (`deno task fuzz --seed S --case I`). A case picks an input (a real file or a generated
 * clip), an operation and its options, and the mutations; {@link runCase} runs it in the calling thread and
 * classifies the outcome. The fuzzer runs cases in child processes (`child.ts`): a crash or hang there is the
 * case's failure, not the runner's.
 * @module
 */
import { SluiceError } from "../../src/errors.ts";
import { probe } from "../../src/media/probe.ts";
import { type DemuxOptions, demuxVideo, demuxVideoSync } from "../../src/media/demux.ts";
import { type DecodeOptions, decodeVideo } from "../../src/media/decode.ts";
import { PIXEL_FORMATS } from "../../src/media/frames.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { SWS_FLAGS } from "../../src/media/scale.ts";
import { applyOps, caseSeed, mutations, type Op, Rng } from "./mutate.ts";
import {
  type ClipRequest,
  clipRequest,
  type ClipTally,
  decodeItems,
  demuxItems,
  firstBlob,
  itemOf,
  itemPayload,
  withFirstBlob,
} from "./clip_cases.ts";

/** One input file of a run. */
export interface FuzzInput {
  /** `shared:<file>` for ../shared/media, `clip:<container>-<codec>` for a generated clip. */
  name: string;
  path: string;
  /** Seconds, for drawing windows (1 when unknown). */
  durationSec: number;
}

/**
 * What a case does with its (mutated) input: the media API's probe, demux or decode, decode of serialized
 * packets, or the loader's clip path from a mutated file (`"clip"`) or from a damaged serialized item of the
 * backend (`"clip-packets"`, see clip_cases.ts).
 */
export type CaseKind = "probe" | "demux" | "decode" | "packets" | "clip" | "clip-packets";

/** A case, fully determined; `ops` apply to the input file, or for "packets" to the serialized packets. */
export interface FuzzCase {
  seed: number;
  index: number;
  input: string;
  kind: CaseKind;
  /** Pass the bytes as a file with the input's extension instead of in memory. */
  asFile: boolean;
  probe?: { keyframes: boolean; streamInfo: "auto" | "always" | "never" };
  demux?: DemuxOptions;
  decode?: DecodeOptions;
  /** `"clip"`, `"clip-packets"`: the clips asked of the input. */
  clip?: ClipRequest;
  ops: Op[];
}

/** How a case ended. Only "ok" and "typed" pass. */
export interface Outcome {
  status: "ok" | "typed" | "untyped" | "invariant";
  /** Error class and message, or a summary of the result. */
  detail: string;
  /** Clip cases: what their decode delivered (every delivered clip checked) and failed. */
  clips?: ClipTally;
}

const KINDS: [CaseKind, number][] = [
  ["probe", 0.12],
  ["demux", 0.2],
  ["decode", 0.3],
  ["packets", 0.16],
  ["clip", 0.1],
  ["clip-packets", 0.12],
];
const BSFS = ["h264_mp4toannexb", "hevc_mp4toannexb", "null", "vp9_superframe_split", "no_such_filter"];

function pickKind(r: Rng): CaseKind {
  let x = r.next();
  for (const [k, w] of KINDS) if ((x -= w) < 0) return k;
  return "decode";
}

function window(r: Rng, dur: number): [number, number] {
  if (r.chance(0.03)) return r.pick([[1, 0.5], [NaN, 1], [0, Infinity], [-5, -4], [dur + 10, dur + 11]]);
  const start = -0.5 + r.next() * (dur + 1);
  return [start, start + r.pick([0.04, 0.2, 0.5, 1, 2, r.next() * 3])];
}

function demuxOptions(r: Rng, dur: number, several: boolean): DemuxOptions {
  const o: DemuxOptions = {};
  if (several && r.chance(0.15)) {
    const ws = Array.from({ length: 2 + r.int(2) }, () => window(r, dur));
    o.windows = r.chance(0.8) ? ws.sort((a, b) => a[0] - b[0]) : ws;
  } else if (r.chance(0.7)) o.window = window(r, dur);
  if (r.chance(0.15)) o.bsf = r.pick(BSFS);
  if (r.chance(0.2)) o.streamInfo = r.pick(["auto", "always", "never"] as const);
  if (r.chance(0.05)) o.streamIndex = r.int(3);
  return o;
}

function decodeOptions(r: Rng, small: boolean): DecodeOptions {
  const o: DecodeOptions = {};
  const sizes = [1, 2, 3, 16, 17, 32, 63, 64, 112];
  // Real files are up to 1080p: always scaled down, so that a case's memory says something about sluice.
  if (r.chance(small ? 0.6 : 0.9)) o.width = r.pick(sizes);
  if (r.chance(small ? 0.5 : 0.9) || (!small && o.width === undefined)) o.height = r.pick(sizes);
  if (r.chance(0.7)) o.pixelFormat = r.pick(PIXEL_FORMATS);
  if (r.chance(0.3)) o.frameRate = r.pick([0.5, 1, 7.5, 10, 24, 25, 29.97, 30, 60]);
  if (r.chance(0.5)) o.numFrames = 1 + r.int(32);
  if (r.chance(0.2)) o.threads = 2;
  if (r.chance(0.15)) o.skipNonRef = true;
  if (r.chance(0.3)) o.onCorrupt = "error";
  if (r.chance(0.3)) o.interpolation = r.pick(Object.keys(SWS_FLAGS) as (keyof typeof SWS_FLAGS)[]);
  return o;
}

/**
 * Case `index` of run `seed`. For a "packets" case the mutations are drawn against the clean input's serialized
 * packets (`src.packetsOf`); when the clean input does not demux that way, the case has no mutations.
 */
export function makeCase(seed: number, index: number, src: CaseSources): FuzzCase {
  const inputs = src.inputs;
  const r = new Rng(caseSeed(seed, index));
  const kind = pickKind(r);
  const input = inputs[r.int(inputs.length)];
  const small = input.name.startsWith("clip:");
  const c: FuzzCase = { seed, index, input: input.name, kind, asFile: r.chance(0.1), ops: [] };
  if (kind === "probe") {
    c.probe = { keyframes: r.chance(0.5), streamInfo: r.pick(["auto", "always", "never"]) };
  }
  if (kind === "demux") c.demux = demuxOptions(r, input.durationSec, true);
  if (kind === "decode" || kind === "packets") {
    c.demux = demuxOptions(r, input.durationSec, false);
    if (!small && c.demux.window === undefined) c.demux.window = window(r, input.durationSec);
    c.decode = decodeOptions(r, small);
  }
  if (kind === "clip" || kind === "clip-packets") c.clip = clipRequest(r, input.durationSec);
  if (kind === "packets" || kind === "clip-packets") {
    let serialized: Uint8Array;
    try {
      serialized = kind === "packets"
        ? src.packetsOf(input, c.demux!)
        : firstBlob(src.itemOf(input, c.clip!));
    } catch {
      return c; // the clean input does not demux this way: the case checks that it fails typed
    }
    c.ops = mutations(r, serialized, true);
  } else {
    c.ops = mutations(r, src.bytesOf(input));
  }
  return c;
}

/**
 * Where a case's bytes come from: the clean input, its serialized packets for a demux, and the ITEM payload of
 * the first clip item the loader's demux makes of it for a clip request (the last two may throw).
 */
export interface CaseSources {
  inputs: readonly FuzzInput[];
  bytesOf(input: FuzzInput): Uint8Array;
  packetsOf(input: FuzzInput, demux: DemuxOptions): Uint8Array;
  itemOf(input: FuzzInput, clip: ClipRequest): Uint8Array;
}

/** Clean clip items, as {@link CaseSources.itemOf} gives them (remembers the last one). */
export function itemSource(bytesOf: (input: FuzzInput) => Uint8Array): CaseSources["itemOf"] {
  let last: { key: string; bytes?: Uint8Array; error?: unknown } | undefined;
  return (input, clip) => {
    const key = `${input.name} ${JSON.stringify(clip)}`;
    if (last?.key !== key) {
      last = { key };
      try {
        last.bytes = itemPayload(demuxItems(bytesOf(input), input.path, clip));
      } catch (e) {
        last.error = e;
      }
    }
    if (last.error !== undefined) throw last.error;
    return last.bytes!;
  };
}

/** Serialized packets of a clean input, as {@link CaseSources.packetsOf} gives them (remembers the last one). */
export function packetsSource(bytesOf: (input: FuzzInput) => Uint8Array): CaseSources["packetsOf"] {
  let last: { key: string; bytes?: Uint8Array; error?: unknown } | undefined;
  return (input, demux) => {
    const key = `${input.name} ${JSON.stringify(demux)}`;
    if (last?.key !== key) {
      last = { key };
      try {
        last.bytes = demuxVideoSync(bytesOf(input), { ...demux, windows: undefined })[0].serialize();
      } catch (e) {
        last.error = e;
      }
    }
    if (last.error !== undefined) throw last.error;
    return last.bytes!;
  };
}

/** Runs a case in this thread (a crash takes the thread with it: run cases in a child process). */
export async function runCase(c: FuzzCase, src: CaseSources): Promise<Outcome> {
  const input = src.inputs.find((i) => i.name === c.input)!;
  try {
    if (c.kind === "clip" || c.kind === "clip-packets") {
      const clips = clipCase(c, input, src);
      const classes = Object.entries(clips.failedBy).map(([k, v]) => `${k} ${v}`).join(", ");
      const detail = `clips: ${clips.delivered} delivered (${clips.frames} frames), ${clips.failed} failed` +
        (classes ? ` (${classes})` : "");
      return { status: "ok", detail, clips };
    }
    return { status: "ok", detail: await execute(c, input, src) };
  } catch (e) {
    if (e instanceof SluiceError) return { status: "typed", detail: `${e.name}: ${e.message}` };
    if (e instanceof InvariantError) return { status: "invariant", detail: e.message };
    const err = e as Error;
    return { status: "untyped", detail: `${err?.name}: ${err?.message}\n${err?.stack ?? ""}` };
  }
}

class InvariantError extends Error {}

function invariant(ok: boolean, what: string): void {
  if (!ok) throw new InvariantError(what);
}

/** A clip case: the loader's demux and decode of its clips, each delivered clip checked (clip_cases.ts). */
function clipCase(c: FuzzCase, input: FuzzInput, src: CaseSources): ClipTally {
  const check = (problem: string): never => {
    throw new InvariantError(problem);
  };
  if (c.kind === "clip") {
    return decodeItems(demuxItems(applyOps(src.bytesOf(input), c.ops), input.path, c.clip!), check);
  }
  const clean = src.itemOf(input, c.clip!);
  const item = itemOf(withFirstBlob(clean, applyOps(firstBlob(clean), c.ops)));
  return decodeItems([item], check);
}

async function execute(c: FuzzCase, input: FuzzInput, src: CaseSources): Promise<string> {
  if (c.kind === "packets") {
    const bytes = applyOps(src.packetsOf(input, c.demux!), c.ops);
    const p = VideoPackets.deserialize(bytes);
    return decoded(await decodeVideo(p, c.decode), p, c.decode);
  }
  const bytes = applyOps(src.bytesOf(input), c.ops);
  let media: string | Uint8Array = bytes;
  if (c.asFile) {
    media = await Deno.makeTempFile({
      prefix: "sluice-fuzz-",
      suffix: input.path.replace(/^.*(\.[^.]+)$/, "$1"),
    });
    await Deno.writeFile(media, bytes);
  }
  try {
    if (c.kind === "probe") {
      const info = await probe(media, c.probe);
      return `probe: ${info.video?.codec ?? "no video"}`;
    }
    if (c.kind === "demux") {
      const out = c.demux!.windows !== undefined
        ? await demuxVideo(media, { ...c.demux!, windows: c.demux!.windows })
        : [await demuxVideo(media, { ...c.demux!, windows: undefined })];
      for (const p of out) {
        for (let i = 0; i < p.numPackets; i++) {
          invariant(p.offsets[i] + p.sizes[i] <= p.data.length, "packet bounds");
        }
      }
      return `demux: ${out.map((p) => p.numPackets).join("+")} packets`;
    }
    const p = await demuxVideo(media, { ...c.demux!, windows: undefined });
    return decoded(await decodeVideo(p, c.decode), p, c.decode);
  } finally {
    if (typeof media === "string") await Deno.remove(media).catch(() => {});
  }
}

function decoded(f: Awaited<ReturnType<typeof decodeVideo>>, p: VideoPackets, o: DecodeOptions = {}): string {
  const n = f.shape[0];
  const windowed = p.window !== null;
  invariant(f.data.length === n * f.frameSize, `data ${f.data.length} != ${n} × ${f.frameSize}`);
  // A frame without any timestamp is kept (pts NaN) only when decoding a whole stream, never from a window.
  const ok = (t: number) => Number.isFinite(t) || (Number.isNaN(t) && !windowed);
  invariant(
    f.pts.length === n && f.pts.every(ok),
    `pts ${f.pts.find((t) => !ok(t))} (windowed: ${windowed})`,
  );
  framesInOrder(f, p, o);
  return `decode: ${n} frames ${f.width}x${f.height} ${f.pixelFormat}`;
}

/**
 * The frames a decode delivers are in presentation order and inside the window, but for the one frame on
 * screen at its start (issue 30): for the native kinds (consecutive, stride) each frame's time is its own, so
 * times strictly increase, all lie before the window's end, and only the first may precede its start; grid kinds
 * report slot times (in order by construction), so there the frames shown (their indices) must not go back.
 */
function framesInOrder(f: Awaited<ReturnType<typeof decodeVideo>>, p: VideoPackets, o: DecodeOptions): void {
  const kind = o.sampling?.kind ?? (o.frameRate !== undefined ? "rate" : "consecutive");
  const t = [...f.pts].filter((x) => !Number.isNaN(x));
  const ix = f.frameIndex;
  for (let k = 1; ix !== null && k < ix.length; k++) {
    invariant(ix[k] >= ix[k - 1], `frame index ${ix[k]} after ${ix[k - 1]} (slot ${k})`);
  }
  if (kind !== "consecutive" && kind !== "stride") return;
  for (let k = 1; k < t.length; k++) {
    invariant(t[k] > t[k - 1], `out of order: pts ${t[k]} after ${t[k - 1]} (frame ${k})`);
  }
  const w = p.window;
  if (w === null || t.length === 0) return;
  invariant(t[t.length - 1] < w[1], `out of window: pts ${t[t.length - 1]} at or after its end ${w[1]}`);
  invariant(
    t.length < 2 || t[1] > w[0],
    `out of window: pts ${t[1]} (frame 1) at or before its start ${w[0]} (only frame 0 may be)`,
  );
}
