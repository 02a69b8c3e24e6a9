/**
 * The syntax-level house rules of tests/architecture_test.ts, as a `deno lint` plugin run with
 * `Deno.lint.runPlugin` (available inside `deno test` only). {@link scanModule} returns what each rule found in
 * one module; the test holds the limits and the allowlists.
 *
 * - `size`: every function, method or closure over {@link MAX_FUNCTION_LINES} lines and every class over
 *   {@link MAX_CLASS_LINES}, unless the line before it (or before its JSDoc) says why:
 *   `// long: <at least three words>`; and every such comment above one that is not long (stale).
 * - `option-calls`: every call of an option checker or door ({@link OPTION_CALLEES}), with the named functions
 *   it is written in.
 * - `exports`: every value a module exports by name.
 * @module
 */

/** A function, method or closure longer than this (lines, first to last) needs a `// long:` reason. */
export const MAX_FUNCTION_LINES = 80;
/** A class longer than this (lines) needs a `// long:` reason. */
export const MAX_CLASS_LINES = 300;

/**
 * The calls the options rule follows: the option checkers of src/options.ts, the doors each room resolves its
 * options in, and `new ClipSampler`, whose constructor resolves its options; who may call which is the test's
 * `DOORS`.
 */
export const OPTION_CALLEES: ReadonlySet<string> = new Set([
  "checkOptions",
  "checkOption",
  "withDefaults",
  "defaultsOf",
  "resolveTable",
  "new ClipSampler",
  "resolveLoaderOptions",
  "resolveServerConfig",
  "resolveSamplerOptions",
  "resolveFetchOptions",
  "resolveBuildOptions",
  "resolvePipeOptions",
]);

/** What a rule found in a module. */
export type Finding =
  | { rule: "long"; line: number; kind: "function" | "class"; name: string; lines: number }
  | { rule: "stale-long"; line: number; kind: "function" | "class"; name: string; lines: number }
  | { rule: "option-call"; line: number; callee: string; within: string[]; top: string | null }
  | { rule: "export"; line: number; name: string };

/** A `// long:` reason: at least three words after the colon. */
const LONG_REASON = /^\s*\/\/ long: *\S+\s+\S+\s+\S+/;
const LONG_ANY = /^\s*\/\/\s*long\s*:/;

type Node = Deno.lint.Node;
type Fn = Deno.lint.FunctionDeclaration | Deno.lint.FunctionExpression | Deno.lint.ArrowFunctionExpression;
type Cls = Deno.lint.ClassDeclaration | Deno.lint.ClassExpression;

/** The name a property, method or variable is written with (`#x` for a private one), or null. */
function keyName(key: Node | null | undefined): string | null {
  if (key === null || key === undefined) return null;
  if (key.type === "Identifier") return key.name;
  if (key.type === "PrivateIdentifier") return `#${key.name}`;
  if (key.type === "Literal" && typeof key.value === "string") return key.value;
  return null;
}

/** The name of a class (null when anonymous). */
function className(node: Cls): string | null {
  if (node.id !== null && node.id !== undefined) return node.id.name;
  return node.parent.type === "VariableDeclarator" ? keyName(node.parent.id) : null;
}

/** The class a method or field node lies in, by name. */
function classOf(member: Deno.lint.MethodDefinition | Deno.lint.PropertyDefinition): string {
  const cls = member.parent.parent as Cls;
  return className(cls) ?? "(class)";
}

/**
 * The name a function is known by: its own, the variable or property it is assigned to, or
 * `Class.method` for a method or field; null for an anonymous one (a callback).
 */
export function functionName(node: Fn): string | null {
  if (node.type === "FunctionDeclaration") return node.id?.name ?? null;
  if (node.type === "FunctionExpression" && node.id) return node.id.name;
  const p = node.parent;
  switch (p.type) {
    case "MethodDefinition":
    case "PropertyDefinition":
      return `${classOf(p)}.${keyName(p.key) ?? "(computed)"}`;
    case "VariableDeclarator":
      return keyName(p.id);
    case "Property":
      return keyName(p.key);
    case "AssignmentExpression":
      return p.left.type === "MemberExpression" ? keyName(p.left.property) : keyName(p.left);
    default:
      return null;
  }
}

/** The node `node` lies in (none for the module). */
const parentOf = (node: Node): Node | undefined => (node as { parent?: Node }).parent ?? undefined;

const FUNCTION_TYPES = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/** The names of the named functions `node` is written in, innermost first. */
function enclosingFunctions(node: Node): string[] {
  const names: string[] = [];
  for (let p = parentOf(node); p !== undefined; p = parentOf(p)) {
    if (FUNCTION_TYPES.has(p.type)) {
      const n = functionName(p as Fn);
      if (n !== null) names.push(n);
    }
  }
  return names;
}

/** The module-level variable whose initialiser holds `node` (`const DEFAULTS = withDefaults(…)`), or null. */
function topLevelVariable(node: Node): string | null {
  let declarator: string | null = null;
  for (let p = parentOf(node); p !== undefined; p = parentOf(p)) {
    if (p.type === "VariableDeclarator") declarator = keyName(p.id);
    if (p.type === "Program") return declarator;
  }
  return null;
}

/** The callee's name of a call (`f(…)`, `x.f(…)`), or null. */
function calleeName(callee: Node): string | null {
  if (callee.type === "Identifier") return callee.name;
  if (callee.type === "MemberExpression") return keyName(callee.property);
  return null;
}

/** The plugin; each finding's message is the finding as JSON (without its line, which its range gives). */
export const HOUSE_RULES: Deno.lint.Plugin = {
  name: "house",
  rules: {
    size: {
      create(ctx) {
        const text = ctx.sourceCode.text;
        const lines = text.split("\n");
        const lineOf = (offset: number) => text.slice(0, offset).split("\n").length;
        /** The comment that excuses the node starting on `line` (1-based): above it, or above its JSDoc. */
        const reasonAbove = (line: number): string | null => {
          let k = line - 2; // 0-based index of the line before
          if (k >= 0 && /\*\/\s*$/.test(lines[k]) && !LONG_ANY.test(lines[k])) {
            while (k >= 0 && !/^\s*\/\*/.test(lines[k])) k--;
            k--;
          }
          return k >= 0 && LONG_ANY.test(lines[k]) ? lines[k] : null;
        };
        const check = (node: Fn | Cls, kind: "function" | "class", name: string, max: number) => {
          const [a, b] = node.range;
          const n = lineOf(b) - lineOf(a) + 1;
          const reason = reasonAbove(lineOf(a));
          const excused = reason !== null && LONG_REASON.test(reason);
          if (n > max && !excused) {
            ctx.report({ node, message: JSON.stringify({ rule: "long", kind, name, lines: n }) });
          } else if (n <= max && reason !== null) {
            ctx.report({ node, message: JSON.stringify({ rule: "stale-long", kind, name, lines: n }) });
          }
        };
        const fn = (node: Fn) => {
          const own = functionName(node), outer = enclosingFunctions(node)[0];
          const name = own ?? (outer === undefined ? "(anonymous)" : `(anonymous in ${outer})`);
          check(node, "function", name, MAX_FUNCTION_LINES);
        };
        const cls = (node: Cls) => check(node, "class", className(node) ?? "(class)", MAX_CLASS_LINES);
        return {
          FunctionDeclaration: fn,
          FunctionExpression: fn,
          ArrowFunctionExpression: fn,
          ClassDeclaration: cls,
          ClassExpression: cls,
        };
      },
    },
    "option-calls": {
      create(ctx) {
        const call = (node: Deno.lint.CallExpression | Deno.lint.NewExpression) => {
          const name = calleeName(node.callee);
          const callee = node.type === "NewExpression" ? `new ${name}` : name;
          if (name === null || !OPTION_CALLEES.has(callee!)) return;
          const within = enclosingFunctions(node);
          const top = within.length === 0 ? topLevelVariable(node) : null;
          ctx.report({ node, message: JSON.stringify({ rule: "option-call", callee, within, top }) });
        };
        return { CallExpression: call, NewExpression: call };
      },
    },
    exports: {
      create(ctx) {
        return {
          ExportNamedDeclaration(node) {
            if (node.exportKind === "type") return;
            const d = node.declaration;
            const report = (name: string | null) => {
              if (name !== null) ctx.report({ node, message: JSON.stringify({ rule: "export", name }) });
            };
            if (d?.type === "FunctionDeclaration" || d?.type === "ClassDeclaration") {
              report(d.id?.name ?? null);
            } else if (d?.type === "VariableDeclaration") {
              for (const v of d.declarations) report(keyName(v.id));
            }
            for (const s of node.specifiers) {
              if (s.exportKind !== "type") report(keyName(s.exported));
            }
          },
        };
      },
    },
  },
};

/** What the rules find in `source` (the module at `file`). */
export function scanModule(file: string, source: string): Finding[] {
  return Deno.lint.runPlugin(HOUSE_RULES, file, source).map((d) => ({
    ...JSON.parse(d.message),
    line: source.slice(0, d.range[0]).split("\n").length,
  }));
}
