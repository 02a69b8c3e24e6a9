/**
 * A session's answers about its loader that are no part of the stream: the loader's state at the client's
 * place (`state`), and a contact sheet of an epoch written to a file (`preview`).
 * @module
 */

import type { VideoClassificationLoader } from "../loader/loader.ts";
import type { LoaderState } from "../loader/loader_state.ts";
import { previewLoader } from "../loader/preview.ts";
import type { PreviewMessage, PreviewRequest, StateRequest } from "./protocol.ts";

/**
 * `loader`'s state at the client's place: just after the batch whose first clip is `msg.after`, or at batch
 * `msg.batches` of `msg.epoch` (the loader itself runs ahead of the client by the batches in flight).
 */
export function stateAt(loader: VideoClassificationLoader, msg: StateRequest): LoaderState {
  if (msg.after !== undefined) return loader.stateDict([msg.after]);
  return { ...loader.stateDict(), epoch: msg.epoch!, batches: msg.batches! };
}

/**
 * Writes the contact sheet (or, with `msg.html`, the page) of `loader`'s next epoch's first `msg.batches`
 * batches to `msg.path`, and closes `loader` (one built for it: drawing runs its epoch).
 */
export async function writePreview(
  loader: VideoClassificationLoader,
  msg: PreviewRequest,
): Promise<PreviewMessage> {
  let sheet;
  try {
    sheet = await previewLoader(loader, { batches: msg.batches, html: msg.html });
  } finally {
    await loader.close();
  }
  if (msg.html) await Deno.writeTextFile(msg.path, sheet.html!);
  else await Deno.writeFile(msg.path, sheet.png);
  const { width, height } = sheet.image;
  return { type: "preview", path: msg.path, clips: sheet.clips.length, width, height };
}
