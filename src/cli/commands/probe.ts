/**
 * `sluice probe FILE...`: what each file holds, one row per video stream, the stream sluice decodes marked and
 * why (FFmpeg's best-stream rule, applied to what the file says).
 * @module
 */

import { type MediaInfo, probe, type StreamInfo, type VideoStreamInfo } from "../../media/probe.ts";
import { errorText } from "../../errors.ts";
import { defineCommand } from "../args.ts";
import { alignTable } from "../table.ts";
import { print, wrapLine } from "../tty.ts";

/** How FFmpeg's `av_find_best_stream`, which sluice uses, ranks video streams. */
export const BEST_STREAM_RULE =
  "FFmpeg's best stream (av_find_best_stream) ranks streams marked default first, " +
  "then those with more frames seen while probing (up to 5), then the higher bit rate, then file order";

/** One file's probe, with every video stream and the reason the used one was chosen. */
export interface ProbeReport extends MediaInfo {
  file: string;
  /** Every video stream (cover images left out), in file order. */
  videoStreams: VideoStreamInfo[];
  /** Why `video` (the stream sluice decodes) is the one; null without video. */
  selection: string | null;
}

/** Probes `file` and each of its video streams. */
export async function probeReport(file: string): Promise<ProbeReport> {
  const info = await probe(file);
  const videoStreams: VideoStreamInfo[] = [];
  for (const s of info.streams) {
    if (s.type !== "video" || s.attachedPic) continue;
    const v = s.index === info.video?.index
      ? info.video
      : (await probe(file, { streamIndex: s.index })).video;
    if (v !== null) videoStreams.push(v);
  }
  const selection = info.video === null ? null : selectionReason(info.streams, info.video.index);
  return { file, ...info, videoStreams, selection };
}

/** Why FFmpeg's rule (see {@link BEST_STREAM_RULE}) lands on stream `chosen`, from what the file says. */
export function selectionReason(streams: readonly StreamInfo[], chosen: number): string {
  const video = streams.filter((s) => s.type === "video" && !s.attachedPic);
  const c = video.find((s) => s.index === chosen);
  if (c === undefined) return "the only video stream FFmpeg could rank";
  if (video.length === 1) return "the only video stream";
  if (c.isDefault && video.every((s) => s === c || !s.isDefault)) {
    return "the only video stream marked default";
  }
  const peers = video.filter((s) => s !== c && s.isDefault === c.isDefault);
  const kbps = (s: StreamInfo) => `${Math.round(s.bitRate / 1000)} kb/s`;
  const marked = c.isDefault ? "among the streams marked default, " : "";
  if (peers.every((s) => s.bitRate < c.bitRate)) {
    return `${marked}the highest bit rate (${kbps(c)}; ${
      peers.map((s) => `stream ${s.index} ${kbps(s)}`).join(", ")
    })`;
  }
  if (peers.every((s) => s.bitRate === c.bitRate) && peers.every((s) => s.index > c.index)) {
    return `${marked}equal on disposition and bit rate; the first in file order`;
  }
  return `${marked}more frames seen while probing`;
}

const COLUMNS = [
  "file",
  "stream",
  "format",
  "codec",
  "size",
  "fps",
  "duration s",
  "frames",
  "pix_fmt",
  "rotation",
];

/** The `probe` command. */
export const probeCommand = defineCommand({
  name: "probe",
  summary: "show what media files hold: container, every video stream, the one sluice decodes and why",
  description: "One row per video stream; the stream sluice decodes is marked *, and a note says why it is " +
    "the one when a file has several. Files that cannot be opened get a row and their error below the " +
    "table, and make the exit status 1.",
  positionals: [{ name: "FILE", help: "media files (or http(s) URLs)", variadic: true }],
  options: {
    json: { type: "boolean", help: "print a JSON array (per file: probe() fields, videoStreams, selection)" },
  },
  examples: ["probe .cache/demo/videos/class_00/video_0000.mp4", "probe --json clip.mkv talk.mp4"],
  async run({ values, positionals }) {
    const reports: (ProbeReport | { file: string; error: string })[] = [];
    for (const file of positionals) {
      try {
        reports.push(await probeReport(file));
      } catch (e) {
        reports.push({ file, error: errorText(e, file) });
      }
    }
    if (values.json) print(Deno.stdout, JSON.stringify(reports, null, 2));
    else print(Deno.stdout, formatProbeTable(reports));
    return reports.some((r) => "error" in r) ? 1 : 0;
  },
});

/** The table, then the notes: why the marked stream, and each error (kept out of the table's columns). */
export function formatProbeTable(
  reports: readonly (ProbeReport | { file: string; error: string })[],
): string {
  const rows: string[][] = [COLUMNS];
  const notes: string[] = [];
  let marked = false;
  for (const r of reports) {
    if ("error" in r) {
      rows.push([r.file, "-", "error", ...COLUMNS.slice(3).map(() => "")]);
      notes.push(`${r.file}: ${r.error}`);
      continue;
    }
    const format = r.format.split(",")[0];
    if (r.videoStreams.length === 0) rows.push([r.file, "-", format, "no video", "", "", "", "", "", ""]);
    for (const v of r.videoStreams) {
      const used = v.index === r.video?.index && r.videoStreams.length > 1;
      marked ||= used;
      rows.push([
        r.file,
        used ? `${v.index}*` : String(v.index),
        format,
        v.codec,
        `${v.width}x${v.height}`,
        v.frameRate.toFixed(2),
        v.durationSec?.toFixed(2) ?? "-",
        String(v.numFrames ?? "-"),
        v.pixelFormat ?? "-",
        String(v.rotation),
      ]);
    }
    if (r.videoStreams.length > 1) notes.push(`${r.file}: stream ${r.video!.index} is used: ${r.selection}`);
  }
  const lines = [alignTable(rows, [5, 6, 7, 9])];
  if (marked) lines.push("", ...wrapLine(`* the stream sluice decodes; ${BEST_STREAM_RULE}.`, 100));
  if (notes.length > 0) lines.push("", ...notes);
  return lines.join("\n");
}
