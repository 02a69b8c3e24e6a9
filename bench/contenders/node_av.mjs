// Contender: node-av (npm; FFmpeg bindings for Node.js with a prebuilt FFmpeg) in worker threads.
//
// The main thread hands clips to `--threads` worker threads (2 clips in flight per thread) and assembles their
// frames, in list order, into [B, T, H, W, 3] batches. Each worker opens the clip's video with node-av's
// low-level synchronous API (FormatContext, CodecContext, SoftwareScaleContext: no async worker hop per call,
// its fastest path), seeks backward to the keyframe at or before the start (av_seek_frame on the video stream,
// in its time base; a landing after the start is retried from a second earlier), decodes forward and scales, as
// sluice does (docs/clips.md), the frame on screen at the start (the latest presented at or before it, kept in a
// second Frame until the next one shows it is) and the frames presented after it, `numFrames` in all, to
// width x height RGB24, bilinear. The decoder keeps FFmpeg's
// default of one thread per decoder, so `--threads` decoders share the cores, as sluice's Workers do.
// High-level `Demuxer.seek` is avoided: with a stream index it passes microseconds where FFmpeg expects the
// stream's time base (see /work/shared/NOTES.md).
//
// Contract and measurement: bench/contenders/harness.ts. Install (benchmark only, not a sluice dependency):
// `SKIP_FFMPEG=true npm install --prefix bench/contenders`.
// Run: node bench/contenders/node_av.mjs --clips FILE --mode time|verify [--out DIR] [--threads 2]

import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import {
  AV_PIX_FMT_RGB24,
  AVERROR_EOF,
  AVMEDIA_TYPE_VIDEO,
  AVSEEK_FLAG_BACKWARD,
  Codec,
  CodecContext,
  FormatContext,
  Frame,
  Packet,
  SoftwareScaleContext,
  SWS_BILINEAR,
} from "node-av";

function check(ret, what) {
  if (ret < 0) throw new Error(`${what} failed: ${ret}`);
  return ret;
}

/** Decodes one clip: { data (Uint8Array, T*H*W*3), pts (seconds), decoded (frames) }. */
function decodeClip(path, start, numFrames, width, height) {
  const fmt = new FormatContext();
  const packet = new Packet();
  let frame = new Frame();
  let held = new Frame(); // the latest frame presented at or before the start
  const rgb = new Frame();
  const sws = new SoftwareScaleContext();
  const dec = new CodecContext();
  let decoded = 0;
  try {
    check(fmt.openInputSync(path), `open ${path}`);
    check(fmt.findStreamInfoSync(), "find stream info");
    const si = check(fmt.findBestStream(AVMEDIA_TYPE_VIDEO), "find video stream");
    const stream = fmt.streams[si];
    const tb = stream.timeBase;
    const par = stream.codecpar;
    dec.allocContext3(Codec.findDecoder(par.codecId));
    check(dec.parametersToContext(par), "parameters to context");
    dec.pktTimebase = tb;
    check(dec.open2Sync(), "open decoder");
    packet.alloc();
    frame.alloc();
    held.alloc();
    rgb.alloc();
    rgb.format = AV_PIX_FMT_RGB24;
    rgb.width = width;
    rgb.height = height;
    check(rgb.getBuffer(), "frame buffer");
    const frameBytes = width * height * 3;
    let target = start;
    for (;;) {
      const out = new Uint8Array(numFrames * frameBytes);
      const pts = [];
      let landed = null, retry = false, eof = false, swsFor = "", heldT = null;
      const ts = BigInt(Math.max(0, Math.floor(target * tb.den / tb.num)));
      check(fmt.seekFrameSync(si, ts, AVSEEK_FLAG_BACKWARD), "seek");
      dec.flushBuffers();
      // Returns true when the clip is complete (or must be retried).
      const drain = () => {
        for (;;) {
          const r = dec.receiveFrameSync(frame);
          if (r < 0) {
            if (r === AVERROR_EOF) eof = true;
            return false;
          }
          decoded++;
          const t = Number(frame.bestEffortTimestamp) * tb.num / tb.den;
          if (landed === null) {
            landed = t;
            if (t > start && target > 0) {
              retry = true;
              return true;
            }
          }
          if (t <= start) {
            [held, frame] = [frame, held]; // keep it; the decoder writes the next frame into the other one
            heldT = t;
            continue;
          }
          if (heldT !== null) {
            emit(held, heldT);
            heldT = null;
          }
          if (pts.length < numFrames) emit(frame, t);
          if (pts.length === numFrames) return true;
        }
      };
      const emit = (f, t) => {
        const key = `${f.width}x${f.height}:${f.format}`;
        if (key !== swsFor) {
          sws.getContext(f.width, f.height, f.format, width, height, AV_PIX_FMT_RGB24, SWS_BILINEAR);
          swsFor = key;
        }
        check(sws.scaleFrameSync(rgb, f), "scale");
        out.set(rgb.toBuffer(), pts.length * frameBytes);
        pts.push(t);
      };
      let done = false;
      while (!done && !eof) {
        const r = fmt.readFrameSync(packet);
        if (r < 0) {
          dec.sendPacketSync(null);
          done = drain() || true;
          break;
        }
        if (packet.streamIndex === si) {
          dec.sendPacketSync(packet);
          done = drain();
        }
        packet.unref();
      }
      if (retry) {
        target = Math.max(0, Math.min(target, landed) - 1);
        continue;
      }
      if (heldT !== null && pts.length < numFrames) emit(held, heldT); // the stream ended with it on screen
      if (pts.length === 0) throw new Error(`${path}: no frame at or after ${start}`);
      for (let k = pts.length; k < numFrames; k++) { // the video ends inside the window: repeat the last frame
        out.copyWithin(k * frameBytes, (k - 1) * frameBytes, k * frameBytes);
        pts.push(pts[k - 1]);
      }
      return { data: out, pts, decoded };
    }
  } finally {
    sws.freeContext();
    dec.freeContext();
    rgb.free();
    frame.free();
    held.free();
    packet.free();
    fmt.closeInputSync();
  }
}

if (!isMainThread) {
  const { numFrames, width, height } = workerData;
  parentPort.on("message", ({ i, path, start }) => {
    try {
      const r = decodeClip(path, start, numFrames, width, height);
      parentPort.postMessage({ i, data: r.data, pts: r.pts, decoded: r.decoded }, [r.data.buffer]);
    } catch (e) {
      parentPort.postMessage({ i, error: String(e?.stack ?? e) });
    }
  });
} else {
  const { values } = parseArgs({
    options: {
      clips: { type: "string" },
      mode: { type: "string", default: "time" },
      out: { type: "string" },
      threads: { type: "string", default: "2" },
    },
  });
  const list = JSON.parse(readFileSync(values.clips, "utf8"));
  const { numFrames: T, width, height, batchSize } = list;
  const clipBytes = T * width * height * 3;
  const workers = Array.from(
    { length: Number(values.threads) },
    () => new Worker(new URL(import.meta.url), { workerData: { numFrames: T, width, height } }),
  );

  /** Decodes `clips`, calling `onBatch(batch, clips, pts)` for each batch of `batchSize`, in list order. */
  const runPass = (clips, onBatch) =>
    new Promise((resolve, reject) => {
      const results = new Map();
      let next = 0, emitted = 0, decoded = 0;
      let batch = new Uint8Array(Math.min(batchSize, clips.length) * clipBytes), inBatch = [];
      const feed = (w) => {
        if (next < clips.length) {
          const i = next++;
          w.postMessage({ i, path: clips[i].path, start: clips[i].start });
        }
      };
      const flush = (force) => {
        while (results.has(emitted)) {
          const r = results.get(emitted);
          results.delete(emitted);
          batch.set(r.data, inBatch.length * clipBytes);
          inBatch.push(r);
          decoded += r.decoded;
          emitted++;
          if (inBatch.length === batchSize || emitted === clips.length) {
            onBatch(batch.subarray(0, inBatch.length * clipBytes), inBatch);
            batch = new Uint8Array(Math.min(batchSize, clips.length - emitted) * clipBytes || 1);
            inBatch = [];
          }
        }
        if (emitted === clips.length || force) {
          for (const w of workers) w.removeAllListeners("message");
          resolve({ clips: emitted, decoded });
        }
      };
      for (const w of workers) {
        w.on("message", (m) => {
          if (m.error) {
            for (const x of workers) x.removeAllListeners("message");
            reject(new Error(m.error));
            return;
          }
          results.set(m.i, m);
          feed(w);
          flush(false);
        });
        feed(w);
        feed(w);
      }
    });

  try {
    if (values.mode === "verify") {
      const frames = [], pts = [];
      await runPass(list.passes[0], (b, rs) => {
        frames.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
        for (const r of rs) pts.push(r.pts);
      });
      writeFileSync(`${values.out}/frames.bin`, Buffer.concat(frames));
      writeFileSync(`${values.out}/pts.json`, JSON.stringify(pts));
    } else {
      for (const [p, clips] of list.passes.entries()) {
        console.log(JSON.stringify({ event: "start", pass: p }));
        const t0 = performance.now();
        const r = await runPass(clips, () => {});
        const wall = (performance.now() - t0) / 1000;
        console.log(
          JSON.stringify({
            event: "end",
            pass: p,
            wall,
            clips: r.clips,
            frames: r.clips * T,
            decoded: r.decoded,
          }),
        );
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
