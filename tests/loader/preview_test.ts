/**
 * `loader.preview()` (`src/loader/preview.ts`): the contact sheet, decoded by ffmpeg's own PNG decoder, is as
 * large as the documented geometry says (rows × columns of frames plus the label lines and margins), each frame
 * in it is the batch's pixels (the batches of a second loader with the same seed are the oracle; a float32
 * planar loader's sheet is the uint8 one's), the labels are the clips' class, file, window and frame times; the
 * HTML page carries every frame as a PNG the same decoder reads back.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { contactSheet, frameLabels } from "../../src/loader/preview.ts";
import { drawText, fitText } from "../../src/media/bitmap_font.ts";
import { rgbImage } from "../../src/media/png.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { decodePngCli } from "../helpers/decode_oracles.ts";

const T = 5, W = 40, H = 30, B = 3;
/** The documented geometry: margins of 4, text lines of 12, at least 56 characters of 6 pixels across. */
const MARGIN = 4, LINE = 12, ROW = LINE + H + LINE + MARGIN;
const frameAt = (row: number, t: number) => [MARGIN + t * (W + MARGIN), MARGIN + row * ROW + LINE];

let made: Promise<string> | undefined;
function dataset(): Promise<string> {
  made ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-preview-" });
    makeSyntheticDataset(dir, { videos: 6, classes: 3, durationSec: 1, fps: 25, width: 96, height: 64 });
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    return dir;
  })();
  return made;
}

async function options(o: Partial<LoaderOptions> = {}): Promise<LoaderOptions> {
  return {
    dataset: await dataset(),
    batchSize: B,
    clip: { numFrames: T, width: W, height: H, resize: "random-resized-crop", flipProbability: 0.5 },
    sampler: { seed: 4, rank: 0, worldSize: 1 },
    concurrency: { decode: 1 },
    log: () => {},
    ...o,
  };
}

/** The first `n` batches of a loader built with `opts`, kept. */
async function firstBatches(opts: LoaderOptions, n: number): Promise<Batch[]> {
  await using loader = await videoClassificationLoader(opts);
  const out: Batch[] = [];
  for await (const b of loader) {
    out.push(b);
    if (out.length === n) break;
  }
  return out;
}

/** The `w × h` block at (`x`, `y`) of a packed RGB image `width` wide. */
function block(rgb: Uint8Array, width: number, x: number, y: number, w: number, h: number): Uint8Array {
  const out = new Uint8Array(w * h * 3);
  for (let r = 0; r < h; r++) {
    out.set(rgb.subarray(((y + r) * width + x) * 3, ((y + r) * width + x + w) * 3), r * w * 3);
  }
  return out;
}

/** Asserts equal bytes, naming the first difference (no diff of whole arrays: they are big). */
function assertBytes(got: Uint8Array, want: Uint8Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  const i = got.findIndex((x, k) => x !== want[k]);
  assert.ok(i < 0, `${what}: byte ${i} is ${got[i]}, not ${want[i]}`);
}

/** `text` drawn on the sheet's background in a `w × h` block, as the labels are drawn. */
function rendered(parts: [string, readonly [number, number, number]][], w: number, h: number): Uint8Array {
  const image = rgbImage(w, h, [24, 24, 24]);
  let x = 0;
  for (const [text, color] of parts) x += drawText(image, x, 1, text, color);
  return image.data;
}

Deno.test({
  name: "the contact sheet: rows × columns of the batches' frames plus labels, each frame the batch's pixels",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const opts = await options();
    const want = await firstBatches(opts, 2);
    const clips = want.flatMap((b) => b.clips);
    assert.equal(clips.length, 2 * B);
    await using loader = await videoClassificationLoader(opts);
    const preview = await loader.preview({ batches: 2 });
    const sheet = await decodePngCli(preview.png);
    const width = Math.max(MARGIN + T * (W + MARGIN), 2 * MARGIN + 56 * 6);
    assert.deepEqual([sheet.width, sheet.height], [width, MARGIN + 2 * B * ROW]);
    assert.deepEqual(preview.clips, clips);
    assert.ok(clips.some((c) => c.flipped) && clips.some((c) => !c.flipped), "the transforms vary");
    const dir = await dataset();
    for (const [r, c] of clips.entries()) {
      const b = want[Math.floor(r / B)], i = r % B;
      for (let t = 0; t < T; t++) {
        const [x, y] = frameAt(r, t);
        const frame = b.data.subarray((i * T + t) * H * W * 3, (i * T + t + 1) * H * W * 3) as Uint8Array;
        assertBytes(block(sheet.rgb, width, x, y, W, H), frame, `clip ${r} frame ${t}`);
        // under each frame, its index in the video (these files' timestamps tell it)
        assert.ok(c.frameIndex !== null);
        assertBytes(
          block(sheet.rgb, width, x, y + H, W, LINE),
          rendered([[fitText(`#${c.frameIndex[t]}`, 6), [230, 230, 230]]], W, LINE),
          `clip ${r} frame ${t}: its label`,
        );
      }
      // above the frames: class, file (relative to the dataset), window
      const [x, y] = frameAt(r, 0);
      const file = c.path.slice(dir.length + 1);
      const cls = file.slice(0, file.indexOf("/"));
      const line: [string, readonly [number, number, number]][] = [
        [`${cls} (${c.label}) ${file}`, [230, 230, 230]],
        [` [${c.start.toFixed(2)}, ${c.end.toFixed(2)}) s`, [255, 170, 60]],
      ];
      assertBytes(
        block(sheet.rgb, width, x, y - LINE, 56 * 6, LINE),
        rendered(line, 56 * 6, LINE),
        `line ${r}`,
      );
    }
  },
});

Deno.test({
  name: "preview() leaves the loader's epochs as they are: the next iteration runs the epoch it drew, whole",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    // Issue 30 item 7: it ran the next epoch for its batches and left it, so the loop began at epoch 1.
    const opts = await options();
    const key = (b: Batch) => b.clips.map((c) => `${c.path}@${c.start}`);
    const want: string[][] = [];
    {
      await using plain = await videoClassificationLoader(opts);
      for await (using b of plain) want.push(key(b));
    }
    await using loader = await videoClassificationLoader(opts);
    const preview = await loader.preview({ batches: 2 });
    assert.deepEqual(preview.clips.map((c) => `${c.path}@${c.start}`), [...want[0], ...want[1]]);
    assert.equal(loader.epoch, 0);
    const got: string[][] = [];
    for await (using b of loader) {
      assert.ok(b.clips.every((c) => c.epoch === 0));
      got.push(key(b));
    }
    assert.deepEqual(got, want);
    const clips = loader.stats().clips.total;
    assert.equal(clips.delivered, loader.clipsPerEpoch, "the preview's clips are not this loader's");
  },
});

Deno.test({
  name:
    "planar batches: their planes joined into frames; float32 batches: normalisation undone, the uint8 sheet",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const base = await options();
    const float = (o: Partial<LoaderOptions>) =>
      options({
        ...o,
        clip: { ...base.clip, dtype: "float32", mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] },
      });
    const sheetOf = async (opts: LoaderOptions) => {
      await using loader = await videoClassificationLoader(opts);
      return await decodePngCli((await loader.preview()).png);
    };
    // a planar uint8 batch is [B, 3, T, H, W]
    const planar = await options({ layout: "BCTHW" });
    const [want] = await firstBatches(planar, 1);
    const sheet = await sheetOf(planar);
    for (let i = 0; i < B; i++) {
      for (let t = 0; t < T; t++) {
        const frame = new Uint8Array(H * W * 3);
        for (let c = 0; c < 3; c++) {
          for (let k = 0; k < H * W; k++) frame[k * 3 + c] = want.data[((i * 3 + c) * T + t) * H * W + k];
        }
        const [x, y] = frameAt(i, t);
        assertBytes(block(sheet.rgb, sheet.width, x, y, W, H), frame, `planar clip ${i} frame ${t}`);
      }
    }
    assertBytes((await sheetOf(await float({ layout: "BCTHW" }))).rgb, sheet.rgb, "float32 planar");
    assertBytes((await sheetOf(await float({}))).rgb, (await sheetOf(base)).rgb, "float32 packed");
  },
});

Deno.test({
  name:
    "the HTML page: each clip's frames as PNGs ffmpeg reads back as the batch's, with their labels and a script that parses",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const opts = await options();
    const [want] = await firstBatches(opts, 1);
    await using loader = await videoClassificationLoader(opts);
    const { html } = await loader.preview({ html: true });
    const unescape = (s: string) => s.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)));
    const clips = [...html!.matchAll(/data-frames='([^']*)' data-labels='([^']*)'/g)]
      .map((m) => ({ frames: JSON.parse(unescape(m[1])) as string[], labels: JSON.parse(unescape(m[2])) }));
    assert.equal(clips.length, B);
    for (const [i, c] of clips.entries()) {
      assert.deepEqual(c.labels, want.clips[i].frameIndex!.map((f) => `#${f}`));
      assert.equal(c.frames.length, T);
      for (const [t, uri] of c.frames.entries()) {
        const png = Uint8Array.from(
          atob(uri.slice("data:image/png;base64,".length)),
          (ch) => ch.charCodeAt(0),
        );
        const frame = await decodePngCli(png);
        assert.deepEqual([frame.width, frame.height], [W, H]);
        const bytes = want.data.subarray((i * T + t) * H * W * 3, (i * T + t + 1) * H * W * 3) as Uint8Array;
        assertBytes(frame.rgb, bytes, `page: clip ${i} frame ${t}`);
      }
    }
    const script = /<script>([\s\S]*)<\/script>/.exec(html!)![1];
    new Function(script); // a syntax error throws here
    assert.match(html!, /^<!doctype html>/);
  },
});

Deno.test("frame labels: per-frame indices once clips carry them, else times; padded frames marked", () => {
  const meta = {
    path: "/d/a.mp4",
    video: 0,
    label: -1,
    start: 0,
    end: 1,
    epoch: 0,
    position: 0,
    seed: 1,
    pts: [0.5, 0.54, 0.54],
    frameIndex: null as number[] | null,
    frameKind: ["sampled", "sampled", "padded"] as ("sampled" | "held" | "padded")[],
    held: 0,
    padded: 1,
    span: [0.5, 0.58] as [number, number],
    rotation: 0,
    rotated: false,
    crop: [0, 0, 8, 8] as [number, number, number, number],
    flipped: false,
    decodedFrames: 2,
    skippedFrames: 0,
    passClips: 1,
  };
  assert.deepEqual(frameLabels(meta), ["0.50", "0.54", "0.54"]);
  assert.deepEqual(frameLabels({ ...meta, frameIndex: [12, 13, 13] }), ["#12", "#13", "#13"]);
  const data = new Uint8Array(3 * 2 * 36 * 3).fill(200);
  const batch = {
    data,
    dtype: "uint8",
    shape: [1, 3, 2, 36, 3],
    layout: "BTHWC",
    labels: new Int32Array([-1]),
    clips: [meta],
    [Symbol.dispose]() {},
  } as unknown as Batch;
  const { image } = contactSheet([batch]);
  const labelRow = (t: number) =>
    block(image.data, image.width, MARGIN + t * (36 + MARGIN), MARGIN + LINE + 2, 36, LINE);
  const has = (rgb: Uint8Array, c: number[]) =>
    Array.from({ length: rgb.length / 3 }, (_, k) => k).some((k) =>
      rgb[3 * k] === c[0] && rgb[3 * k + 1] === c[1]
    );
  assert.ok(has(labelRow(1), [230, 230]) && !has(labelRow(1), [255, 170]), "a frame of the window");
  assert.ok(has(labelRow(2), [255, 170]), "the padded frame");
});
