/** Shared set-up of the CLI tests: running `sluice` as a subprocess, small datasets with broken files. @module */

import assert from "node:assert/strict";
import { makeSyntheticDataset } from "../../src/prep/synthetic.ts";
import type { Out } from "../../src/cli/tty.ts";

/** The CLI's entry point. */
export const MAIN: string = new URL("../../src/cli/main.ts", import.meta.url).pathname;

/** Runs `sluice ARGS` in a fresh Deno (with `env` added to the environment); returns its status and output. */
export async function sluice(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
    env,
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * A dataset of `videos` synthetic videos (96×64, 1 s) in two classes under a new temp dir. With `broken`, two
 * more files in class_00: `garbage.mp4` (not a media file: indexing skips it) and `corrupt.mp4` (a valid
 * header over scrambled packets: its clips fail in demux or decode).
 */
export async function tinyDataset(opts: { videos?: number; broken?: boolean } = {}): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-cli-" });
  makeSyntheticDataset(dir, { videos: opts.videos ?? 4, classes: 2, durationSec: 1, width: 96, height: 64 });
  if (opts.broken) {
    await Deno.writeTextFile(`${dir}/class_00/garbage.mp4`, "not a video at all");
    await scramblePackets(`${dir}/class_00/video_0000.mp4`, `${dir}/class_00/corrupt.mp4`);
  }
  return dir;
}

/** Copies an MP4 (mdat before moov) with every byte of its packet data scrambled; the header stays valid. */
export async function scramblePackets(src: string, dst: string): Promise<void> {
  const bytes = await Deno.readFile(src);
  const text = new TextDecoder("latin1").decode(bytes);
  const mdat = text.indexOf("mdat"), moov = text.indexOf("moov");
  if (mdat < 0 || moov < mdat) throw new Error(`${src}: expected mdat before moov`);
  for (let i = mdat + 40; i < moov - 8; i++) bytes[i] = (bytes[i] * 7 + 13) & 255;
  await Deno.writeFile(dst, bytes);
}

/** An {@link Out} that keeps what is written; a terminal or not. */
export class Capture implements Out {
  text = "";
  readonly #tty: boolean;
  readonly #dec = new TextDecoder();
  constructor(tty = false) {
    this.#tty = tty;
  }
  writeSync(p: Uint8Array): number {
    this.text += this.#dec.decode(p);
    return p.length;
  }
  isTerminal(): boolean {
    return this.#tty;
  }
}

/** The version in deno.json, read independently of the CLI. */
export function denoJsonVersion(): string {
  return JSON.parse(Deno.readTextFileSync(new URL("../../deno.json", import.meta.url))).version;
}

/** A failure line says which file once, no internal Worker URL or "Object", times to the millisecond. */
export function assertFailureLine(line: string): void {
  const file = /failed on (\S+\.mp4):/.exec(line)?.[1] ?? /skipping (\S+\.mp4):/.exec(line)?.[1];
  assert.ok(file !== undefined, `no file named in: ${line}`);
  assert.equal(line.split(file).length, 2, `file named more than once: ${line}`);
  assert.doesNotMatch(line, /file:\/\/|Object|in worker/, line);
  assert.doesNotMatch(line, /\d\.\d{4,}/, `a time with more than millisecond digits: ${line}`);
}
