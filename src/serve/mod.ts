/**
 * Serving beyond `serveLoader` (which `@sluice/sluice` exports): a {@link LoaderFactory} that builds one loader
 * per client (its shard and first epoch, {@link LoaderRequest}), the counters a server reports per session
 * ({@link SessionStats}, the client's {@link DataWaitStats}, the slot ring's {@link SlotRingStats}) and for a
 * node server ({@link NodeStats}), and the protocol's version ({@link SERVE_PROTOCOL_VERSION}; the messages are
 * docs/serve_protocol.md).
 *
 * @example A factory: each client gets a loader of its own shard, from the epoch it asks for
 * ```ts
 * import { type LoaderFactory, makeSyntheticDataset, serveLoader, videoClassificationLoader } from "@sluice/sluice";
 *
 * const dir = await Deno.makeTempDir();
 * makeSyntheticDataset(`${dir}/data`, { videos: 4, classes: 2, durationSec: 2, width: 160, height: 120 });
 * const factory: LoaderFactory = (req) =>
 *   videoClassificationLoader({
 *     dataset: `${dir}/data`,
 *     batchSize: 2,
 *     clip: { numFrames: 4, width: 64, height: 64 },
 *     sampler: { rank: req.rank, worldSize: req.worldSize },
 *     firstEpoch: req.firstEpoch,
 *   });
 * await using server = await serveLoader(factory, { socket: `${dir}/sluice.sock` });
 * console.log(server.stats().sessions.length);
 * ```
 * @module
 */

export { SERVE_PROTOCOL_VERSION } from "./protocol.ts";
