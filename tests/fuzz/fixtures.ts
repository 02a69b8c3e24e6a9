/**
 * Regression fixtures of the fuzzer: every input that ever failed, in tests/fixtures/fuzz/. A fixture is
 * `<name>.json`:
 *
 * ```
 * { "what": "the bug it caught", "found": "how (seed/case, issue)",
 *   "kind": "probe" | "demux" | "decode" | "packets" | "clip" | "clip-packets",
 *   "input": "<name>.bin" | "shared:<file in ../shared/media>",
 *   "ops": [ ...mutate.ts ops, applied to the input (for "packets": to its serialized packets; for
 *            "clip-packets": to the packets blob of its first clip item) ],
 *   "probe"?: {...}, "demux"?: {...}, "decode"?: {...}, "clip"?: {...},
 *   "clipsFailedBy"?: { "<error class>(<rule>)": count } }
 * ```
 * `clipsFailedBy` (clip kinds): the clips its decode must fail, by class, where passing is not enough (a damaged
 * clip the loader once delivered must now be failed, not dropped some other way).
 * A `.bin` input holds the failing bytes themselves (already mutated; for "packets" the serialized packets, for
 * "clip-packets" the clip item's ITEM payload), so it needs no ops; it is used when the bytes derive from a generated clip and are small. Inputs derived
 * from the shared media stay out of the repository: the fixture names the file and the ops, and is skipped
 * where the shared media is absent.
 * @module
 */
import { SHARED_MEDIA_DIR } from "../helpers/media.ts";
import { type CaseSources, type FuzzCase, type FuzzInput, itemSource, packetsSource } from "./cases.ts";
import type { Op } from "./mutate.ts";

/** The directory of the fixtures. */
export const FIXTURE_DIR: string = decodeURIComponent(new URL("../fixtures/fuzz/", import.meta.url).pathname);

/** A fixture file's contents. */
export interface Fixture {
  what: string;
  found: string;
  kind: FuzzCase["kind"];
  input: string;
  ops: Op[];
  probe?: FuzzCase["probe"];
  demux?: FuzzCase["demux"];
  decode?: FuzzCase["decode"];
  clip?: FuzzCase["clip"];
  clipsFailedBy?: Record<string, number>;
}

/** Every fixture: its path and contents, sorted by name. */
export function listFixtures(): { path: string; fixture: Fixture }[] {
  return [...Deno.readDirSync(FIXTURE_DIR)]
    .filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name)
    .sort()
    .map((n) => ({
      path: `${FIXTURE_DIR}${n}`,
      fixture: JSON.parse(Deno.readTextFileSync(`${FIXTURE_DIR}${n}`)),
    }));
}

/** The input file a fixture needs, or null when it is missing here (shared media absent). */
export function fixtureInputPath(f: Fixture, fixturePath: string): string | null {
  const path = f.input.startsWith("shared:")
    ? `${SHARED_MEDIA_DIR}${f.input.slice(7)}`
    : fixturePath.replace(/[^/]*$/, f.input);
  try {
    Deno.statSync(path);
    return path;
  } catch {
    return null;
  }
}

/** A fixture as a case and its sources, ready for `runCase`. */
export async function fixtureCase(path: string): Promise<{ fuzzCase: FuzzCase; sources: CaseSources }> {
  const f = JSON.parse(await Deno.readTextFile(path)) as Fixture;
  const inputPath = fixtureInputPath(f, path);
  if (inputPath === null) throw new Error(`${path}: input ${f.input} is missing`);
  const input: FuzzInput = { name: f.input, path: inputPath, durationSec: 1 };
  const bytesOf = () => Deno.readFileSync(inputPath);
  // A .bin of a "packets" ("clip-packets") fixture holds the serialized packets (the item) themselves.
  const bin = f.input.endsWith(".bin");
  const packetsOf = bin ? bytesOf : packetsSource(bytesOf);
  const itemOf = bin ? bytesOf : itemSource(bytesOf);
  const fuzzCase: FuzzCase = {
    seed: 0,
    index: 0,
    input: f.input,
    kind: f.kind,
    asFile: false,
    ops: f.ops,
    ...(f.probe ? { probe: f.probe } : {}),
    ...(f.demux ? { demux: f.demux } : {}),
    ...(f.decode ? { decode: f.decode } : {}),
    ...(f.clip ? { clip: f.clip } : {}),
  };
  return { fuzzCase, sources: { inputs: [input], bytesOf, packetsOf, itemOf } };
}

/**
 * `deno run -A tests/fuzz/fixtures.ts <saved failure .json> <name> "<what it caught>"`: turns a failure the
 * fuzzer saved (run.ts `--save`) into a fixture: its bytes as `<name>.bin` when they derive from a generated
 * clip and are small, else a recipe naming the shared file and the ops.
 */
if (import.meta.main) {
  const [saved, name, what] = Deno.args;
  const s = JSON.parse(await Deno.readTextFile(saved));
  const c = s.fuzzCase as FuzzCase;
  const bin = saved.replace(/\.json$/, ".bin");
  const small = Deno.statSync(bin).size <= 64 * 1024;
  const fixture: Fixture = {
    what,
    found: `fuzz seed ${c.seed} case ${c.index} (${s.kind}: ${String(s.detail).split("\n")[0]})`,
    kind: c.kind,
    input: c.input.startsWith("clip:") && small ? `${name}.bin` : c.input,
    ops: c.input.startsWith("clip:") && small ? [] : c.ops,
    ...(c.probe ? { probe: c.probe } : {}),
    ...(c.demux ? { demux: c.demux } : {}),
    ...(c.decode ? { decode: c.decode } : {}),
    ...(c.clip ? { clip: c.clip } : {}),
  };
  if (fixture.input.startsWith("clip:")) throw new Error(`${bin} is too big for a fixture`);
  if (fixture.input.endsWith(".bin")) await Deno.copyFile(bin, `${FIXTURE_DIR}${name}.bin`);
  await Deno.writeTextFile(`${FIXTURE_DIR}${name}.json`, JSON.stringify(fixture, null, 2) + "\n");
  console.log(`wrote ${FIXTURE_DIR}${name}.json`);
}
