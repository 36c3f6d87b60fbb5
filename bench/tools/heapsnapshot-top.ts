/**
 * Reads a V8 .heapsnapshot (v8.writeHeapSnapshot) and prints the self size by node type and
 * constructor name, largest first: `tsx bench/tools/heapsnapshot-top.ts <file> [top]`.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";

const Snapshot = z.object({
  snapshot: z.object({
    meta: z.object({ node_fields: z.array(z.string()), node_types: z.array(z.unknown()) }),
  }),
  nodes: z.array(z.number()),
  strings: z.array(z.string()),
});

/** Self size and count of a snapshot's nodes by type and constructor name (strings together). */
export function heapTotals(file: string): Map<string, { size: number; count: number }> {
  const snap = Snapshot.parse(JSON.parse(readFileSync(file, "utf8")));
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0] as string[];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f)) as [
    number,
    number,
    number,
  ];
  const totals = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt] as number] ?? "?";
    const name =
      type === "string" || type === "concatenated string" || type === "sliced string"
        ? "(strings)"
        : (snap.strings[snap.nodes[i + nameAt] as number] ?? "?");
    const key = `${type}: ${name.slice(0, 60)}`;
    const entry = totals.get(key) ?? { size: 0, count: 0 };
    entry.size += snap.nodes[i + sizeAt] as number;
    entry.count++;
    totals.set(key, entry);
  }
  return totals;
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (!file) throw new Error("usage: heapsnapshot-top <file> [top]");
  const totals = heapTotals(file);
  let all = 0;
  let nodes = 0;
  for (const { size, count } of totals.values()) {
    all += size;
    nodes += count;
  }
  process.stdout.write(`${(all / 2 ** 20).toFixed(1)} MB in ${nodes} nodes\n`);
  for (const [key, { size, count }] of [...totals]
    .sort((a, b) => b[1].size - a[1].size)
    .slice(0, Number(topArg ?? 25))) {
    process.stdout.write(
      `${(size / 2 ** 20).toFixed(1).padStart(7)} MB ${String(count).padStart(9)}  ${key}\n`,
    );
  }
}

// Run as a tool, not when another tool imports heapTotals.
if (require.main === module) main();
