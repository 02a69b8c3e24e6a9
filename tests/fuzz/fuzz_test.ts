/**
 * The fuzzer in CI (see run.ts): 6,000 seeded cases (`SLUICE_FUZZ_CASES`, `SLUICE_FUZZ_SEED` to change them)
 * of mutated real and generated media through probe, demux, decode and the serialized packet form, and through
 * the loader's clip path (from mutated files, and from damaged serialized packet sets as the subprocess backend
 * sends them), each in a child process with a deadline and a memory cap; and every regression fixture of
 * tests/fixtures/fuzz/, each in a process of its own. A crash, hang, memory blow-up, untyped error or broken
 * invariant (frames delivered out of presentation order or out of their window among them) fails the test and
 * prints the command that replays it.
 */
import assert from "node:assert/strict";
import { hasFfmpegCliSync, sharedMediaAvailable } from "../helpers/media.ts";
import { formatSummary, rssBytes, runFuzz } from "./run.ts";
import type { FuzzCase, Outcome } from "./cases.ts";
import { fixtureInputPath, listFixtures } from "./fixtures.ts";
import { knownBug } from "./known.ts";

const CASES = Number(Deno.env.get("SLUICE_FUZZ_CASES") ?? 6000);
/** A fixed seed keeps CI reproducible; the long runs (`deno task fuzz`) draw fresh ones. */
const SEED = Number(Deno.env.get("SLUICE_FUZZ_SEED") ?? 16);

Deno.test({
  name: `fuzz: ${CASES} mutated inputs end in frames or a typed SluiceError (seed ${SEED})`,
  ignore: !hasFfmpegCliSync() && !sharedMediaAvailable(),
  async fn() {
    const lines: string[] = [];
    const summary = await runFuzz({
      seed: SEED,
      indices: Array.from({ length: CASES }, (_, i) => i),
      workers: 2,
      log: (l) => lines.push(l),
    });
    console.log(formatSummary(summary));
    assert.equal(summary.cases, CASES);
    assert.equal(summary.ok + summary.typed + summary.failures.length + summary.known.length, CASES);
    assert.deepEqual(summary.failures, [], `${formatSummary(summary)}\n${lines.join("\n")}`);
    // The mutations must leave work for the decoders: a run where nothing decodes tests only the parsers.
    assert.ok((summary.byKind["decode ok"] ?? 0) > CASES / 20, JSON.stringify(summary.byKind));
    // ...and clips for the loader's delivery check: every one of them was in order and in its window.
    assert.ok(summary.clips.delivered > CASES / 20, JSON.stringify(summary.clips));
  },
});

const CHILD = new URL("./child.ts", import.meta.url).pathname;
/** Fixtures are small inputs: a process of theirs that grows past this has blown up. */
const FIXTURE_MEMORY = 1024 * 1024 * 1024;
const FIXTURE_DEADLINE_MS = 60_000;

for (const { path, fixture } of listFixtures()) {
  const name = path.replace(/^.*\//, "");
  const input = fixtureInputPath(fixture, path);
  Deno.test({
    name: `fuzz fixture ${name}: ${fixture.what.slice(0, 90)}`,
    ignore: input === null,
    async fn() {
      const proc = new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "-A", CHILD, "--fixture", path],
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      let failure: "memory" | "hang" | undefined;
      const t0 = performance.now();
      const watch = setInterval(() => {
        if (rssBytes(proc.pid) > FIXTURE_MEMORY) failure = "memory";
        else if (performance.now() - t0 > FIXTURE_DEADLINE_MS) failure = "hang";
        else return;
        clearInterval(watch);
        proc.kill("SIGKILL");
      }, 50);
      const out = await proc.output();
      clearInterval(watch);
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      const r: { status: string; detail: string; clips?: Outcome["clips"] } = failure !== undefined
        ? { status: failure, detail: "" }
        : out.signal !== null || out.code !== 0
        ? { status: "crash", detail: `${out.signal ?? `exit ${out.code}`}: ${stderr}` }
        : JSON.parse(stdout.trim().replace(/^R /, "")) as Outcome;
      const known = knownBug(r.detail, r.status, { decode: fixture.decode } as FuzzCase);
      if (known !== undefined) {
        console.log(`  still an open bug (${r.status}): ${known.issue}`);
        return;
      }
      assert.ok(r.status === "ok" || r.status === "typed", `${r.status}: ${r.detail}`);
      if (fixture.clipsFailedBy) assert.deepEqual(r.clips?.failedBy, fixture.clipsFailedBy, r.detail);
    },
  });
}
