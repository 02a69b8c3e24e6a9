/**
 * `sluice preview`: the PNG it writes is read by ffprobe/ffmpeg at the documented size for the clips and flags
 * given (margins of 4, text lines of 12, at least 56 characters of 6 pixels across), its frames are those of
 * the loader with the same flags; `--html` writes the page; bad flags are usage errors.
 */
import assert from "node:assert/strict";
import { sluice, tinyDataset } from "./helpers.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { decodePngCli } from "../helpers/decode_oracles.ts";
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import { previewCommand } from "../../src/cli/commands/preview.ts";

Deno.test({
  name:
    "sluice preview writes a PNG of rows × columns of frames plus labels; --html a page of the same clips",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const dir = await tinyDataset({ videos: 4 });
    try {
      const flags = ["--batch-size", "2", "--frames", "3", "--width", "48", "--height", "24", "--seed", "5"];
      const out = `${dir}/sheet.png`;
      const r = await sluice(["preview", dir, ...flags, "--batches", "2", "--out", out]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(
        r.stdout.trim(),
        `wrote ${out}: 4 clips of 3 frames, 344×${4 + 4 * (12 + 24 + 12 + 4)} pixels`,
      );
      const sheet = await decodePngCli(out);
      assert.deepEqual([sheet.width, sheet.height], [344, 4 + 4 * 52]);
      // the first frame of the first clip is the first batch's, as the library loads it with these options
      await using loader = await videoClassificationLoader({
        dataset: dir,
        batchSize: 2,
        clip: { numFrames: 3, width: 48, height: 24 },
        sampler: { seed: 5 },
        log: () => {},
      });
      for await (const b of loader) {
        for (let y = 0; y < 24; y++) {
          const at = ((4 + 12 + y) * 344 + 4) * 3;
          assert.deepEqual(
            sheet.rgb.subarray(at, at + 48 * 3),
            b.data.subarray(y * 48 * 3, (y + 1) * 48 * 3),
          );
        }
        break;
      }
      const page = `${dir}/page.html`;
      const h = await sluice(["preview", dir, ...flags, "--html", "--out", page]);
      assert.equal(h.code, 0, h.stderr);
      assert.equal(h.stdout.trim(), `wrote ${page}: 2 clips of 3 frames`);
      const html = await Deno.readTextFile(page);
      assert.equal(html.match(/data:image\/png;base64,/g)?.length, 2 * 3);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("sluice preview: flags out of range are usage errors naming the flag", async () => {
  const r = await sluice([
    "preview",
    "nowhere",
    "--batch-size",
    "2",
    "--frames",
    "3",
    "--width",
    "8",
    "--height",
    "8",
    "--batches",
    "0",
  ]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--batches must be an integer from 1 to 64, got "0"/);
  const m = await sluice(["preview", "nowhere", "--frames", "3", "--width", "8", "--height", "8"]);
  assert.equal(m.code, 2);
  assert.match(m.stderr, /--batch-size/);
});

Deno.test("sluice preview --help says each frame is labelled with its index in the video, as clips carry it", () => {
  assert.match(previewCommand.description!, /each frame's index in the video \(its time in seconds where/);
  assert.doesNotMatch(previewCommand.description!, /until clips carry/);
});
