/**
 * GPU decode throughput against the CPU decoder on the same packets (ratio in the same run). Runs only where
 * `nvdecAvailable()` is ok (a machine with an NVIDIA driver); skips cleanly elsewhere.
 */
import { nvdecAvailable } from "../src/nvdec/available.ts";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../src/nvdec/decoder.ts";
import { demuxVideo } from "../src/media/demux.ts";
import { decodeVideo } from "../src/media/decode.ts";
import type { VideoPackets } from "../src/media/packets.ts";

const avail = nvdecAvailable();
const file = decodeURIComponent(
  new URL("../../shared/media/h264_nasa_bframes_aac.mp4", import.meta.url).pathname,
);
const ignore = !avail.ok;
if (!avail.ok) console.error(`nvdec bench skipped: ${avail.reason}`);

const annexB = ignore ? null : await demuxVideo(file, { bsf: "h264_mp4toannexb" }) as VideoPackets;
const plain = ignore ? null : await demuxVideo(file) as VideoPackets;

Deno.bench({ name: "cpu decodeVideo rgb24-planar", group: "decode", baseline: true, ignore }, async () => {
  await decodeVideo(plain!, { pixelFormat: "rgb24-planar" });
});

Deno.bench({ name: "nvdec decodeVideoNvdec rgb24-planar", group: "decode", ignore }, async () => {
  using frames = await decodeVideoNvdec(annexB!, { pixelFormat: "rgb24-planar" });
  void frames;
});

globalThis.addEventListener("unload", () => {
  if (!ignore) releaseDecoderNvdec();
});
