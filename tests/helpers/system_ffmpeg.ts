/**
 * The system's FFmpeg 5.1 (Debian's) as tests lean on it: where its libraries are, and a folder that poses as a
 * release sluice has no table for.
 * @module
 */

/** Where Debian installs FFmpeg's libraries. */
export const LIB_DIR = "/usr/lib/x86_64-linux-gnu";

/**
 * Runs `fn` with a temporary folder whose libraries carry FFmpeg 9's sonames (`libavformat.so.63`,
 * `libavutil.so.61`) and are the system's 5.1: a release sluice knows no table for, named by what
 * `av_version_info` says. The folder is removed afterwards.
 */
export async function withFfmpeg9Dir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix });
  try {
    for (
      const [name, real] of [["libavformat.so.63", "libavformat.so.59"], [
        "libavutil.so.61",
        "libavutil.so.57",
      ]]
    ) {
      await Deno.symlink(`${LIB_DIR}/${real}`, `${dir}/${name}`);
    }
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
