/**
 * Synthetic videos for tests (`src/prep/synthetic.ts`), made with an FFmpeg that has an encoder: the loaded one,
 * or, when it has none (the builds without encoders `scripts/ffmpeg/test_releases.sh` runs the tests against),
 * the system's, in a subprocess without `SLUICE_FFMPEG_LIBDIR`, as the system's ffmpeg CLI makes the other test
 * clips. The code under test reads them with the loaded FFmpeg either way.
 * @module
 */
import * as synthetic from "../../src/prep/synthetic.ts";
import { EncoderNotFoundError } from "../../src/errors.ts";

export { drawPattern, patternBits, readPattern } from "../../src/prep/synthetic.ts";

const here = new URL("../../src/prep/synthetic.ts", import.meta.url).href;

let canEncode: boolean | undefined;

/** Whether the loaded FFmpeg has an encoder for the synthetic videos. */
function loadedCanEncode(): boolean {
  if (canEncode === undefined) {
    try {
      synthetic.defaultEncoder();
      canEncode = true;
    } catch (e) {
      if (!(e instanceof EncoderNotFoundError)) throw e;
      canEncode = false;
    }
  }
  return canEncode;
}

/** Runs `synthetic[fn](...args)` in a fresh Deno on the system's FFmpeg; returns its JSON result. */
function onSystemFfmpeg(fn: "makeSyntheticDataset" | "encodeSyntheticVideo", args: unknown[]): unknown {
  const env = Deno.env.toObject();
  delete env.SLUICE_FFMPEG_LIBDIR;
  const script = `import * as s from ${JSON.stringify(here)};\n` +
    `console.log(JSON.stringify(s.${fn}(...${JSON.stringify(args)})));`;
  const out = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`${fn} on the system's FFmpeg failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** {@link synthetic.makeSyntheticDataset}, on an FFmpeg that can encode (see the module docs). */
export function makeSyntheticDataset(dir: string, opts: synthetic.SyntheticDatasetOptions): string[] {
  if (loadedCanEncode()) return synthetic.makeSyntheticDataset(dir, opts);
  const { onProgress, ...plain } = opts;
  const paths = onSystemFfmpeg("makeSyntheticDataset", [dir, plain]) as string[];
  onProgress?.(paths.length, paths.length);
  return paths;
}

/** {@link synthetic.encodeSyntheticVideo}, on an FFmpeg that can encode (see the module docs). */
export function encodeSyntheticVideo(path: string, opts: synthetic.SyntheticVideoOptions): string {
  if (loadedCanEncode()) return synthetic.encodeSyntheticVideo(path, opts);
  return onSystemFfmpeg("encodeSyntheticVideo", [path, opts]) as string;
}

/**
 * A synthetic dataset made once per test module, on first use, in a temporary directory removed when the
 * module's tests end (`unload`).
 * @param prefix the temporary directory's name prefix
 * @param opts what {@link makeSyntheticDataset} makes
 * @returns a function that gives the dataset's directory (making it the first time)
 */
export function lazyDataset(
  prefix: string,
  opts: synthetic.SyntheticDatasetOptions,
): () => Promise<string> {
  let dir: Promise<string> | undefined;
  return () =>
    dir ??= (async () => {
      const made = await Deno.makeTempDir({ prefix });
      makeSyntheticDataset(made, opts);
      globalThis.addEventListener("unload", () => Deno.removeSync(made, { recursive: true }));
      return made;
    })();
}
