/**
 * Reads V8 .cpuprofile files (node --cpu-prof) and prints the functions with the most self time, and
 * the heaviest packages/files: `tsx bench/tools/cpuprofile-top.ts <file or dir> [top]`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

const Profile = z.object({
  nodes: z.array(
    z.object({
      id: z.number(),
      callFrame: z.object({ functionName: z.string(), url: z.string(), lineNumber: z.number() }),
      children: z.array(z.number()).optional(),
    }),
  ),
  samples: z.array(z.number()),
  timeDeltas: z.array(z.number()),
});

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => join(path, f));
}

/** node_modules/<pkg> or the project path, for grouping. */
function area(url: string): string {
  const at = url.lastIndexOf("node_modules/");
  if (at >= 0) {
    const rest = url.slice(at + "node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith("node:")) return url;
  const build = url.indexOf("/build/");
  return build >= 0 ? url.slice(build + "/build/".length) : url || "(native/vm)";
}

function main(): void {
  const [target, topArg] = process.argv.slice(2);
  if (!target) throw new Error("usage: cpuprofile-top <file or dir> [top]");
  const top = Number(topArg ?? 30);
  for (const file of files(target)) {
    const profile = Profile.parse(JSON.parse(readFileSync(file, "utf8")));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<number, number>();
    let total = 0;
    profile.samples.forEach((id, i) => {
      const dt = profile.timeDeltas[i] ?? 0;
      self.set(id, (self.get(id) ?? 0) + dt);
      total += dt;
    });
    const byFunction = new Map<string, number>();
    const byArea = new Map<string, number>();
    for (const [id, us] of self) {
      const frame = byId.get(id)?.callFrame;
      if (!frame) continue;
      const key = `${frame.functionName || "(anonymous)"} ${area(frame.url)}:${frame.lineNumber + 1}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + us);
      byArea.set(area(frame.url), (byArea.get(area(frame.url)) ?? 0) + us);
    }
    const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
    process.stdout.write(`\n${file}: ${(total / 1e6).toFixed(2)} s sampled\n-- by area\n`);
    for (const [key, us] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
      process.stdout.write(`${pct(us)}  ${key}\n`);
    }
    process.stdout.write("-- by function (self)\n");
    for (const [key, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(`${pct(us)}  ${key}\n`);
    }
  }
}

main();
