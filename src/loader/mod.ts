/**
 * The loader's building blocks, for what the root (`@sluice/sluice`) does not need: planning a loader without
 * opening it ({@link planLoader}: the dataset indexed and the epoch's clips laid out, what `sluice load --plan`
 * prints), the option table every door reads ({@link LOADER_OPTIONS}) and the kinds of its entries, the door
 * itself ({@link resolveLoaderOptions}: the options checked and defaulted once, what `planLoader` takes), the
 * clip spec, the memory and profile reports, and the contact sheets a preview draws.
 *
 * @example Plan a loader, then draw its first batch as a contact sheet
 * ```ts
 * import { makeSyntheticDataset, videoClassificationLoader } from "@sluice/sluice";
 * import { contactSheet, planLoader, resolveLoaderOptions } from "@sluice/sluice/loader";
 *
 * const dir = await Deno.makeTempDir();
 * makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 2, width: 160, height: 120 });
 * const options = { dataset: dir, batchSize: 4, clip: { numFrames: 4, width: 64, height: 64 } };
 * const plan = await planLoader(resolveLoaderOptions(options));
 * console.log(plan.dataset.items.length, plan.indexFailures, plan.spec.numFrames);
 * await using loader = await videoClassificationLoader(options);
 * for await (const batch of loader) {
 *   await Deno.writeFile(`${dir}/sheet.png`, contactSheet([batch]).png);
 *   batch[Symbol.dispose]();
 *   break;
 * }
 * ```
 * @module
 */

export { type LoaderPlan, planLoader } from "./loader.ts";
export { LOADER_OPTIONS, type ResolvedLoaderOptions, resolveLoaderOptions } from "./loader_options.ts";
export type { FrontArgs } from "./front/front.ts";
export { contactSheet, previewHtml, type SheetOptions } from "./preview.ts";
// The kinds of entry of LOADER_OPTIONS (and of the other option tables): options declared once
export type {
  BooleanOption,
  CustomOption,
  EitherOption,
  EnumOption,
  GroupOption,
  IntegerOption,
  NumberOption,
  NumbersOption,
  OptionBase,
  OptionSpec,
  OptionTable,
  StringOption,
  Vocabulary,
} from "../options.ts";
