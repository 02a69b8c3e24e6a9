/**
 * The loader with `decode: "nvdec"` (src/loader/decode/clip_worker.ts decodeClip with the spec's decoder, in pipeline
 * Workers) against the double, compared batch by batch with the CPU loader on the same sampler seed. The Workers
 * load the double through SLUICE_LIBCUDA / SLUICE_LIBNVCUVID (process environment, set by useDouble before the
 * loader starts) and log to NVDOUBLE_LOG (the double's unconfigured threads read it).
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { slotOf } from "../../src/loader/batch/batch_slots.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { makeSyntheticDataset } from "../../src/prep/synthetic.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { psnr, useDouble } from "./nvdec_helpers.ts";
import { unbalanced } from "./double/build.ts";

/**
 * Measured 42.6 dB (worst batch): ~93% of bytes within ±2, none beyond 32. The synthetic dataset draws hard
 * saturated colour edges, where the PTX kernel's chroma upsampling and libswscale's (CPU loader, bilinear)
 * differ by up to ~30 at edge pixels; on camera footage the same conversion measures ≥ 45 dB
 * (decoder_test.ts, resize_test.ts crop). 40 dB plus the ±2 / max-32 checks catch any misplaced frame, plane,
 * row or colour matrix (those move most bytes by far more than 2).
 */
const LOADER_PSNR_DB = 40;

/** Every batch of one epoch; a device batch (slots) as its host copy (`toHost()`), made before its slot goes back. */
async function load(opts: LoaderOptions): Promise<Batch[]> {
  await using loader = await videoClassificationLoader({ log: () => {}, ...opts });
  const batches: Batch[] = [];
  for await (using b of loader) {
    const data = b.toHost().slice();
    if (opts.slots !== undefined) assert.ok(b.device !== undefined, "an NVDEC loader's slots are on the GPU");
    const { dtype, shape, layout, clips } = b, labels = b.labels.slice();
    batches.push({ data, dtype, shape, layout, labels, clips, toHost: () => data, [Symbol.dispose]() {} });
  }
  for (const s of loader.stats().pipeline.stages) assert.equal(s.failed, 0, `${s.name} failures`);
  const clips = loader.stats().clips.total;
  assert.equal(clips.planned, clips.delivered, "every planned clip delivered");
  assert.equal(clips.failed + clips.pending + clips.dropped, 0);
  assert.equal(loader.decoder, opts.decode ?? "cpu");
  return batches;
}

Deno.test({
  name: 'nvdec: loader decode "nvdec" gives the CPU loader\'s batches (PSNR >= 40 dB, same clips and pts)',
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-loader-" });
  const log = await Deno.makeTempFile({ suffix: ".nvdouble.log" });
  Deno.env.set("NVDOUBLE_LOG", log);
  try {
    makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 2, fps: 25, width: 96, height: 64 });
    const base: LoaderOptions = {
      dataset: dir,
      batchSize: 4,
      sampler: { seed: 5, clipsPerVideo: 2, rank: 0, worldSize: 1 },
      // Native size: the comparison isolates decode + NV12→RGB (the resize path is bounded in resize_test.ts).
      clip: { numFrames: 6, width: 96, height: 64 },
      layout: "BCTHW",
      concurrency: { decode: 1 },
    };
    const cpu = await load({ ...base, decode: "cpu" });
    const gpu = await load({ ...base, decode: "nvdec" });
    assert.equal(gpu.length, cpu.length);
    assert.equal(gpu.length, 2);
    let worst = Infinity;
    for (const [i, g] of gpu.entries()) {
      const c = cpu[i];
      assert.deepEqual(g.shape, c.shape);
      assert.deepEqual([...g.labels], [...c.labels]);
      assert.deepEqual(
        g.clips.map((x) => [x.video, x.start, x.end, [...x.pts]]),
        c.clips.map((x) => [
          x.video,
          x.start,
          x.end,
          [...x.pts],
        ]),
      );
      worst = Math.min(worst, psnr(g.data as Uint8Array, c.data as Uint8Array));
      let near = 0, max = 0;
      for (let k = 0; k < g.data.length; k++) {
        const d = Math.abs(g.data[k] - c.data[k]);
        if (d <= 2) near++;
        max = Math.max(max, d);
      }
      assert.ok(
        near / g.data.length >= 0.9,
        `only ${(100 * near / g.data.length).toFixed(1)}% of bytes within ±2`,
      );
      assert.ok(max <= 32, `max byte difference ${max}`);
    }
    console.log(`loader nvdec vs cpu: worst batch PSNR ${worst.toFixed(2)} dB`);
    assert.ok(worst >= LOADER_PSNR_DB, `PSNR ${worst.toFixed(2)} dB`);
    const lines = Deno.readTextFileSync(log).split("\n");
    const count = (re: RegExp) => lines.filter((l) => re.test(l)).length;
    // One Worker, 8 clips: one decoder created and reconfigured for the following clips (cached per Worker), one
    // caps query, and the device buffers (decoded frames, the frame kept back, placed clip) allocated once, not per
    // clip: cuMemFree waits for the whole device, which every decode thread shares (before: 8 queries, 24 buffers).
    assert.equal(count(/^cuvidCreateDecoder rc=0/), 1);
    assert.equal(count(/^cuvidReconfigureDecoder rc=0/), 7);
    assert.equal(count(/^cuvidGetDecoderCaps rc=0/), 1);
    assert.equal(count(/^cuMemAlloc_v2 rc=0/), 3);
    // its copies, kernels and maps on a stream of its own: not the legacy default stream every thread shares
    assert.equal(count(/^cuStreamCreate rc=0/), 1);
    assert.equal(count(/^cuStreamDestroy_v2 rc=0/), 1);
    assert.equal(count(/^cuvidCreateVideoParser rc=0/), count(/^cuvidDestroyVideoParser rc=0/));
    assert.equal(count(/^cuvidMapVideoFrame64 rc=0/), count(/^cuvidUnmapVideoFrame64 rc=0/));
  } finally {
    Deno.env.delete("NVDOUBLE_LOG");
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(log);
  }
});

Deno.test({
  name: "nvdec: with batch slots the Workers place NVDEC clips by address: the same batches as without",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-slots-" });
  try {
    makeSyntheticDataset(dir, { videos: 3, classes: 2, durationSec: 2, fps: 25, width: 96, height: 64 });
    const digests = async (slots?: number) => {
      await using loader = await videoClassificationLoader({
        dataset: dir,
        batchSize: 4,
        sampler: { seed: 5, clipsPerVideo: 3 },
        clip: { numFrames: 4, width: 48, height: 32 },
        decode: "nvdec",
        concurrency: { decode: 1 },
        log: () => {},
        ...(slots ? { slots } : {}),
      });
      const out: string[] = [];
      for await (using b of loader) {
        assert.equal(slotOf(b) !== undefined, slots !== undefined);
        assert.equal(b.device !== undefined, slots !== undefined, "slots of an NVDEC loader are on the GPU");
        if (b.device !== undefined) assert.throws(() => b.data, /GPU memory.*toHost/);
        out.push(JSON.stringify([b.shape, [...b.labels], Array.from(b.toHost() as Uint8Array)]));
      }
      return out;
    };
    const want = await digests();
    assert.equal(want.length, 3, "two full batches and a partial one");
    assert.deepEqual(await digests(2), want);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "nvdec: a process that ran NVDEC epochs exits holding no primary context and no device memory",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-exit-" });
  const log = await Deno.makeTempFile({ suffix: ".nvdouble.log" });
  try {
    makeSyntheticDataset(dir, { videos: 2, classes: 2, durationSec: 1, fps: 25, width: 96, height: 64 });
    const child = new URL("./fixtures/nvdec_epochs.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", child, dir, "2"],
      env: { SLUICE_LIBCUDA: dbl.path, SLUICE_LIBNVCUVID: dbl.path, NVDOUBLE_LOG: log },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const lines = Deno.readTextFileSync(log).split("\n");
    const exit = lines.filter((l) => l.startsWith("exit "));
    assert.equal(exit.length, 1, "the double reports once, at exit");
    assert.match(exit[0], /^exit violations=0 primary-retains=0 device-allocations=0 /);
    assert.deepEqual(unbalanced(lines), {});
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(log);
  }
});

Deno.test({
  name:
    "nvdec: loader batches match the CPU's for BTHWC/BCTHW x uint8/float32; each pixel leaves the GPU once",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-matrix-" });
  try {
    makeSyntheticDataset(dir, { videos: 2, classes: 2, durationSec: 1, fps: 25, width: 96, height: 64 });
    const std = [0.5, 0.5, 0.5] as [number, number, number];
    for (const layout of ["BTHWC", "BCTHW"] as const) {
      for (const dtype of ["uint8", "float32"] as const) {
        const base: LoaderOptions = {
          dataset: dir,
          batchSize: 2,
          sampler: { seed: 9, clipsPerVideo: 1, rank: 0, worldSize: 1 },
          clip: {
            numFrames: 4,
            width: 96,
            height: 64,
            flipProbability: 0.5,
            ...(dtype === "float32" ? { dtype, std, mean: [0, 0, 0] as [number, number, number] } : {}),
          },
          layout,
          concurrency: { decode: 1 },
        };
        const cpu = await load({ ...base, decode: "cpu" });
        dbl.configure();
        const gpu = await load({ ...base, decode: "nvdec" });
        const copied = dbl.copiedBytes();
        const bytes = (b: Batch) =>
          b.data instanceof Float32Array ? Uint8Array.from(b.data, (v) => Math.round(v * 0.5 * 255)) : b.data;
        assert.equal(gpu.length, cpu.length);
        let total = 0;
        for (const [i, g] of gpu.entries()) {
          assert.deepEqual(g.shape, cpu[i].shape, `${layout} ${dtype}`);
          assert.equal(g.dtype, dtype);
          const db = psnr(bytes(g) as Uint8Array, bytes(cpu[i]) as Uint8Array);
          assert.ok(db >= LOADER_PSNR_DB, `${layout} ${dtype}: PSNR ${db.toFixed(2)} dB`);
          total += g.data.byteLength;
        }
        // Decoded frames reach the host once, finished (held and padded copies are made on the host).
        assert.ok(
          copied.dtoh > 0 && copied.dtoh <= total,
          `${layout} ${dtype}: ${copied.dtoh} > ${total} bytes`,
        );
        assert.equal(copied.htod, 0, "no pixel goes back to the GPU");
        // Device batch slots: batches stay on the GPU; only toHost() copies, exactly the batch's bytes.
        dbl.configure();
        const onGpu = await load({ ...base, decode: "nvdec", slots: 2 });
        const after = dbl.copiedBytes();
        assert.equal(onGpu.length, cpu.length);
        let hostBytes = 0;
        for (const [i, g] of onGpu.entries()) {
          assert.deepEqual(g.shape, cpu[i].shape, `${layout} ${dtype} slots`);
          const db = psnr(bytes(g) as Uint8Array, bytes(cpu[i]) as Uint8Array);
          assert.ok(db >= LOADER_PSNR_DB, `${layout} ${dtype} slots: PSNR ${db.toFixed(2)} dB`);
          hostBytes += g.data.byteLength;
        }
        assert.equal(after.dtoh, hostBytes, `${layout} ${dtype}: device to host only in toHost()`);
        assert.equal(after.htod, 0);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "nvdec: device slots pad short clips and close the gaps of skipped clips on the GPU, as the host path does",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-pad-" });
  try {
    makeSyntheticDataset(dir, { videos: 1, classes: 1, durationSec: 1, fps: 25, width: 96, height: 64 });
    const [video] = [...Deno.readDirSync(`${dir}/class_00`)].map((e) => `${dir}/class_00/${e.name}`);
    // A missing file first (its clip fails at demux), then the video: its clip (place 1) moves to place 0.
    const manifest = `${dir}/gap.csv`;
    Deno.writeTextFileSync(
      manifest,
      ["path,label,start,end", `${dir}/missing.mp4,0,0,1`, `${video},0,,`].join("\n"),
    );
    for (const layout of ["BTHWC", "BCTHW"] as const) {
      const base: LoaderOptions = {
        dataset: manifest,
        batchSize: 2,
        sampler: { seed: 1, clipsPerVideo: 1, clipDurationSec: 1, shuffle: false, rank: 0, worldSize: 1 },
        // at most 25 frames in the 1 s window, 32 asked: the last one repeated
        clip: { numFrames: 32, width: 48, height: 32, maxPadFraction: 0.5 },
        layout,
        decode: "nvdec",
        onClipError: "skip",
        concurrency: { decode: 1 },
        log: () => {},
      };
      const run = async (slots?: number) => {
        await using loader = await videoClassificationLoader({ ...base, ...(slots ? { slots } : {}) });
        const out: { data: Uint8Array; padded: number; video: number }[] = [];
        for await (using b of loader) {
          assert.equal(b.device !== undefined, slots !== undefined);
          assert.equal(b.clips.length, 1);
          out.push({
            data: (b.toHost() as Uint8Array).slice(),
            padded: b.clips[0].padded + b.clips[0].held,
            video: b.clips[0].video,
          });
        }
        return out;
      };
      const host = await run();
      dbl.configure();
      const gpu = await run(2);
      const copied = dbl.copiedBytes();
      assert.equal(host.length, 1);
      assert.equal(host[0].padded, 7, "the clip repeats its last frame 7 times (held or padded)");
      assert.equal(gpu[0].video, host[0].video);
      assert.equal(gpu[0].padded, 7);
      const differ = gpu[0].data.findIndex((v, k) => v !== host[0].data[k]);
      assert.equal(differ, -1, `${layout}: padded and moved on the GPU (first differing byte ${differ})`);
      const clipBytes = 32 * 3 * 48 * 32, frameBytes = 3 * 48 * 32;
      assert.equal(copied.dtoh, clipBytes, "toHost() only");
      assert.equal(copied.htod, 0);
      assert.equal(copied.dtod, 7 * frameBytes + clipBytes, "7 frames repeated, one clip moved");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "nvdec: LOCAL_RANK picks the loader's GPU: Workers decode there, slots live there, concurrency = its NVDECs",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  const dir = await Deno.makeTempDir({ prefix: "sluice-nvdec-device-" });
  Deno.env.set("NVDOUBLE_DEVICES", "2"); // the Workers' double (configured from the environment)
  Deno.env.set("NVDOUBLE_LOG", dbl.logPath);
  Deno.env.set("LOCAL_RANK", "1");
  try {
    dbl.configure({ devices: 2, nvdecs: 5 });
    makeSyntheticDataset(dir, { videos: 2, classes: 2, durationSec: 1, fps: 25, width: 96, height: 64 });
    const opts: LoaderOptions = {
      dataset: dir,
      batchSize: 2,
      sampler: { seed: 3, clipsPerVideo: 1 },
      clip: { numFrames: 4, width: 48, height: 32 },
      decode: "nvdec",
      slots: 2,
      log: () => {},
    };
    {
      await using loader = await videoClassificationLoader(opts);
      const decode = loader.stats().pipeline.stages.find((s) => s.name === "decode");
      assert.equal(decode?.concurrency, 5, "decode concurrency: device 1's NVDEC engines");
      for await (using b of loader) assert.equal(b.device?.device, 1);
    }
    const retains = Deno.readTextFileSync(dbl.logPath).split("\n").filter((l) =>
      l.startsWith("cuDevicePrimaryCtxRetain rc=0")
    );
    assert.ok(retains.length > 0);
    assert.deepEqual(
      retains.filter((l) => !l.endsWith("h=dev1")),
      [],
      "every context retained is device 1's",
    );
    // the option wins over LOCAL_RANK, and a bad one is refused naming it
    await assert.rejects(() => videoClassificationLoader({ ...opts, device: -1 }), /device/);
  } finally {
    Deno.env.delete("LOCAL_RANK");
    Deno.env.delete("NVDOUBLE_LOG");
    Deno.env.delete("NVDOUBLE_DEVICES");
    await Deno.remove(dir, { recursive: true });
  }
});
