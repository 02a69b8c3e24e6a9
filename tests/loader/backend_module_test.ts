import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { releasingSpent } from "../../src/loader/backend_module.ts";
import type { ClipPackets } from "../../src/loader/clip_worker.ts";
import type { ClipItem } from "../../src/loader/clip_steps.ts";

function packets(x: ClipItem): NonNullable<ClipPackets["packets"]> {
  assert.ok("packets" in x && x.packets !== undefined, "a clip with packets");
  return x.packets;
}

function items(n: number): ClipPackets[] {
  return Array.from(
    { length: n },
    (_, i) => ({ meta: { position: i }, packets: { data: new Uint8Array(1000 + i) } }),
  )
    .map((x) => x as unknown as ClipPackets);
}

Deno.test("releasingSpent: asking for the next item frees the previous one's packets; the end frees the last", async () => {
  const src = items(3);
  const served = releasingSpent(new PipelineBuilder().addSource(src).addSink({ bufferSize: 1 }).build());
  try {
    const it = served[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    assert.equal(packets(first.value).data.length, 1000, "the item being served is intact");
    await it.next();
    assert.equal(src[0].packets!.data.length, 0, "item 0 was freed when item 1 was asked for");
    assert.equal(src[1].packets!.data.length, 1001);
    await it.next();
    assert.equal((await it.next()).done, true);
    assert.deepEqual(src.map((x) => x.packets!.data.length), [0, 0, 0]);
    assert.equal(served.stats().consumed, 3);
  } finally {
    await served.stop();
  }
});

Deno.test("releasingSpent: leaving early frees the item in hand", async () => {
  const src = items(4);
  const served = releasingSpent(
    new PipelineBuilder().addSource(src, { continuous: true }).addSink({ bufferSize: 1 }).build(),
  );
  try {
    for await (const x of served) {
      assert.equal(packets(x).data.length, 1000);
      break;
    }
    assert.equal(src[0].packets!.data.length, 0);
  } finally {
    await served.stop();
  }
});
