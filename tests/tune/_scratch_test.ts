import { search } from "../../src/tune/search.ts";
import { int } from "../../src/tune/space.ts";
import { writePlots } from "../../src/tune/plots.ts";
import { ModelRunner, harnessStages } from "./knee_model.ts";
Deno.test("scratch", async () => {
const space = { demuxConcurrency: int(1, 16, { stage: "demux" }), fetchConcurrency: int(1, 32, { stage: "fetch" }), decodeConcurrency: int(1, 16, { stage: "decode" }) };
  const runner = new ModelRunner({ stages: harnessStages(), noise: 0.02, seed: 1, ceiling: 400 });
  const r = await search(space, { demuxConcurrency: 8, fetchConcurrency: 8, decodeConcurrency: 8 }, runner, { budgetSec: 180, measureSec: 3, warmupSec: 1 });
  console.log(await writePlots("/tmp/tunex", r));
});
