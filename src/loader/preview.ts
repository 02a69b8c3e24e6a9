/**
 * See the batches (`loader.preview()`, `sluice preview`): a contact sheet of a loader's batches, a row per clip
 * with its frames left to right exactly as the batch holds them, after every transform (crop, flip, resize; a
 * `float32` batch's normalisation undone, a `"BCTHW"` batch's planes joined), each row labelled with the class,
 * the file and the window, each frame with its index in the video (`frameIndex`; its time in seconds where
 * timestamps cannot tell the index), a substitute clip and padded frames marked. {@link previewHtml} makes the same clips one
 * self-contained page, each playable (its frames as PNG data URIs, cycled at the clip's own pace).
 *
 * The sheet's geometry ({@link SHEET}, {@link sheetGeometry}): a margin around and between everything; per
 * clip, a line of text, its frames in a row, a line of frame labels. The sheet is as wide as the frames, or
 * as {@link SHEET}`.minChars` characters when that is wider.
 * @module
 */

import { drawText, fitText, GLYPH_HEIGHT, GLYPH_WIDTH } from "../media/bitmap_font.ts";
import { encodePng, type RgbImage, rgbImage } from "../media/png.ts";
import { ownedBatch } from "./batch/batch_slots.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import type { Batch } from "./batch/collate.ts";
import { datasetRelative } from "../dataset/dataset.ts";
import type { ClipMeta } from "./clip/life.ts";

/** The sheet's spacing, in pixels (see the module docs). */
export const SHEET = {
  /** Around the sheet, between frames and between clips. */
  margin: 4,
  /** A line of text (the glyphs and a pixel above and below). */
  line: GLYPH_HEIGHT + 2,
  /** The sheet is at least this many characters wide (plus its margins). */
  minChars: 56,
} as const;

const BACKGROUND = [24, 24, 24] as const;
const TEXT = [230, 230, 230] as const;
const MARKED = [255, 170, 60] as const;

/** Where things are on a sheet of `rows` clips of `frames` frames of `width × height`. */
export interface SheetGeometry {
  /** The sheet's size in pixels. */
  width: number;
  height: number;
  /** Top-left corner of frame `t` of row `row`. */
  frame(row: number, t: number): [number, number];
}

/** The geometry of a sheet; see the module docs. */
export function sheetGeometry(rows: number, frames: number, width: number, height: number): SheetGeometry {
  const { margin: m, line, minChars } = SHEET;
  const rowHeight = line + height + line + m;
  return {
    width: Math.max(m + frames * (width + m), 2 * m + minChars * GLYPH_WIDTH),
    height: m + rows * rowHeight,
    frame: (row, t) => [m + t * (width + m), m + row * rowHeight + line],
  };
}

/** What the labels and pixels need beyond the batches. */
export interface SheetOptions {
  /** Class names, by label (a dataset's `classes`); else labels show as numbers. */
  classes?: readonly string[];
  /** Paths are shown relative to this dataset root (`datasetRelative`). */
  root?: string;
  /** A `float32` batch's normalisation, undone to show its pixels (the loader's `spec`). */
  normalization?: Pick<ClipSpec, "mean" | "std">;
}

/** A contact sheet: the image, its PNG file, and the clips in its rows. */
export interface ContactSheet {
  /** The sheet's pixels. */
  image: RgbImage;
  /** The sheet as a PNG file. */
  png: Uint8Array;
  /** The clip of each row. */
  clips: ClipMeta[];
}

/**
 * The labels under a clip's frames: each frame's index in the video (`frameIndex`), else (timestamps that cannot
 * tell it) its time in seconds.
 */
export function frameLabels(meta: ClipMeta): string[] {
  const indices = meta.frameIndex;
  if (indices !== null && indices.length === meta.pts.length) return indices.map((i) => `#${i}`);
  return meta.pts.map((t) => t.toFixed(2));
}

/** A clip's line: class, file, window, and whether it stands in for a failed clip. */
function clipLine(meta: ClipMeta, opts: SheetOptions): { head: string; path: string; tail: string } {
  const label = meta.label < 0
    ? "no label"
    : opts.classes?.[meta.label] !== undefined
    ? `${opts.classes[meta.label]} (${meta.label})`
    : `label ${meta.label}`;
  const path = opts.root === undefined ? meta.path : datasetRelative(meta.path, opts.root);
  const tail = ` [${meta.start.toFixed(2)}, ${meta.end.toFixed(2)}) s` +
    (meta.replaces !== undefined
      ? ` replaces ${meta.replaces.path.slice(meta.replaces.path.lastIndexOf("/") + 1)}`
      : "") +
    (meta.held > 0 ? ` ${meta.held} held` : "") +
    (meta.padded > 0 ? ` ${meta.padded} padded` : "");
  return { head: `${label} `, path, tail };
}

/**
 * Frame `t` of clip `i` of `batch` as packed RGB bytes (`height × width × 3`): a uint8 `"BTHWC"` batch's own
 * bytes; planes joined for `"BCTHW"`; `float32` samples mapped back to bytes
 * (`round((x · std + mean) · 255)`, which gives back the bytes they were made from).
 */
export function frameRgb(
  batch: Batch,
  i: number,
  t: number,
  normalization: Pick<ClipSpec, "mean" | "std"> = { mean: [0, 0, 0], std: [1, 1, 1] },
): Uint8Array {
  const planar = batch.layout === "BCTHW";
  const [T, H, W] = planar ? batch.shape.slice(2) : batch.shape.slice(1, 4);
  const px = H * W, out = new Uint8Array(px * 3);
  const { mean, std } = normalization;
  for (let c = 0; c < 3; c++) {
    const base = planar ? ((i * 3 + c) * T + t) * px : (i * T + t) * px * 3 + c;
    const step = planar ? 1 : 3;
    for (let k = 0; k < px; k++) {
      const x = batch.data[base + k * step];
      out[k * 3 + c] = batch.dtype === "float32"
        ? Math.min(255, Math.max(0, Math.round((x * std[c] + mean[c]) * 255)))
        : x;
    }
  }
  return out;
}

/**
 * Draws the contact sheet of `batches`: one row per clip, its frames left to right, each labelled with its frame
 * index (or time), a line per row with the clip's class, file and window.
 * @param batches the batches to draw, in host memory (a device batch: `batch.toHost()` first)
 * @param opts class names, the dataset root paths are shown relative to, a `float32` batch's normalisation
 * @returns the image, its PNG, and the clip of each row
 */
export function contactSheet(batches: readonly Batch[], opts: SheetOptions = {}): ContactSheet {
  const clips = batches.flatMap((b) => b.clips);
  const first = batches.find((b) => b.clips.length > 0);
  const [T, H, W] = first === undefined
    ? [0, 0, 0]
    : first.layout === "BCTHW"
    ? first.shape.slice(2)
    : first.shape.slice(1, 4);
  const g = sheetGeometry(clips.length, T, W, H);
  const image = rgbImage(g.width, g.height, BACKGROUND);
  const chars = Math.floor((g.width - 2 * SHEET.margin) / GLYPH_WIDTH);
  let row = 0;
  for (const b of batches) {
    for (const [i, meta] of b.clips.entries()) {
      const [x0, y0] = g.frame(row, 0);
      const { head, path, tail } = clipLine(meta, opts);
      const shown = head + fitText(path, Math.max(8, chars - head.length - tail.length), "end");
      const x = x0 + drawText(image, x0, y0 - SHEET.line + 1, shown, TEXT);
      drawText(image, x, y0 - SHEET.line + 1, fitText(tail, Math.max(0, chars - shown.length)), MARKED);
      const labels = frameLabels(meta);
      for (let t = 0; t < T; t++) {
        const [fx, fy] = g.frame(row, t);
        const rgb = frameRgb(b, i, t, opts.normalization);
        for (let y = 0; y < H; y++) {
          image.data.set(rgb.subarray(y * W * 3, (y + 1) * W * 3), ((fy + y) * g.width + fx) * 3);
        }
        const color = t >= T - meta.padded ? MARKED : TEXT; // padding repeats the last frame
        drawText(image, fx, fy + H + 1, fitText(labels[t], Math.floor(W / GLYPH_WIDTH)), color);
      }
      row++;
    }
  }
  return { image, png: encodePng(image), clips };
}

/** Escapes text for HTML. */
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * The clips of `batches` as one self-contained HTML page: per clip its line (class, file, window) and its frames
 * played in a loop at the pace they span in the video (a click pauses), with each frame's label. Its size is
 * about the frames' PNG size (a few KiB per small frame).
 * @param batches the batches to show
 * @param opts class names, the dataset root paths are shown relative to, a `float32` batch's normalisation
 * @returns the page
 */
export function previewHtml(batches: readonly Batch[], opts: SheetOptions = {}): string {
  const rows: string[] = [];
  for (const b of batches) {
    const [T, H, W] = b.layout === "BCTHW" ? b.shape.slice(2) : b.shape.slice(1, 4);
    for (const [i, meta] of b.clips.entries()) {
      const frames = Array.from({ length: T }, (_, t) => {
        const png = encodePng({ width: W, height: H, data: frameRgb(b, i, t, opts.normalization) });
        return `data:image/png;base64,${btoa(Array.from(png, (x) => String.fromCharCode(x)).join(""))}`;
      });
      const ms = Math.round(Math.min(1000, Math.max(40, (meta.span[1] - meta.span[0]) / T * 1000)));
      const { head, path, tail } = clipLine(meta, opts);
      rows.push(
        `<div class="clip"><div>${escapeHtml(head + path)}<span class="m">${escapeHtml(tail)}</span></div>` +
          `<img width="${2 * W}" height="${2 * H}" alt="${escapeHtml(path)}" data-ms="${ms}" ` +
          `data-frames='${escapeHtml(JSON.stringify(frames))}' ` +
          `data-labels='${escapeHtml(JSON.stringify(frameLabels(meta)))}'><span class="f"></span></div>`,
      );
    }
  }
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>sluice preview</title>
<style>body{background:#181818;color:#e6e6e6;font:13px monospace}.clip{margin:10px 6px}
img{image-rendering:pixelated;vertical-align:middle;cursor:pointer}.m,.f{color:#ffaa3c;margin-left:8px}</style>
</head><body>
${rows.join("\n")}
<script>
for (const img of document.querySelectorAll("img[data-frames]")) {
  const frames = JSON.parse(img.dataset.frames), labels = JSON.parse(img.dataset.labels);
  let t = 0, playing = true;
  const show = () => {
    img.src = frames[t];
    img.nextElementSibling.textContent = "frame " + (t + 1) + "/" + frames.length + ": " + labels[t];
  };
  show();
  setInterval(() => { if (playing) { t = (t + 1) % frames.length; show(); } }, Number(img.dataset.ms));
  img.onclick = () => { playing = !playing; };
}
</script>
</body></html>
`;
}

/** What {@link previewLoader} needs of a loader. */
export interface PreviewSource extends AsyncIterable<Batch> {
  /** What each clip is (its normalisation). */
  readonly spec: ClipSpec;
  /** The dataset (class names, root). */
  readonly dataset: { root: string; classes: string[] };
}

/** Options of `loader.preview()`. */
export interface PreviewOptions {
  /** Batches to show (default 1). */
  batches?: number;
  /** Also make the HTML page (`html` of the result). */
  html?: boolean;
}

/** What `loader.preview()` returns: the contact sheet, and the HTML page when asked for. */
export interface Preview extends ContactSheet {
  /** The page of {@link previewHtml}, with `html: true`. */
  html?: string;
}

/**
 * The contact sheet of the next `batches` batches of `loader`: it runs the next epoch for them and leaves it,
 * as a loop that breaks does (batches in batch slots are copied out first).
 */
export async function previewLoader(loader: PreviewSource, opts: PreviewOptions = {}): Promise<Preview> {
  const want = opts.batches ?? 1;
  const batches: Batch[] = [];
  if (want > 0) {
    for await (const b of loader) {
      batches.push(ownedBatch(b));
      if (batches.length >= want) break;
    }
  }
  try {
    const sheetOpts: SheetOptions = {
      classes: loader.dataset.classes,
      root: loader.dataset.root,
      normalization: loader.spec,
    };
    const sheet: Preview = contactSheet(batches, sheetOpts);
    if (opts.html) sheet.html = previewHtml(batches, sheetOpts);
    return sheet;
  } finally {
    for (const b of batches) b[Symbol.dispose]();
  }
}
