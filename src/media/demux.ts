/**
 * `demuxVideo()`: the compressed packets of one video stream, whole or cut to time windows, copied out of FFmpeg
 * into one payload buffer per {@link VideoPackets}.
 *
 * Windows follow the convention of `src/media/packets.ts`: `[start, end)` in absolute seconds (`pts * timeBase`,
 * ffprobe's `pts_time`). The packets of a window start at the last keyframe whose pts is at or before `start`
 * (or the stream's first keyframe when `start` precedes it) and end at the last packet, in decode order, whose
 * pts is before `end`: exactly what a decoder needs to output every frame on screen in the window (the one on
 * screen at `start`, presented at or before it, perhaps in an earlier GOP, then those presented in it),
 * including B-frames presented before `end` but stored after later frames. Reading stops once
 * {@link REORDER_MARGIN} consecutive packets are presented at or after `end` (no reordered frame can follow).
 * `endSec` says until when the packets' last frame is on screen: the next frame's time, or the end of the
 * stream (`ScreenTime.streamEnd`: the last frame's end, or later while the file's other streams go on,
 * never past the header's duration).
 *
 * Several windows are cut from one open of the file: they are visited in start order, packets already read are
 * reused when windows overlap or follow closely, and results come back in the caller's order.
 *
 * A window finds its keyframe the same way in every container: seek, then read what follows the landing point
 * (see `seekFor` in `window_seek.ts`); a seek that landed past the keyframe (MPEG-TS seeks by dts) goes further back. A window past
 * the end of the stream fails with "file ends at X s, before the window [s, e)".
 *
 * `avformat_find_stream_info` (decoder init behind FFmpeg's process-wide lock) runs only when the container
 * header lacks the codec or frame size (e.g. MPEG-TS) or has no streams at all (FLV, MPEG-PS);
 * MP4/MOV/MKV/WebM headers have them.
 * @module
 */
import { fmtSec, InvalidArgumentError, MediaError, SluiceError } from "../errors.ts";
import type { BsfContext } from "./av_objects.ts";
import { openBsfForStream } from "./bsf.ts";
import { ptsToSeconds, VideoPackets, type VideoPacketsInit } from "./packets.ts";
import {
  codecInfoFromPar,
  headerIncomplete,
  readCodecInfo,
  selectVideoStream,
  streamDurationSec,
  streamFrameRate,
  streamRotation,
} from "./probe.ts";
import { type MediaInput, MediaSource } from "./source.ts";
import { AVDISCARD_ALL, bsfContext, formatContext, type Rational, stream } from "./structs.ts";
import { settle } from "../settle.ts";
import { type AudioSpec, type ClipAudio, clipAudioWindows } from "./audio.ts";
import { LEADING_LOOKAHEAD } from "./packet_run.ts";
import { ScreenTime, type StreamFacts, StreamReader } from "./stream_reader.ts";
import { lap } from "./spans.ts";
import { decodeSeconds, positionFor, readThrough, windowEnd } from "./window_seek.ts";
import { firstFrameIndex, type PrefixStats } from "./frame_index.ts";
import { keyframeTable } from "./keyframe_table.ts";

export { REORDER_MARGIN } from "./window_seek.ts";

/** A time window `[start, end)` in seconds. */
export type TimeWindow = [number, number];

/** Options for {@link demuxVideo}. */
export interface DemuxOptions {
  /** Keep only the packets needed for the frames presented in `[start, end)` seconds. */
  window?: TimeWindow;
  /** Several windows from one open of the file: the result is one `VideoPackets` per window, in this order. */
  windows?: TimeWindow[];
  /** Absolute stream index of the video stream (default: FFmpeg's best video stream). */
  streamIndex?: number;
  /** A bitstream filter applied to every packet, e.g. "h264_mp4toannexb"; extradata comes from its output. */
  bsf?: string;
  /**
   * When to run `avformat_find_stream_info`: "auto" (default) only when the header lacks codec or size;
   * "always" (slower, takes FFmpeg's codec lock; for comparisons); "never".
   */
  streamInfo?: "auto" | "always" | "never";
  /**
   * Give the packets their `firstFrameIndex` (default true), from which decoders tell each frame's index in the
   * stream's presentation order. A window reached by a seek needs the stream's keyframe table: one read of every
   * packet of the stream, kept per thread for the inputs seen last (`keyframe_table.ts`); false skips it (those
   * windows' packets then have no `firstFrameIndex`).
   */
  frameIndex?: boolean;
}

function validateWindow(w: unknown, label: string, facts: StreamFacts): TimeWindow {
  if (!Array.isArray(w) || w.length !== 2 || !w.every((x) => typeof x === "number" && Number.isFinite(x))) {
    throw new InvalidArgumentError(`${label}: a window must be [startSec, endSec] with finite numbers`);
  }
  const [s, e] = w as TimeWindow;
  if (!(e > s)) {
    throw new InvalidArgumentError(
      `${label}: window [${fmtSec(s)}, ${fmtSec(e)}) s is empty (end must exceed start)`,
    );
  }
  if (facts.endSec !== null && s >= facts.endSec) {
    throw new MediaError(
      label,
      "demux window",
      `file ends at ${fmtSec(facts.endSec)} s (stream ${facts.index}: start ${fmtSec(facts.startSec)} s + ` +
        `duration ${fmtSec(facts.endSec - facts.startSec)} s), before the window [${fmtSec(s)}, ${
          fmtSec(e)
        })`,
    );
  }
  if (e <= facts.startSec) {
    throw new MediaError(
      label,
      "demux window",
      `window [${fmtSec(s)}, ${fmtSec(e)}) s ends before stream ${facts.index} starts (${
        fmtSec(facts.startSec)
      } s)`,
    );
  }
  return [s, e];
}

// ------------------------------------------------------------------------------------------ entry points

/** Demuxes synchronously (the work behind {@link demuxVideo}); returns one result per window, or one in all. */
export function demuxVideoSync(src: MediaInput, opts: DemuxOptions = {}): VideoPackets[] {
  const out = demuxEachSync(src, opts);
  for (const r of out) if (r instanceof SluiceError) throw r;
  return out as VideoPackets[];
}

/**
 * Like {@link demuxVideoSync}, but a window that cannot be served (outside the stream, past the end of a
 * truncated file, unreadable packets) gives its error in its place instead of failing the other windows. Errors
 * that concern the whole input (it cannot be opened, has no video stream) are thrown.
 */
export function demuxEachSync(src: MediaInput, opts: DemuxOptions = {}): (VideoPackets | SluiceError)[] {
  if (opts.window !== undefined && opts.windows !== undefined) {
    throw new InvalidArgumentError("demuxVideo: pass either `window` or `windows`, not both");
  }
  const wanted = opts.windows ?? (opts.window ? [opts.window] : null);
  using stream = openStream(src, opts);
  if (wanted === null) {
    const { reader, facts, common } = stream;
    while (reader.next()) { /* whole stream */ }
    if (reader.run.length === 0) {
      throw new MediaError(common.source, "demux", `stream ${facts.index} has no packets`);
    }
    const endSec = new ScreenTime(reader, facts, common.frameRate).streamEnd();
    const whole = new VideoPackets({
      ...common,
      window: null,
      endSec,
      ...reader.run.slice(0, reader.run.length),
    });
    if (reader.prefix !== null) setFirstFrameIndex(whole, reader.prefix);
    return [whole];
  }
  const { groups, failures } = cutGroups(stream, wanted, () => false);
  const results: (VideoPackets | SluiceError)[] = failures.map((f) => f!);
  for (const g of groups) results[g.members[0].window] = g.packets;
  return results;
}

/** Windows of one video demuxed together: the packets of their union, and each window's own among them. */
export interface WindowGroup {
  /**
   * The packets from the first member's start keyframe to the end of the last one's, each once; `window` is the
   * members' union `[earliest start, latest end)`.
   */
  packets: VideoPackets;
  /**
   * Each member: its index in the `windows` asked for, and its own packets `[from, to)` within `packets`
   * (exactly those {@link demuxVideo} gives for it alone), in start order.
   */
  members: { window: number; range: [number, number] }[];
}

/** What {@link demuxGroupsSync} returns. */
export interface DemuxedGroups {
  /** The groups, in start order; every window that could be served is in exactly one. */
  groups: WindowGroup[];
  /** Per window (in the order asked for): why it could not be served, or null. */
  failures: (SluiceError | null)[];
  /**
   * With `audio`: per window (in the order asked for), its audio (`audio.ts`), decoded from the same open of
   * the file; null for a window that could not be served.
   */
  audio?: (ClipAudio | null)[];
}

/**
 * Demuxes `windows` from one open of the file as {@link demuxEachSync} does, but windows whose packets overlap
 * (the same GOP, or one window's packets reaching into the next one's) come back as one group: one run of packets
 * from which one forward decode serves them all. `join(members, next)` may refuse to add window `next` to the
 * group of `members` (window indices); a refused window starts a group of its own.
 *
 * Windows from index `optionalFrom` on are optional: one is served only inside a group a window before that
 * index opens (it joins it, or it starts in the GOP that window starts in), never on its own: it never seeks,
 * and when no group takes it, it is in no group (its `failures` entry null, or why it could not be served).
 */
export function demuxGroupsSync(
  src: MediaInput,
  opts: Omit<DemuxOptions, "window" | "windows"> & {
    windows: TimeWindow[];
    join: (members: readonly number[], next: number) => boolean;
    /** Also decode each served window's audio (see `audio.ts`), after its video packets are cut. */
    audio?: AudioSpec;
    /** Windows from this index on are optional: cut only into a group an earlier window opens (default: none). */
    optionalFrom?: number;
  },
): DemuxedGroups {
  const groups = (() => {
    using stream = openStream(src, opts);
    lap("open");
    const cut = cutGroups(stream, opts.windows, opts.join, opts.optionalFrom ?? opts.windows.length);
    if (opts.audio === undefined) return cut;
    // the audio of the windows a group serves (an optional window no group took has none to read)
    const inGroup = new Set(cut.groups.flatMap((g) => g.members.map((m) => m.window)));
    const served = opts.windows.map((w, i) => inGroup.has(i) ? w : null);
    const audio = clipAudioWindows(stream.source, stream.facts.index, served, opts.audio);
    lap("audio");
    return { ...cut, audio };
  })();
  lap("open"); // closing the input
  return groups;
}

/** What every result of one demux shares: the codec and stream fields of a {@link VideoPacketsInit}. */
type CommonFields = Omit<
  VideoPacketsInit,
  "window" | "pts" | "dts" | "duration" | "flags" | "offsets" | "sizes" | "data"
>;

/** An opened input, its chosen video stream and a reader over it. */
interface OpenStream extends Disposable {
  /** The input, and whether its runs of packets get their `firstFrameIndex` (`DemuxOptions.frameIndex`). */
  src: MediaInput;
  frameIndex: boolean;
  /** Whether stream info was probed (the keyframe scan opens the input the same way). */
  probed: boolean;
  /** The opened input (the audio of its windows is read through it). */
  source: MediaSource;
  reader: StreamReader;
  facts: StreamFacts;
  common: CommonFields;
}

function openStream(src: MediaInput, opts: DemuxOptions): OpenStream {
  const source = MediaSource.open(src);
  let bsf: BsfContext | null = null;
  try {
    const label = source.label;
    const fmt = source.fmt;
    const mode = opts.streamInfo ?? "auto";
    // FLV and MPEG-PS have no header: their streams appear only once packets are read.
    if (mode !== "never" && formatContext.nbStreams(fmt) === 0) {
      source.findStreamInfo({ probesize: 1_000_000, maxAnalyzeDurationUs: 1_000_000 });
    }
    const index = selectVideoStream(source, opts.streamIndex, "demux");
    const st = formatContext.stream(fmt, index);
    if (mode === "always" || (mode === "auto" && headerIncomplete(st, false))) {
      source.findStreamInfo({ probesize: 1_000_000, maxAnalyzeDurationUs: 1_000_000 });
    }
    for (let i = 0; i < formatContext.nbStreams(fmt); i++) {
      if (i !== index) stream.setDiscard(formatContext.stream(fmt, i), AVDISCARD_ALL);
    }
    const tb = stream.timeBase(st);
    const startSec = stream.startTime(st) === null ? 0 : ptsToSeconds(stream.startTime(st)!, tb);
    const dur = streamDurationSec(fmt, st);
    const facts: StreamFacts = { index, tb, startSec, endSec: dur === null ? null : startSec + dur };
    bsf = opts.bsf ? openBsfForStream(opts.bsf, st, label) : null;
    const codec = bsf ? codecInfoFromPar(bsfContext.parOut(bsf.ptr)) : readCodecInfo(st);
    const rate = streamFrameRate(st);
    const common: CommonFields = {
      ...codec,
      source: label,
      streamIndex: index,
      timeBase: tb,
      frameRate: rate[0] / rate[1],
      rotation: streamRotation(st),
      startTimeSec: startSec,
    };
    const reader = new StreamReader(source, index, tb, bsf);
    const owned = bsf;
    return {
      src,
      frameIndex: opts.frameIndex ?? true,
      probed: source.probed,
      source,
      reader,
      facts,
      common,
      [Symbol.dispose]() {
        reader[Symbol.dispose]();
        owned?.[Symbol.dispose]();
        source[Symbol.dispose]();
      },
    };
  } catch (e) {
    bsf?.[Symbol.dispose]();
    source[Symbol.dispose]();
    throw e;
  }
}

/** A group being cut: its members and their packets, as indices into the reader's run. */
interface OpenGroup {
  start: number;
  end: number;
  members: { window: number; k: number; end: number }[];
}

/**
 * Each window of `wanted` checked (`validateWindow`): the window, or why it cannot be served (also in
 * `failures`, per window); `order` lists the valid ones' indices by start, then end.
 */
function checkedWindows(wanted: TimeWindow[], label: string, facts: StreamFacts): {
  windows: (TimeWindow | SluiceError)[];
  failures: (SluiceError | null)[];
  order: number[];
} {
  const windows = wanted.map((w) => {
    try {
      return validateWindow(w, label, facts);
    } catch (e) {
      if (e instanceof SluiceError) return e;
      throw e;
    }
  });
  const failures = windows.map((w) => w instanceof SluiceError ? w : null);
  const order = windows.flatMap((w, i) => w instanceof SluiceError ? [] : [i]).sort((a, b) => {
    const [wa, wb] = [windows[a] as TimeWindow, windows[b] as TimeWindow];
    return wa[0] - wb[0] || wa[1] - wb[1];
  });
  return { windows, failures, order };
}

/**
 * Cuts `wanted` in start order, reading on from where the reader stands (see the module docs); a window joins the
 * group before it when its start keyframe lies inside that group's packets and `join` allows it. Windows from
 * `optionalFrom` on only join groups (see {@link demuxGroupsSync}).
 */
function cutGroups(
  stream: OpenStream,
  wanted: TimeWindow[],
  join: (members: readonly number[], next: number) => boolean,
  optionalFrom = wanted.length,
): DemuxedGroups {
  const { reader, facts, common } = stream;
  const { windows, failures, order } = checkedWindows(wanted, common.source, facts);
  const screen = new ScreenTime(reader, facts, common.frameRate);
  const groups: WindowGroup[] = [];
  let open: OpenGroup | null = null;
  const close = () => {
    if (open !== null) groups.push(sliceGroup(screen, open, windows as TimeWindow[], common));
    open = null;
  };
  // Optional windows no open group could take: the next group may still start in their GOP.
  let pending: number[] = [];
  const tryJoin = (g: OpenGroup, wi: number): boolean => {
    let k: number, end: number;
    try {
      [k, end] = locateWindow(screen, windows[wi] as TimeWindow, common, false);
    } catch (e) {
      if (!(e instanceof SluiceError)) throw e;
      failures[wi] = e;
      return false;
    }
    if (!(k >= g.start && k < g.end && joinable(g, wi, join))) return false;
    g.members.push({ window: wi, k, end });
    g.end = Math.max(g.end, end);
    return true;
  };
  for (const wi of order) {
    const w = windows[wi] as TimeWindow;
    const inside = open !== null && joinable(open, wi, join) && startsInside(reader, open, w[0], facts.tb);
    lap("read");
    if (wi >= optionalFrom) {
      if (!inside || !tryJoin(open!, wi)) pending.push(wi);
      continue;
    }
    // A window whose start keyframe is not among the open group's packets cannot share them: cut that group.
    if (open !== null && !inside) close();
    let k: number, end: number;
    try {
      // Joining: the start keyframe is in the run, read on from it (a seek would lose the group's packets).
      [k, end] = locateWindow(screen, w, common, open === null);
    } catch (e) {
      if (!(e instanceof SluiceError)) throw e;
      failures[wi] = e;
      continue;
    }
    const g: OpenGroup | null = open;
    if (g !== null && k >= g.start && k < g.end && joinable(g, wi, join)) {
      g.members.push({ window: wi, k, end });
      g.end = Math.max(g.end, end);
      pending = [];
      continue;
    }
    close();
    // Later windows start no earlier, so they never need packets before k.
    reader.dropBefore(k);
    const opened: OpenGroup = { start: 0, end: end - k, members: [{ window: wi, k: 0, end: end - k }] };
    open = opened;
    // Optional windows before this one that start in its GOP (at or after its keyframe) are served by it too.
    const run = reader.run;
    for (const p of pending) {
      if (run.isKey(0) && run.keyframeSeconds(0, facts.tb) <= (windows[p] as TimeWindow)[0]) {
        tryJoin(opened, p);
      }
    }
    pending = [];
  }
  close();
  indexGroups(groups.map((g) => g.packets), stream);
  lap("read");
  return { groups, failures };
}

/**
 * Gives each run of packets reached by a seek (no `firstFrameIndex` yet: the packets before it were not read) its
 * `firstFrameIndex` from the stream's keyframe table, when asked for.
 */
function indexGroups(runs: VideoPackets[], { src, facts, frameIndex, probed }: OpenStream): void {
  const pending = runs.filter((p) => p.firstFrameIndex === undefined && p.numPackets > 0);
  if (!frameIndex || pending.length === 0) return;
  const table = keyframeTable(src, facts.index, probed);
  for (const p of pending) {
    const before = table.before(p.pts[0], p.dts[0]);
    if (before !== null) setFirstFrameIndex(p, before);
  }
}

/** Sets `p.firstFrameIndex` from the stats of the packets before it, when they tell. */
function setFirstFrameIndex(p: VideoPackets, before: PrefixStats): void {
  const first = firstFrameIndex(before, p);
  if (first !== undefined) p.firstFrameIndex = first;
}

function joinable(g: OpenGroup, next: number, join: (m: readonly number[], n: number) => boolean): boolean {
  return join(g.members.map((m) => m.window), next);
}

/**
 * Whether the start keyframe of a window starting at `s` lies inside the group's packets (before `g.end`):
 * reads on from the group's end until a keyframe tells (presented at or before `s`: the window starts at it or
 * later, outside; after `s`: inside), or a packet decoded after `s` does (no later keyframe can be presented at
 * or before `s`), or the file ends.
 */
function startsInside(reader: StreamReader, g: OpenGroup, s: number, tb: Rational): boolean {
  const run = reader.run;
  for (let i = g.end;; i++) {
    if (i >= run.length && !reader.next()) return true;
    if (run.isKey(i)) {
      while (run.length <= i + LEADING_LOOKAHEAD && reader.next()) { /* what keyframeSeconds looks at */ }
      return run.keyframeSeconds(i, tb) > s;
    }
    if (decodeSeconds(run, i, tb) > s) return true;
  }
}

/** The group's packets, each window's range within them, the union window, and until when its frames show. */
function sliceGroup(
  screen: ScreenTime,
  g: OpenGroup,
  windows: TimeWindow[],
  common: CommonFields,
): WindowGroup {
  const s = Math.min(...g.members.map((m) => windows[m.window][0]));
  const e = Math.max(...g.members.map((m) => windows[m.window][1]));
  // Each group owns its buffers (extradata included): groups travel to Workers one by one, and a
  // transferred buffer is detached for every object that shares it.
  const extradata = common.extradata.slice();
  const packets = new VideoPackets({
    ...common,
    extradata,
    window: [s, e],
    endSec: screen.shownUntil(g.start, e),
    ...screen.reader.run.slice(g.start, g.end),
  });
  // Read from the stream's start: the packets before these are known (else `indexGroups` looks them up).
  if (g.start === 0 && screen.reader.prefix !== null) setFirstFrameIndex(packets, screen.reader.prefix);
  return {
    packets,
    // in start order (optional windows of the group's GOP join it after the window that opened it)
    members: g.members.map((m) => ({
      window: m.window,
      range: [m.k - g.start, m.end - g.start] as [number, number],
    }))
      .sort((a, b) =>
        windows[a.window][0] - windows[b.window][0] || windows[a.window][1] - windows[b.window][1]
      ),
  };
}

/**
 * Positions the reader for window `[s, e)` and reads through it: returns its packets `[k, end)` as indices into
 * the reader's run (see the module docs), or throws the window's `MediaError`.
 */
function locateWindow(
  screen: ScreenTime,
  [s, e]: TimeWindow,
  common: CommonFields,
  maySeek: boolean,
): [number, number] {
  const { reader, facts } = screen;
  const { tb, index } = facts;
  const label = common.source;
  const k = positionFor(reader, s, facts, maySeek);
  lap("seek");
  if (k >= 0) readThrough(reader, k, e, tb);
  lap("read");
  if (reader.eof) {
    const end = screen.streamEnd();
    if (!(end > s)) {
      const header = facts.endSec === null
        ? ""
        : ` (the header says it lasts until ${fmtSec(facts.endSec)} s)`;
      throw new MediaError(
        label,
        "demux window",
        reader.run.length === 0
          ? `stream ${index} has no packets${header}`
          : `file ends at ${fmtSec(end)} s, before the window [${fmtSec(s)}, ${fmtSec(e)})${header}`,
      );
    }
  }
  if (k < 0) {
    throw new MediaError(
      label,
      "demux window",
      `no keyframe found at or before ${fmtSec(s)} s in stream ${index}`,
    );
  }
  return [k, windowEnd(reader.run, k, e, tb)];
}

/**
 * Demuxes the whole video stream (or one window of it).
 * @param src a path or the file's bytes
 * @param opts which stream, and the window `[start, end)` in seconds ({@link DemuxOptions})
 * @returns the stream's packets (from the keyframe before the window's start), with its codec parameters
 * @throws {MediaError} (rejects) naming the source, for unreadable input or a window outside the stream
 * @throws {InvalidArgumentError} (rejects) for a malformed window
 * @example
 * ```ts
 * import { demuxVideo } from "@sluice/sluice/media";
 * const packets = await demuxVideo("clip.mp4", { window: [2, 4] });
 * console.log(packets.numPackets, packets.codec);
 * ```
 */
export function demuxVideo(
  src: MediaInput,
  opts?: DemuxOptions & { windows?: undefined },
): Promise<VideoPackets>;
/**
 * Demuxes several windows from one open of the file.
 * @param src a path or the file's bytes
 * @param opts which stream, and the windows ({@link DemuxOptions})
 * @returns one `VideoPackets` per window, in the order given
 * @throws {MediaError} (rejects) naming the source, for unreadable input or a window outside the stream
 * @throws {InvalidArgumentError} (rejects) for a malformed window
 */
export function demuxVideo(
  src: MediaInput,
  opts: DemuxOptions & { windows: TimeWindow[] },
): Promise<VideoPackets[]>;
/**
 * Demuxes the packets of one video stream. The work is synchronous FFI (meant to run inside a Worker); the
 * Promise is for API symmetry.
 * @param src a path or the file's bytes
 * @param opts which stream, and a window or several ({@link DemuxOptions})
 * @returns the packets, or one `VideoPackets` per window with `windows`
 * @throws {MediaError} (rejects) naming the source, the operation and FFmpeg's message, for unreadable
 *   input or a window outside the stream
 * @throws {InvalidArgumentError} (rejects) for a malformed window
 */
export function demuxVideo(src: MediaInput, opts: DemuxOptions = {}): Promise<VideoPackets | VideoPackets[]> {
  return settle(() => {
    const out = demuxVideoSync(src, opts);
    return opts.windows !== undefined ? out : out[0];
  });
}
