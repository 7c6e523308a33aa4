// A plain-text table of the list commands: columns padded to their widest cell.
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
