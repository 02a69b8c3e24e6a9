/**
 * Plain aligned text tables for the CLI's results (`probe`, `bench-decode`): columns padded to their widest
 * cell, two spaces apart, numbers right-aligned.
 * @module
 */

/** Renders `rows` (the first is the header) as aligned text; `right` names the columns aligned right. */
export function alignTable(rows: readonly (readonly string[])[], right: readonly number[] = []): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => right.includes(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c])).join("  ")
      .trimEnd()
  ).join("\n");
}
