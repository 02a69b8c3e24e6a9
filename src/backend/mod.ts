/**
 * The subprocess backend: run part of a pipeline (typically sample → fetch → demux) in a child Deno process and
 * stream its items back over the child's stdout as framed binary, so the parent's threads stay free for decoding
 * and training. {@link spawnBackend} starts the child; the {@link BackendSource} it returns is a source for
 * `PipelineBuilder.addSource` (each iteration one epoch of the child's pipeline, the same child serving every
 * epoch), with credit-based flow control (at most `bufferSize` items wait in the parent), a liveness watch, and
 * every byte from the child checked before use. The wire format is {@link PROTOCOL_VERSION} of
 * `docs/protocol.md`.
 *
 * The backend module is any module whose export takes the JSON `args` and returns a `Pipeline`, a
 * `PipelineBuilder` or an `AsyncIterable`. Items may be `VideoPackets`, `Uint8Array`s, or JSON-compatible
 * values whose typed arrays travel as binary attachments. A failure in the child arrives in the parent with its
 * class (a `MediaError` stays a `MediaError`); a child that exits or stalls is a `BackendExitedError` or a
 * `BackendStalledError`.
 *
 * @example Demux in a child process, decode in this one
 * ```ts
 * import { spawnBackend } from "@sluice/sluice/backend";
 * import { PipelineBuilder } from "@sluice/sluice/pipeline";
 * import { decodeVideo, type VideoPackets } from "@sluice/sluice/media";
 *
 * // my_backend.ts:
 * //   import { demuxVideo } from "@sluice/sluice/media";
 * //   import { PipelineBuilder } from "@sluice/sluice/pipeline";
 * //   export function buildBackend(args: { files: string[] }) {
 * //     return new PipelineBuilder().addSource(args.files).pipe((f: string) => demuxVideo(f), { concurrency: 2 });
 * //   }
 * await using source = spawnBackend({
 *   module: new URL("./my_backend.ts", import.meta.url),
 *   export: "buildBackend",
 *   args: { files: ["a.mp4", "b.mp4"] },
 *   bufferSize: 3,
 * });
 * const pipeline = new PipelineBuilder()
 *   .addSource(source as AsyncIterable<VideoPackets>, { name: "backend", continuous: true })
 *   .pipe((p: VideoPackets) => decodeVideo(p, { width: 112, height: 112 }), { name: "decode" })
 *   .build({ signal: source.failure });
 * for await (const frames of pipeline) console.log(frames.source, frames.shape);
 * console.log(source.stats().items);
 * ```
 * @module
 */

export { BackendSource, spawnBackend, type SpawnBackendOptions } from "./spawn.ts";
export { PROTOCOL_VERSION } from "./protocol.ts";
