/**
 * The argument framework: every command's --help and --version, one message shape for every bad value, exit
 * statuses, and a standalone script (examples/demo.ts) that uses the CLI's `main`.
 */
import assert from "node:assert/strict";
import { COMMANDS } from "../../src/cli/commands/all.ts";
import { type Command, defineCommand, parseCommandLine, runCli, runCommand } from "../../src/cli/args.ts";
import { Capture, denoJsonVersion, sluice } from "./helpers.ts";

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new Capture(), stderr = new Capture();
  const code = await runCli(COMMANDS, args, { program: "sluice", summary: "test", stdout, stderr });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** The help entry of option `--name`: its line of the Options section and the wrapped lines after it. */
function optionEntry(help: string, name: string): string {
  const lines = help.split("\n");
  const i = lines.findIndex((l) => l.startsWith(`  --${name} `) || l === `  --${name}`);
  assert.ok(i >= 0, `--${name} is missing from the help`);
  let text = lines[i].trim();
  for (let j = i + 1; j < lines.length && /^ {4,}\S/.test(lines[j]); j++) text += ` ${lines[j].trim()}`;
  return text;
}

for (const command of COMMANDS) {
  Deno.test(`cli: sluice ${command.name} --help lists every option with its default and range, and an example`, async () => {
    const r = await cli([...command.name.split(" "), "--help"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    assert.match(r.stdout, new RegExp(`^sluice ${command.name}: \\S`));
    assert.ok(r.stdout.includes(`Usage: sluice ${command.name}`));
    for (const p of command.positionals) assert.ok(r.stdout.includes(p.name), p.name);
    for (const [name, spec] of Object.entries(command.options)) {
      const text = optionEntry(r.stdout, name);
      if (spec.type === "boolean") continue;
      const dflt = spec.required ? "required" : spec.defaultText ?? spec.default;
      if (dflt !== undefined) {
        assert.ok(text.includes(String(dflt)), `--${name}: default ${dflt} not in "${text}"`);
      }
      if (spec.type === "integer" || spec.type === "number") {
        assert.match(
          text,
          /(an integer|a number|an even integer)[^\]]*\]$/,
          `--${name}: no range in "${text}"`,
        );
      }
    }
    assert.match(r.stdout, /--help/);
    assert.match(r.stdout, /--version/);
    for (const ex of command.examples) assert.ok(r.stdout.includes(`  sluice ${ex}`), ex);
    // `help COMMAND` prints the same.
    assert.equal((await cli(["help", ...command.name.split(" ")])).stdout, r.stdout);
  });

  Deno.test(`cli: sluice ${command.name} --version prints deno.json's version`, async () => {
    const r = await cli([...command.name.split(" "), "--version"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^sluice ${denoJsonVersion().replaceAll(".", "\\.")} \\(deno `));
  });
}

Deno.test("cli: sluice --help lists every command; --version; no command is a usage error", async () => {
  const help = await cli(["--help"]);
  assert.equal(help.code, 0);
  for (const c of COMMANDS) assert.match(help.stdout, new RegExp(`^  ${c.name} +\\S`, "m"));
  assert.equal((await cli(["-h"])).stdout, help.stdout);
  assert.equal((await cli(["help"])).stdout, help.stdout);
  const version = await cli(["--version"]);
  assert.equal(version.code, 0);
  assert.equal(version.stdout.trim().split(" ")[1], denoJsonVersion());
  const none = await cli([]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /Commands:/);
  const typo = await cli(["lod", "x"]);
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /^sluice: unknown command "lod"; did you mean "load"\?/);
});

/** The clip shape and batch size `sluice load` needs. */
const SHAPE = ["--batch-size", "2", "--frames", "4", "--width", "32", "--height", "32"];

/** The one shape of a bad value: the command, the option, the valid range, what was given. */
const BAD_VALUE =
  /^sluice [a-z-]+: --[a-z-]+ must be (an integer|an even integer|a number|one of|a non-empty)[^\n]*, got ("[^\n]*"|nothing)/;

const badValues: [string[], string][] = [
  [["load", "d", "--width", "-5"], 'sluice load: --width must be an integer from 1 to 16384, got "-5"'],
  [
    ["load", "d", "--batch-size", "2.5"],
    'sluice load: --batch-size must be an integer from 1 to 65536, got "2.5"',
  ],
  [
    ["load", "d", "--batch-size", "0"],
    'sluice load: --batch-size must be an integer from 1 to 65536, got "0"',
  ],
  [
    ["load", "d", "--batch-size=1e9"],
    'sluice load: --batch-size must be an integer from 1 to 65536, got "1e9"',
  ],
  [["load", "d", "--frames", "0x10"], 'sluice load: --frames must be an integer from 1 to 10000, got "0x10"'],
  [["load", "d", "--frames", ""], 'sluice load: --frames must be an integer from 1 to 10000, got ""'],
  [["load", "d", "--frame-rate", "0"], 'sluice load: --frame-rate must be a number > 0 and <= 1000, got "0"'],
  [
    ["load", "d", "--frame-rate", "abc"],
    'sluice load: --frame-rate must be a number > 0 and <= 1000, got "abc"',
  ],
  [
    ["load", "d", "--backend", "carrier-pigeon"],
    'sluice load: --backend must be one of inprocess, subprocess, got "carrier-pigeon"',
  ],
  [["load", "d", "--width"], "sluice load: --width must be an integer from 1 to 16384, got nothing"],
  [
    ["load", "d", "--width", "--height", "9"],
    "sluice load: --width must be an integer from 1 to 16384, got nothing",
  ],
  [
    ["load", "d", "--seed", "-1"],
    'sluice load: --seed must be an integer >= 0, got "-1"',
  ],
  [
    ["load", "d", "--on-clip-error", "retry"],
    'sluice load: --on-clip-error must be one of replace, skip, fail, got "retry"',
  ],
  [
    ["make-dataset", "d", "--videos", "3"],
    "sluice make-dataset: --classes must be an integer from 1 to 256, got nothing (it is required)",
  ],
  [
    ["make-dataset", "d", "--videos", "3", "--classes", "2", "--width", "33"],
    'sluice make-dataset: --width must be an even integer from 16 to 4096, got "33"',
  ],
  [
    ["make-dataset", "d", "--videos", "3", "--classes", "2", "--duration", "-1"],
    'sluice make-dataset: --duration must be a number > 0 and <= 3600, got "-1"',
  ],
  [
    ["bench-decode", "f", "--repeat", "0"],
    'sluice bench-decode: --repeat must be an integer from 1 to 1000, got "0"',
  ],
];

for (const [args, message] of badValues) {
  Deno.test(`cli: ${args.join(" ")} is a usage error naming the option and its range`, async () => {
    const r = await cli(args);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr.split("\n")[0], message);
    assert.match(r.stderr, BAD_VALUE);
    assert.match(r.stderr, new RegExp(`Run 'sluice ${args[0]} --help' for the options\\.`));
  });
}

Deno.test("cli: other usage errors: unknown options named, positionals counted, exclusive options", async () => {
  const cases: [string[], RegExp][] = [
    [["load", "d", "--frame", "3"], /^sluice load: unknown option --frame; did you mean --frames\?/],
    [["load", "d", "--colour", "3"], /^sluice load: unknown option --colour \(see load --help\)/],
    [["load", "d", "-x"], /^sluice load: unknown option -x/],
    [["load", "d", "--json=yes"], /^sluice load: --json is a flag and takes no value, got "yes"/],
    [["load"], /^sluice load: missing DATASET/],
    [["load", "a", "b"], /^sluice load: takes DATASET only; unexpected "b"/],
    [["probe"], /^sluice probe: missing FILE/],
    [["load", "d"], /^sluice load: --batch-size, --frames, --width and --height are required/],
    [
      ["load", "d", ...SHAPE, "--batches", "3", "--epochs", "2"],
      /^sluice load: give --batches or --epochs, not both/,
    ],
  ];
  for (const [args, want] of cases) {
    const r = await cli(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, want);
  }
});

const toy = defineCommand({
  name: "toy",
  summary: "a test command",
  positionals: [{ name: "FILE", help: "files", variadic: true }],
  options: {
    n: { type: "integer", default: 3, min: 1, help: "count" },
    rate: { type: "number", above: 0, help: "rate" },
    mode: { type: "enum", values: ["a", "b"], default: "a", help: "mode" },
    flag: { type: "boolean", help: "flag" },
  },
  examples: ["toy x"],
  run: ({ values }) => values.n,
});

Deno.test("cli: parseCommandLine fills defaults, takes --opt=value, the last repeat wins, -- ends options", () => {
  assert.deepEqual(parseCommandLine(toy, ["x"]), {
    values: { n: 3, rate: undefined, mode: "a", flag: false },
    positionals: ["x"],
  });
  assert.deepEqual(
    parseCommandLine(toy, ["--n=5", "x", "--n", "7", "--mode", "b", "--flag", "--", "--rate", "-3"]),
    {
      values: { n: 7, rate: undefined, mode: "b", flag: true },
      positionals: ["x", "--rate", "-3"],
    },
  );
  assert.deepEqual(parseCommandLine(toy, ["x", "--rate", ".5"]), {
    values: { n: 3, rate: 0.5, mode: "a", flag: false },
    positionals: ["x"],
  });
  assert.equal(parseCommandLine(toy, ["--help", "--n", "0"]), "help"); // help wins over a bad value after it
  assert.equal(parseCommandLine(toy, ["--version"]), "version");
});

Deno.test("cli: defineCommand refuses a default outside its own range", () => {
  assert.throws(
    () =>
      defineCommand({
        name: "bad",
        summary: "",
        positionals: [],
        options: { n: { type: "integer", default: 0, min: 1, help: "" } },
        examples: ["bad"],
        run: () => 0,
      }),
    /the default of --n must be an integer >= 1, got "0"/,
  );
});

Deno.test("cli: an optional positional may be left out and shows as [NAME]; it cannot precede a required one", async () => {
  const opt = defineCommand({
    name: "opt",
    summary: "optional positional",
    positionals: [{ name: "SRC", help: "source" }, { name: "DST", help: "destination", optional: true }],
    options: {},
    examples: ["opt a"],
    run: ({ positionals }) => positionals.length,
  });
  assert.deepEqual(parseCommandLine(opt, ["a"]), { values: {}, positionals: ["a"] });
  assert.deepEqual(parseCommandLine(opt, ["a", "b"]), { values: {}, positionals: ["a", "b"] });
  assert.throws(() => parseCommandLine(opt, []), /missing SRC$/);
  assert.throws(() => parseCommandLine(opt, ["a", "b", "c"]), /takes SRC DST only; unexpected "c"/);
  const out = new Capture();
  assert.equal(await runCommand(opt, ["--help"], { program: "p", stdout: out, stderr: new Capture() }), 0);
  assert.match(out.text, /Usage: p opt SRC \[DST\]\n/);
  assert.match(out.text, /\n {2}\[DST\] +destination\n/);
  assert.throws(
    () =>
      defineCommand({
        ...opt,
        positionals: [{ name: "A", help: "", optional: true }, { name: "B", help: "" }],
      }),
    /a required positional follows an optional one/,
  );
});

Deno.test("cli: runCommand returns run's status; a SluiceError is exit 1 with one line, other errors propagate", async () => {
  const out = new Capture(), err = new Capture();
  const ctx = { program: "toy", stdout: out, stderr: err };
  assert.equal(await runCommand(toy, ["x", "--n", "4"], ctx), 4);
  const { MediaError } = await import("../../src/errors.ts");
  const failing: Command = {
    ...toy,
    run: () => Promise.reject(new MediaError("/x.mp4", "open", "no such file")),
  };
  assert.equal(await runCommand(failing, ["x"], ctx), 1);
  assert.equal(err.text, "toy toy: /x.mp4: open failed: no such file\n");
  const buggy: Command = { ...toy, run: () => Promise.reject(new TypeError("bug")) };
  await assert.rejects(runCommand(buggy, ["x"], ctx), TypeError);
});

Deno.test("cli: the real process exits 0 on --help and --version, 2 on a usage error", async () => {
  const help = await sluice(["load", "--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /--batch-size N +clips per batch \[required; an integer from 1 to 65536\]/);
  const version = await sluice(["--version"]);
  assert.equal(version.code, 0);
  assert.match(version.stdout, new RegExp(`^sluice ${denoJsonVersion().replaceAll(".", "\\.")} `));
  const bad = await sluice(["load", "x", "--width", "-5"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^sluice load: --width must be an integer from 1 to 16384, got "-5"/);
});

Deno.test("cli: examples/demo.ts --help prints its options instead of dying; a bad value exits 2", async () => {
  const demo = new URL("../../examples/demo.ts", import.meta.url).pathname;
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", demo, ...args],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
  const dec = new TextDecoder();
  const help = await run(["--help"]);
  assert.equal(help.code, 0, dec.decode(help.stderr));
  assert.match(dec.decode(help.stdout), /--epochs N +.*\(1 to 1000, default 5\)/);
  assert.doesNotMatch(dec.decode(help.stderr), /\n\s+at /);
  const bad = await run(["--epochs", "0"]);
  assert.equal(bad.code, 2);
  assert.match(
    dec.decode(bad.stderr),
    /^deno task demo: --epochs must be an integer from 1 to 1000, got "0"/,
  );
});
