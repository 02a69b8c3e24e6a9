/**
 * The live view against a small terminal model (auto-wrap at the width, the escapes LiveBlock uses): redraws
 * never pile up, log lines land whole above the block, nothing is left behind, at any width. The real terminal
 * check is live_tmux_test.ts.
 */
import assert from "node:assert/strict";
import { LiveBlock, type Out, ProgressBar, wrapLine } from "../../src/cli/tty.ts";

/** A terminal screen of `columns` × unbounded rows: prints with auto-wrap, `\r`, `\n`, CSI 2K / nF / 0J. */
class Screen implements Out {
  rows: string[] = [""];
  row = 0;
  col = 0;
  constructor(readonly columns: number) {}
  isTerminal(): boolean {
    return true;
  }
  writeSync(p: Uint8Array): number {
    const s = new TextDecoder().decode(p);
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      if (ch === "\x1b") {
        // deno-lint-ignore no-control-regex -- the model reads the escapes LiveBlock writes
        const m = /^\x1b\[(\d*)([A-Za-z])/.exec(s.slice(i))!;
        const n = m[1] === "" ? 0 : Number(m[1]);
        if (m[2] === "K") this.rows[this.row] = "";
        else if (m[2] === "F") [this.row, this.col] = [Math.max(0, this.row - n), 0];
        else if (m[2] === "J") {
          this.rows.splice(this.row + 1), this.rows[this.row] = this.rows[this.row].slice(0, this.col);
        } else throw new Error(`escape ${m[0]}`);
        i += m[0].length - 1;
      } else if (ch === "\r") this.col = 0;
      else if (ch === "\n") this.#down();
      else {
        if (this.col === this.columns) this.#down(); // auto-wrap
        const line = this.rows[this.row].padEnd(this.col);
        this.rows[this.row] = line.slice(0, this.col) + ch + line.slice(this.col + 1);
        this.col++;
      }
    }
    return p.length;
  }
  #down() {
    this.row++;
    this.col = 0;
    if (this.rows.length <= this.row) this.rows.push("");
  }
  /** The screen's text, trailing blank lines dropped. */
  text(): string[] {
    const r = this.rows.map((l) => l.trimEnd());
    while (r.length > 0 && r[r.length - 1] === "") r.pop();
    return r;
  }
}

const TABLE = (n: number) =>
  [`epoch ${n}  batches ${n * 10}`, "stage  " + "col ".repeat(30), "bottleneck: decode (input queue full)"]
    .join(
      "\n",
    );

for (const columns of [40, 80, 100, 200]) {
  Deno.test(`tty: a live block redrawn with log lines between draws leaves one block and whole lines (${columns} columns)`, () => {
    const screen = new Screen(columns);
    const live = new LiveBlock(screen, () => ({ columns, rows: 50 }));
    const logs: string[] = [];
    for (let n = 1; n <= 6; n++) {
      live.draw(TABLE(n));
      const line = `sluice pipeline: stage "demux" failed on /data/very/long/path/to/video_${n}.mp4: ` +
        "MediaError: demux window failed: no keyframe found at or before 0.4 s in stream 0";
      logs.push(line);
      live.log(line);
    }
    live.draw(TABLE(7));
    const rows = screen.text();
    // Every log line is on screen, whole (the terminal wrapped it: rejoin its rows), in order, once.
    const joined = rows.join("\n");
    let at = 0;
    for (const l of logs) {
      const wrapped = l.match(new RegExp(`.{1,${columns}}`, "g"))!.join("\n");
      const i = joined.indexOf(wrapped, at);
      assert.ok(i >= at, `log line missing or broken:\n${l}\nscreen:\n${joined}`);
      at = i + wrapped.length;
    }
    // One block, after the logs, none of its lines wrapped by the terminal, the verdict kept.
    assert.equal(rows.filter((r) => r.startsWith("epoch ")).length, 1, joined);
    const block = rows.slice(rows.findIndex((r) => r.startsWith("epoch ")));
    assert.equal(block[0], "epoch 7  batches 70");
    assert.ok(block.every((r) => r.length < columns), joined);
    assert.ok(block.join(" ").replace(/\s+/g, " ").includes("bottleneck: decode (input queue full)"));
    live.clear();
    assert.deepEqual(screen.text(), rows.slice(0, rows.length - block.length), "clear() erases the block");
  });
}

Deno.test("tty: a block taller than the terminal keeps its top and its last line", () => {
  const screen = new Screen(80);
  const live = new LiveBlock(screen, () => ({ columns: 80, rows: 6 }));
  const text = Array.from({ length: 12 }, (_, i) => `row ${i}`).join("\n");
  live.draw(text);
  live.draw(text);
  // 6 rows: 5 for the block (one kept for the cursor), the hidden ones counted.
  assert.deepEqual(screen.text(), ["row 0", "row 1", "row 2", "… 8 more lines", "row 11"]);
});

Deno.test("tty: off a terminal a live block draws nothing and log lines pass through plainly", () => {
  const out = {
    text: "",
    writeSync(p: Uint8Array) {
      this.text += new TextDecoder().decode(p);
      return p.length;
    },
    isTerminal: () => false,
  };
  const live = new LiveBlock(out);
  live.draw("table");
  live.log("one");
  live.draw("table");
  live.log("two");
  live.clear();
  assert.equal(out.text, "one\ntwo\n");
  const bar = new ProgressBar(out, "work", 4);
  bar.update(2);
  bar.finish(4);
  assert.match(out.text, /^one\ntwo\nwork \[#{30}\] 4\/4 \(100%\) in [\d.]+ s\n$/);
});

Deno.test("tty: wrapLine breaks at spaces, cuts words longer than the width, keeps the indent", () => {
  assert.deepEqual(wrapLine("short", 10), ["short"]);
  assert.deepEqual(wrapLine("one two three four", 9), ["one two", "three", "four"]);
  assert.deepEqual(wrapLine("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
  assert.deepEqual(wrapLine("  indented words here", 12), ["  indented", "  words here"]);
  for (const w of [1, 3, 7, 20]) {
    const line =
      "bottleneck: decode (input queue full 93% of the time, output starving; raise its concurrency)";
    const parts = wrapLine(line, w);
    assert.ok(parts.every((p) => p.length <= w), `${w}: ${JSON.stringify(parts)}`);
    assert.equal(parts.join(" ").replace(/\s+/g, ""), line.replace(/\s+/g, ""));
  }
});
