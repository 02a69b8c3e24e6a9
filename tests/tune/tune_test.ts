import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { readTrials, tune, type TuneOptions } from "../../src/tune/tune.ts";
import type { TrialRequest } from "../../src/tune/runner.ts";
import { int } from "../../src/tune/space.ts";
import { harnessStages, ModelRunner } from "./knee_model.ts";

const space = {
  demuxConcurrency: int(1, 16, { stage: "demux" }),
  fetchConcurrency: int(1, 32, { stage: "fetch" }),
  decodeConcurrency: int(1, 16, { stage: "decode" }),
};
const start = { demuxConcurrency: 8, fetchConcurrency: 8, decodeConcurrency: 8 };
const model = () => new ModelRunner({ stages: harnessStages(), noise: 0.02, seed: 4, ceiling: 400 });

function options(
  out: string,
  runner: ModelRunner | { run(r: TrialRequest): ReturnType<ModelRunner["run"]> },
) {
  return {
    module: "knee_model.ts",
    out,
    runner,
    space,
    start,
    budgetSec: 180,
    measureSec: 3,
    warmupSec: 1,
  } satisfies TuneOptions;
}

/** Every element of a parsed XML tree with `name`, depth first. */
function elements(
  node: unknown,
  name: string,
  out: Record<string, unknown>[] = [],
): Record<string, unknown>[] {
  if (Array.isArray(node)) { for (const n of node) elements(n, name, out); }
  else if (node !== null && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === name) { for (const x of [v].flat()) out.push(x as Record<string, unknown>); }
      elements(v, name, out);
    }
  }
  return out;
}

function parseSvg(text: string): unknown {
  assertEquals(XMLValidator.validate(text), true);
  const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "@" }).parse(text);
  assertEquals(doc.svg["@xmlns"], "http://www.w3.org/2000/svg");
  return doc;
}

/** The data labels Vega gives each point mark (the `aria-label` of its symbol). */
function pointLabels(doc: unknown): string[] {
  return elements(doc, "path").flatMap((p) =>
    p["@aria-roledescription"] === "point" ? [String(p["@aria-label"])] : []
  );
}

Deno.test("tune writes trials.jsonl, report.md and SVG plots that parse and hold every series", async () => {
  const out = await Deno.makeTempDir();
  try {
    const { result, files } = await tune(options(out, model()));
    assertEquals(files.sort(), [
      "best.json",
      "curve-decode.svg",
      "curve-demux.svg",
      "curve-fetch.svg",
      "report.md",
      "search.json",
      "trials.jsonl",
      "trials.svg",
    ]);
    const best = JSON.parse(await Deno.readTextFile(`${out}/best.json`));
    assertEquals(best.config, result.best!.config);
    assertEquals(best.measurements, result.best!.samples);
    const records = await readTrials(`${out}/trials.jsonl`);
    assertEquals(records.length, result.trials.length);
    for (const r of records) {
      assert(["ok", "failed"].includes(r.status));
      assertEquals(Object.keys(r.config).sort(), Object.keys(space).sort());
      if (r.status === "ok") assert(r.metrics!.samplesPerSec > 0);
    }

    // trials.svg: one point per trial
    const trials = parseSvg(await Deno.readTextFile(`${out}/trials.svg`));
    const points = pointLabels(trials).filter((l) => l.startsWith("trial: "));
    assertEquals(points.length, result.trials.length);
    assertEquals(
      new Set(points.map((l) => Number(l.match(/^trial: (\d+)/)![1]))),
      new Set(result.trials.map((t) => t.id)),
    );
    const ceiling = `ceiling ${Math.round(result.ceiling!)}`;
    assert(elements(trials, "text").some((t) => t["#text"] === ceiling), ceiling);

    // one curve per stage, a point per concurrency tried, in both panels
    for (const c of result.curves) {
      const doc = parseSvg(await Deno.readTextFile(`${out}/curve-${c.stage}.svg`));
      const labels = pointLabels(doc);
      for (const p of c.points) {
        const at = (l: string) => l.startsWith(`${c.stage} concurrency: ${p.concurrency};`);
        assert(labels.some((l) => at(l) && l.includes("per-item latency")), `${c.stage} ${p.concurrency}`);
        assert(
          labels.some((l) => at(l) && l.includes("series: pipeline samples/s")),
          `${c.stage} ${p.concurrency}`,
        );
        assert(
          labels.some((l) => at(l) && l.includes(`series: ${c.stage} items/s`)),
          `${c.stage} ${p.concurrency}`,
        );
      }
    }

    const report = await Deno.readTextFile(`${out}/report.md`);
    assert(report.includes("| demux concurrency | 8 | **3** |"), report);
    for (const m of result.kept) {
      const line = report.split("\n").find((l) =>
        l.startsWith(
          `- + ${
            m.param === "demuxConcurrency" ? "demux" : m.param === "fetchConcurrency" ? "fetch" : "decode"
          } concurrency ${m.to} (from ${m.from}): `,
        )
      );
      assert(line, `kept change ${m.param} ${m.from} → ${m.to}`);
      assert(/: [\d,]+(\.\d)? → [\d,]+(\.\d)? samples\/s/.test(line), line);
    }
    assert(report.includes("## What did not help"));
    assert(report.includes(`Ceiling: **${Math.round(result.ceiling!)} samples/s**`), report);
    const share = Math.round(best.samplesPerSec / result.ceiling! * 100);
    assert(report.includes(`reaches ${share}% of it`), report);
    assert(report.includes("![contention curve of demux](curve-demux.svg)"));
    assert(report.includes("![throughput per trial](trials.svg)"));
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("--resume continues a killed search without rerunning finished trials, to the same result", async () => {
  const full = await Deno.makeTempDir(), killed = await Deno.makeTempDir();
  try {
    const reference = (await tune(options(full, model()))).result;

    // "kill" the search during its 12th trial: the runner throws, as a dead process would stop everything
    const first = model();
    let calls = 0;
    const dying = {
      run: (r: TrialRequest) => ++calls === 12 ? Promise.reject(new Error("killed")) : first.run(r),
    };
    await assert.rejects(tune(options(killed, dying)), /killed/);
    assertEquals((await readTrials(`${killed}/trials.jsonl`)).length, 11);
    // a kill during a write leaves half a line: it is dropped
    await Deno.writeTextFile(`${killed}/trials.jsonl`, '{"id":12,"pha', { append: true });

    const second = model();
    const resumed = (await tune({ ...options(killed, second), resume: true })).result;
    assertEquals(second.requests.length, reference.trials.length - 11); // the 11 recorded trials were not rerun
    assertEquals(second.requests.map((r) => r.id)[0], 12);
    assertEquals(resumed.trials.map((t) => t.key), reference.trials.map((t) => t.key));
    assertEquals(resumed.best!.config, reference.best!.config);
    assertEquals(resumed.spentSec, reference.spentSec); // the recorded trials' time counts toward the budget
    assertEquals((await readTrials(`${killed}/trials.jsonl`)).length, reference.trials.length);
  } finally {
    await Deno.remove(full, { recursive: true });
    await Deno.remove(killed, { recursive: true });
  }
});

Deno.test("a directory that holds a search is not overwritten; resume needs one", async () => {
  const out = await Deno.makeTempDir();
  try {
    await assert.rejects(tune({ ...options(out, model()), resume: true }), /cannot resume: .*search\.json/);
    await tune({ ...options(out, model()), maxTrials: 3 });
    await assert.rejects(tune(options(out, model())), /already holds a search/);
    await assert.rejects(
      tune({ ...options(out, model()), module: "other.ts", resume: true }),
      /holds a search of .*knee_model\.ts, not of .*other\.ts/,
    );
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("the report says when noise hid differences, and only then", async () => {
  for (const [noise, warned] of [[0.3, true], [0.02, false]] as const) {
    const out = await Deno.makeTempDir();
    try {
      const runner = new ModelRunner({ stages: harnessStages(), noise, seed: 4, ceiling: 400 });
      const { result } = await tune({ ...options(out, runner), plots: false });
      const report = await Deno.readTextFile(`${out}/report.md`);
      assertEquals(report.includes("**The measurements were noisy**"), warned);
      assertEquals(result.threshold > 0.1, warned);
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  }
});
