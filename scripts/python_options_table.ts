/**
 * Writes the table of `sluice.Loader`'s loader keywords into python/README.md (between the `options-table`
 * markers), made from the options' tables (`pythonOptionList`, what `src/serve/main.ts --options` prints); with
 * `--check`, writes nothing and exits 1 when the README's table is not the one the tables make (the Python
 * tests run this).
 *
 *     deno run -A scripts/python_options_table.ts [--check]
 * @module
 */

import { pythonOptionList } from "../src/serve/options.ts";
import { PYTHON_WORDS } from "../src/python_options.ts";
import { defaultText, type OptionSpec } from "../src/options.ts";

const README = new URL("../python/README.md", import.meta.url);
const START = "<!-- options-table: made by scripts/python_options_table.ts from the options' tables -->";
const END = "<!-- options-table end -->";

/** A default as Python writes it. */
function pythonDefault(spec: OptionSpec): string {
  if (spec.required) return "required";
  if (spec.defaultText !== undefined || spec.default === undefined) return defaultText(spec) ?? "not set";
  return `\`${PYTHON_WORDS.show(spec.default)}\``;
}

/** The markdown table: one row per keyword. */
export function pythonOptionsTable(): string {
  const cell = (s: string) => s.replaceAll("|", "\\|");
  const rows = pythonOptionList().map(({ keyword, accepts, spec }) => {
    const s = spec as unknown as OptionSpec;
    return `| \`${keyword}\` | ${cell(accepts)} | ${cell(pythonDefault(s))} | ${cell(s.doc)} |`;
  });
  return ["| keyword | value | default | what it is |", "| --- | --- | --- | --- |", ...rows].join("\n");
}

/** `markdown` as `deno fmt` leaves it (so the check and the formatter agree). */
async function formatted(markdown: string): Promise<string> {
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: new URL("..", import.meta.url),
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = fmt.stdin.getWriter();
  await writer.write(new TextEncoder().encode(markdown));
  await writer.close();
  const out = await fmt.output();
  if (!out.success) throw new Error("deno fmt failed on python/README.md");
  return new TextDecoder().decode(out.stdout);
}

if (import.meta.main) {
  const text = Deno.readTextFileSync(README);
  const a = text.indexOf(START), b = text.indexOf(END);
  if (a < 0 || b < a) {
    console.error(`python/README.md lacks the markers ${START} … ${END}`);
    Deno.exit(1);
  }
  const fresh = await formatted(
    `${text.slice(0, a + START.length)}\n\n${pythonOptionsTable()}\n\n${text.slice(b)}`,
  );
  if (Deno.args.includes("--check")) {
    if (fresh !== text) {
      console.error(
        "python/README.md's keyword table is stale: run deno run -A scripts/python_options_table.ts",
      );
      Deno.exit(1);
    }
  } else Deno.writeTextFileSync(README, fresh);
}
