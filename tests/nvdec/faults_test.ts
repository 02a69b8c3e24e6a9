import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { nvdecAvailable, nvdecConcurrency } from "../../src/nvdec/available.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { CudaError, NvdecUnsupportedError } from "../../src/errors.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { useDouble } from "./nvdec_helpers.ts";

const ignore = !hasFfmpegCliSync();

async function packets(): Promise<VideoPackets> {
  const clip = await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 1 });
  return await demuxVideo(clip, { bsf: "h264_mp4toannexb" }) as VideoPackets;
}

const CASES: { fail: string; call: string; errorName: string }[] = [
  { fail: "cuvidCreateDecoder:1", call: "cuvidCreateDecoder", errorName: "CUDA_ERROR_UNKNOWN" },
  { fail: "cuvidMapVideoFrame64:5", call: "cuvidMapVideoFrame64", errorName: "CUDA_ERROR_UNKNOWN" },
  { fail: "cuMemAlloc_v2:1", call: "cuMemAlloc_v2", errorName: "CUDA_ERROR_OUT_OF_MEMORY" },
  { fail: "cuLaunchKernel:3", call: "cuLaunchKernel", errorName: "CUDA_ERROR_UNKNOWN" },
  { fail: "cuvidDecodePicture:4", call: "cuvidDecodePicture", errorName: "CUDA_ERROR_UNKNOWN" },
];

for (const c of CASES) {
  Deno.test(
    { name: `nvdec faults: ${c.fail} gives a typed error and releases everything`, ignore },
    async () => {
      const dbl = await useDouble();
      const p = await packets();
      dbl.configure({ fail: c.fail });
      await assert.rejects(decodeVideoNvdec(p), (e: unknown) => {
        assert.ok(e instanceof CudaError, String(e));
        assert.equal(e.call, c.call);
        assert.equal(e.errorName, c.errorName);
        return true;
      });
      releaseDecoderNvdec();
      const log = dbl.log();
      assert.ok(log.some((l) => l.startsWith(`${c.call} INJECTED`)));
      assert.deepEqual(unbalanced(log), {});
      assert.equal(dbl.liveAllocations(), 0);
    },
  );
}

Deno.test({ name: "nvdec faults: a size beyond cuvidGetDecoderCaps names the limit", ignore }, async () => {
  const dbl = await useDouble();
  const p = await packets();
  dbl.configure({ maxWidth: 256 });
  await assert.rejects(decodeVideoNvdec(p), (e: unknown) => {
    assert.ok(e instanceof NvdecUnsupportedError, String(e));
    assert.equal(e.limit, "max coded width 256");
    return true;
  });
  assert.deepEqual(unbalanced(dbl.log()), {});
});

Deno.test("nvdec: nvdecAvailable says why when there is no driver or no device", async () => {
  const saved = Deno.env.get("SLUICE_LIBCUDA");
  const dbl = await useDouble();
  dbl.configure({ devices: 0 });
  const none = nvdecAvailable();
  assert.equal(none.ok, false);
  assert.match((none as { reason: string }).reason, /CUDA device 0 does not exist \(0 found\)/);
  dbl.configure({ nvdecs: 5 });
  const yes = nvdecAvailable();
  assert.ok(yes.ok);
  assert.equal(nvdecConcurrency(), 5);
  Deno.env.set("SLUICE_LIBCUDA", saved!);
});

Deno.test("nvdec: toCuda round-trips bytes through pinned staging; a failed pinned alloc releases the buffer", async () => {
  const { toCuda } = await import("../../src/cuda/to_cuda.ts");
  const dbl = await useDouble();
  dbl.configure();
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);
  {
    using buf = await toCuda(bytes);
    const back = new Uint8Array(1000);
    buf.copyToHost(0, 100, 100, 10, back);
    assert.deepEqual(back, bytes);
  }
  dbl.configure({ fail: "cuMemAllocHost_v2:1" });
  await assert.rejects(toCuda(bytes), CudaError);
  assert.deepEqual(unbalanced(dbl.log()), {});
  assert.equal(dbl.liveAllocations(), 0);
});
