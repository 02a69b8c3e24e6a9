/**
 * `sluice load`'s live view in a real terminal: tmux panes of 80, 100 and 200 columns, read back with
 * `capture-pane` (scrollback included, wrapped rows joined) while it runs and after Ctrl-C. Checks that the
 * view fits the width (no row wrapped, the bottleneck line kept), that redraws never pile up (one view on the
 * whole screen and scrollback), that failure lines land whole above it, and that Ctrl-C (sent to the pane's
 * process group, backend child included) prints the summary so far and exits 130.
 */
import assert from "node:assert/strict";
import { assertFailureLine, MAIN, tinyDataset } from "./helpers.ts";

const hasTmux = (() => {
  try {
    return new Deno.Command("tmux", { args: ["-V"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
})();
if (!hasTmux) {
  console.error("live_tmux_test: tmux is not installed (scripts/setup.sh --dev installs it): skipped");
}

class Tmux {
  readonly #socket = `sluice-test-${Deno.pid}-${Math.random().toString(36).slice(2)}`;

  async run(...args: string[]): Promise<string> {
    const out = await new Deno.Command("tmux", { args: ["-L", this.#socket, "-f", "/dev/null", ...args] })
      .output();
    const text = new TextDecoder().decode(out.stdout);
    if (!out.success) throw new Error(`tmux ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
    return text;
  }

  /** The pane's whole history and screen, each wrapped row joined back to its line. */
  async capture(): Promise<string[]> {
    const text = await this.run("capture-pane", "-p", "-J", "-S", "-", "-t", "t");
    return text.split("\n").map((l) => l.trimEnd());
  }

  /** Captures until `done(lines)` holds (or fails after `seconds`). */
  async waitFor(what: string, done: (lines: string[]) => boolean, seconds = 90): Promise<string[]> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const lines = await this.capture();
      if (done(lines)) return lines;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; pane:\n${lines.join("\n")}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.run("kill-server").catch(() => {});
  }
}

/** The live view's rows on screen: from its header line to the bottleneck verdict. */
function liveView(lines: string[]): string[] {
  const start = lines.findIndex((l) => /^epoch \d+ +batches \d+/.test(l));
  const end = lines.findIndex((l, i) => i > start && l.startsWith("bottleneck:"));
  return start < 0 || end < 0 ? [] : lines.slice(start, end + 1);
}

for (
  const [columns, backend] of [[80, "inprocess"], [100, "inprocess"], [100, "subprocess"], [
    200,
    "inprocess",
  ]] as const
) {
  Deno.test({
    name:
      `live view in tmux at ${columns} columns (${backend} backend): fits, log lines above, Ctrl-C summary`,
    ignore: !hasTmux,
    fn: async () => {
      const dir = await tinyDataset({ broken: true });
      await using tmux = new Tmux();
      try {
        const cmd = `'${Deno.execPath()}' run --allow-all '${MAIN}' load '${dir}' --epochs 1000000 ` +
          `--batch-size 2 --frames 4 --width 32 --height 32 --decode-concurrency 1 --refresh 20 ` +
          `--backend ${backend}; echo EXIT=$?; sleep 600`;
        await tmux.run("new-session", "-d", "-x", String(columns), "-y", "40", "-s", "t", cmd);
        // Wait until the view has been drawn and failure lines kept arriving while it was up.
        const running = await tmux.waitFor(
          "the live view and 10 logged failures",
          (l) => liveView(l).length > 0 && l.some((x) => x.includes("further failures are counted")),
        );
        await new Promise((r) => setTimeout(r, 300)); // more redraws
        const later = await tmux.capture();
        for (const lines of [running, later]) {
          const view = liveView(lines);
          const screen = lines.join("\n");
          assert.equal(
            lines.filter((l) => /^epoch \d+ +batches/.test(l)).length,
            1,
            `views piled up:\n${screen}`,
          );
          assert.equal(lines.filter((l) => /^stage +conc/.test(l)).length, 1, `tables piled up:\n${screen}`);
          assert.ok(
            view.every((l) => l.length < columns),
            `a view line wrapped at ${columns}:\n${view.join("\n")}`,
          );
          assert.ok(view.some((l) => /^decode +\d/.test(l)), "the decode stage row is shown");
          assert.equal(view[0 + 1].includes("q mean"), columns > 150, `columns fitted to ${columns}`);
          // Above the view: only whole log lines (no fragments of earlier redraws).
          const above = lines.slice(0, lines.indexOf(view[0])).filter((l) => l !== "");
          for (const l of above) {
            assert.match(
              l,
              /^(sluice[ :]|\[backend \d+\] )/,
              `fragment ${JSON.stringify(l)} above the view:\n${screen}`,
            );
          }
          const failures = above.filter((l) => / failed on |skipping /.test(l));
          assert.ok(failures.length >= 3, screen);
          failures.forEach(assertFailureLine);
        }
        await tmux.run("send-keys", "-t", "t", "C-c");
        const done = await tmux.waitFor("the exit status", (l) => l.some((x) => x.startsWith("EXIT=")));
        const screen = done.join("\n");
        assert.ok(done.includes("EXIT=130"), screen);
        assert.ok(
          done.includes("interrupted: the figures cover the batches delivered before Ctrl-C"),
          screen,
        );
        assert.match(screen, /^\d+ batches, \d+ samples/m);
        assert.match(screen, /^samples\/s [\d.]+ +frames\/s \d+$/m);
        assert.match(screen, /^bottleneck: /m);
        assert.ok(!/^epoch \d+ +batches/m.test(screen), `the live view was not erased:\n${screen}`);
        const summary = done.slice(done.findIndex((l) => l.startsWith("interrupted:")));
        assert.ok(
          summary.every((l) => l.length < columns),
          `summary wider than ${columns}:\n${summary.join("\n")}`,
        );
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

Deno.test({
  name: "transcode's progress line in tmux at 80 columns: fitted, redrawn in place (one line, never stacked)",
  ignore: !hasTmux,
  fn: async () => {
    const dir = await tinyDataset({ videos: 6, broken: true }); // two inputs fail: "(2 failed)" lengthens the line
    await using tmux = new Tmux();
    try {
      const cmd =
        `'${Deno.execPath()}' run --allow-all '${MAIN}' transcode '${dir}' '${dir}/out' --height 64 ` +
        `--jobs 1; echo EXIT=$?; sleep 600`;
      await tmux.run("new-session", "-d", "-x", "80", "-y", "40", "-s", "t", cmd);
      const lines = await tmux.waitFor("the exit status", (l) => l.some((x) => x.startsWith("EXIT=")));
      const screen = lines.join("\n");
      assert.ok(lines.includes("EXIT=0"), screen);
      // Before: an 88-column line wrapped at 80, and each redraw left the wrapped part behind.
      assert.equal(screen.split("transcode [").length - 1, 1, `progress lines piled up:\n${screen}`);
      const progress = lines.find((l) => l.startsWith("transcode ["))!;
      assert.ok(progress.length < 80, `progress line of ${progress.length} columns:\n${screen}`);
      assert.match(progress, /\] 8\/8 100% {2}ETA 0:00 {2}\(\d failed\)/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
