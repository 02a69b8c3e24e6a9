/**
 * A fuzz worker process: `deno run -A child.ts <config.json>`, where the config holds the run's seed and
 * inputs. It reads case indices from stdin, one per line, and for each writes `S <index>` before running it and
 * `R <outcome JSON>` after, so that the parent can blame a crash, a hang or a memory blow-up on the case that
 * was running. Many cases per process; the parent replaces a process that dies.
 * `deno run -A child.ts --fixture <fixture.json>` runs one regression fixture (fixtures.ts) the same way.
 * @module
 */
import { type FuzzInput, itemSource, makeCase, packetsSource, runCase } from "./cases.ts";
import { fixtureCase } from "./fixtures.ts";

const enc = new TextEncoder();
const say = (line: string) => {
  const b = enc.encode(line + "\n");
  for (let at = 0; at < b.length;) at += Deno.stdout.writeSync(b.subarray(at));
};

if (Deno.args[0] === "--fixture") {
  const { fuzzCase, sources } = await fixtureCase(Deno.args[1]);
  say(`R ${JSON.stringify({ index: 0, kind: fuzzCase.kind, ...(await runCase(fuzzCase, sources)) })}`);
  Deno.exit(0);
}

const config = JSON.parse(await Deno.readTextFile(Deno.args[0])) as { seed: number; inputs: FuzzInput[] };
const cache = new Map<string, Uint8Array>();
const bytesOf = (i: FuzzInput) => {
  let b = cache.get(i.name);
  if (b === undefined) cache.set(i.name, b = Deno.readFileSync(i.path));
  return b;
};
const src = {
  inputs: config.inputs,
  bytesOf,
  packetsOf: packetsSource(bytesOf),
  itemOf: itemSource(bytesOf),
};

let rest = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  rest += chunk;
  let nl;
  while ((nl = rest.indexOf("\n")) >= 0) {
    const index = Number(rest.slice(0, nl));
    rest = rest.slice(nl + 1);
    say(`S ${index}`);
    const c = makeCase(config.seed, index, src);
    const outcome = await runCase(c, src);
    say(`R ${JSON.stringify({ index, kind: c.kind, ...outcome })}`);
  }
}
