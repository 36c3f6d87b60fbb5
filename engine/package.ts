/**
 * The package as users get it: built with the project's build script, packed with `npm pack`, and
 * installed from the tarball into a copy of an example program outside the project tree (so nothing
 * can resolve from the project's own node_modules). Pulumi serializes a `require` of an installed
 * package differently from a local file, so only this form proves what users get.
 *
 * Both steps are cached under the system temp dir, keyed by a hash of what they are made from, and
 * published with an atomic rename: concurrent test files and later runs reuse them. Entries not
 * made or reused for an hour are removed when the next one is published.
 */
import { execFile } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { promisify } from "node:util";
import { z } from "zod";
import { EngineError } from "./errors";

const run = promisify(execFile);

/** The project's root: the folder of the package.json named runpodkit above this file. */
export const PROJECT_ROOT = join(__dirname, "..");
export const CACHE_ROOT = join(tmpdir(), "runpodkit-e2e");

/** What the build reads (tsconfig.build.json's include) besides the package.json `files`. */
const BUILD_INPUTS = [
  "index.ts",
  "sdk",
  "service",
  "provider",
  "package.json",
  "tsconfig.json",
  "tsconfig.build.json",
];
const STALE_AFTER_MS = 60 * 60 * 1000;
const SKIPPED = new Set(["node_modules", "dist", ".data", "package-lock.json"]);

const manifestSchema = z.looseObject({
  name: z.string(),
  version: z.string(),
  files: z.array(z.string()).default([]),
});
const programManifest = z
  .record(z.string(), z.unknown())
  .and(z.object({ dependencies: z.record(z.string(), z.string()).optional() }));
const packOutput = z.array(z.object({ filename: z.string() })).min(1);

export interface PackedPackage {
  tarball: string;
  name: string;
  version: string;
}

/** Builds (`npm run build`, into a staging dir) and packs (`npm pack`) the project, once per content. */
export async function packProject(root: string = PROJECT_ROOT): Promise<PackedPackage> {
  const manifest = manifestSchema.parse(JSON.parse(await readFile(join(root, "package.json"), "utf8")));
  const inputs = [...new Set([...BUILD_INPUTS, ...manifest.files.filter((f) => f !== "dist")])];
  const key = await hashPaths(root, inputs);
  const dir = join(CACHE_ROOT, "pack", key);
  const tarballName = `${manifest.name}-${manifest.version}.tgz`;
  const published = await publishOnce(dir, async (stage) => {
    const pkg = join(stage, "package");
    await mkdir(pkg, { recursive: true });
    // The project's own build script, with the output redirected so the shared dist/ is never touched.
    await npm(root, ["run", "build", "--", "--outDir", join(pkg, "dist")], "build");
    await cp(join(root, "package.json"), join(pkg, "package.json"));
    for (const entry of manifest.files.filter((f) => f !== "dist")) {
      if (await exists(join(root, entry))) await cp(join(root, entry), join(pkg, entry), { recursive: true });
    }
    const out = await npm(pkg, ["pack", "--json", "--pack-destination", stage], "pack");
    const [packed] = packOutput.parse(JSON.parse(out));
    if (packed?.filename !== tarballName) {
      throw new EngineError(
        "PACK_FAILED",
        "package.pack",
        `expected ${tarballName}, npm packed ${packed?.filename}`,
      );
    }
    await rm(pkg, { recursive: true });
  });
  await pruneStale(join(CACHE_ROOT, "pack"), "", published);
  return { tarball: join(published, tarballName), name: manifest.name, version: manifest.version };
}

export interface InstalledProgram {
  /** The program folder, with node_modules installed from the tarball. */
  dir: string;
}

/** The package managers a program can be installed with (the compatibility matrix, README). */
export const PACKAGE_MANAGERS = ["npm", "pnpm", "yarn-classic", "yarn-berry", "yarn-berry-pnp"] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];

/**
 * Copies an example program outside the project and installs its dependencies with `manager` (default
 * npm), the package itself from the tarball (its dependency rewritten to `file:<tarball>`, as
 * `npm install <tarball>` records it), everything else from the npm registry npm is configured with:
 * npm from its cache first (--prefer-offline); pnpm, yarn classic and yarn berry (node-modules linker)
 * told that registry explicitly, each with a cache of its own under the cache root. The managers are
 * the project's devDependencies, run by path.
 */
export async function installProgram(
  exampleDir: string,
  pkg: PackedPackage,
  manager: PackageManager = "npm",
): Promise<InstalledProgram> {
  const tarballHash = createHash("sha256")
    .update(await readFile(pkg.tarball))
    .digest("hex");
  const hash = createHash("sha256")
    .update(tarballHash)
    .update(await hashPaths(exampleDir, await readdir(exampleDir)));
  if (manager !== "npm") hash.update(`\0${manager}`);
  const key = hash.digest("hex").slice(0, 16);
  const suffix = manager === "npm" ? "" : `-${manager}`;
  const dir = join(CACHE_ROOT, "programs", `${basename(exampleDir)}${suffix}-${key}`);
  await publishOnce(dir, async (stage) => {
    await cp(exampleDir, stage, {
      recursive: true,
      filter: (src) => !SKIPPED.has(basename(src)),
    });
    const manifestPath = join(stage, "package.json");
    const manifest = programManifest.parse(JSON.parse(await readFile(manifestPath, "utf8")));
    manifest.dependencies = { ...manifest.dependencies, [pkg.name]: `file:${pkg.tarball}` };
    await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    if (manager === "npm") {
      await npm(
        stage,
        ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
        "install",
      );
    } else {
      await installWith(manager, stage, (await npm(stage, ["config", "get", "registry"], "config")).trim());
    }
  });
  // Each tarball (every source change) makes new installs of ~100-300 MB each: without pruning, the
  // cache filled the disk. A reused install is touched, so a run still using it is never pruned.
  const now = new Date();
  await utimes(dir, now, now).catch(() => undefined);
  await pruneStale(join(CACHE_ROOT, "programs"), "", dir);
  return { dir };
}

/**
 * A copy of the program at `exampleDir` in `into` (a folder named as the program) whose package.json
 * lacks the devDependency `name`: a user's project without, say, ts-node. Install it with installProgram.
 */
export async function programWithout(exampleDir: string, into: string, name: string): Promise<string> {
  const copy = join(into, `${basename(exampleDir)}-without-${name}`);
  await cp(exampleDir, copy, { recursive: true, filter: (src) => !SKIPPED.has(basename(src)) });
  const manifestPath = join(copy, "package.json");
  const manifest = programManifest
    .and(z.object({ devDependencies: z.record(z.string(), z.string()).optional() }))
    .parse(JSON.parse(await readFile(manifestPath, "utf8")));
  if (manifest.devDependencies?.[name] === undefined) {
    throw new EngineError(
      "NO_DEV_DEPENDENCY",
      "programWithout",
      `${exampleDir} has no devDependency ${name}`,
    );
  }
  delete manifest.devDependencies[name];
  await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  return copy;
}

/** Yarn berry's CLI script (run it with this process's node): `yarn node`, `yarn <bin>` in a PnP install. */
export function yarnBerryScript(): string {
  return managerScript("@yarnpkg/cli-dist/bin/yarn.js");
}

/**
 * A package manager's bin script by path inside its package: found through Node's lookup directories,
 * not `require.resolve`, since a package's `exports` may hide its bin files (pnpm 11 does).
 */
function managerScript(specifier: string): string {
  const [scope, name, ...rest] = specifier.split("/");
  const [pkg, file] = scope?.startsWith("@") ? [`${scope}/${name}`, rest] : [scope ?? "", [name, ...rest]];
  for (const dir of require.resolve.paths(pkg) ?? []) {
    const candidate = join(dir, pkg, ...file.filter((part): part is string => part !== undefined));
    if (existsSync(candidate)) return candidate;
  }
  throw new EngineError("MANAGER_NOT_FOUND", "package.install", `${specifier} is not installed`);
}

async function installWith(
  manager: Exclude<PackageManager, "npm">,
  dir: string,
  registry: string,
): Promise<void> {
  const caches = join(CACHE_ROOT, "caches");
  let args: string[];
  if (manager === "pnpm") {
    args = [
      managerScript("pnpm/bin/pnpm.mjs"),
      "install",
      `--registry=${registry}`,
      `--store-dir=${join(caches, "pnpm-store")}`,
      `--cache-dir=${join(caches, "pnpm-cache")}`,
      "--no-frozen-lockfile",
      // protobufjs (under @pulumi/pulumi) has a postinstall the install does not need; pnpm 11+ stops on
      // any unapproved build script unless told to skip them.
      "--config.strict-dep-builds=false",
      "--reporter=append-only",
    ];
  } else if (manager === "yarn-classic") {
    args = [
      managerScript("yarn/bin/yarn.js"),
      "install",
      `--registry=${registry}`,
      `--cache-folder=${join(caches, "yarn-classic")}`,
      "--non-interactive",
      "--no-progress",
    ];
  } else {
    // Yarn berry finds its project by the nearest yarn.lock; all its settings are in .yarnrc.yml.
    await writeFile(join(dir, "yarn.lock"), "");
    const settings = {
      // Plug'n'Play (berry's default) for "yarn-berry-pnp": no node_modules; run the program with `yarn node`.
      nodeLinker: manager === "yarn-berry-pnp" ? "pnp" : "node-modules",
      npmRegistryServer: registry.replace(/\/$/, ""),
      enableGlobalCache: false,
      cacheFolder: join(caches, "yarn-berry"),
      enableTelemetry: false,
      enableImmutableInstalls: false,
      enableProgressBars: false,
    };
    await writeFile(
      join(dir, ".yarnrc.yml"),
      Object.entries(settings)
        .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
        .join("\n"),
    );
    args = [managerScript("@yarnpkg/cli-dist/bin/yarn.js"), "install"];
  }
  try {
    await run(process.execPath, args, {
      cwd: dir,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, CI: "true" },
    });
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new EngineError(
      `${manager.toUpperCase().replaceAll("-", "_")}_INSTALL_FAILED`,
      "package.install",
      `${manager} install failed in ${dir}:\n${stdout}\n${stderr}`.slice(-8000),
    );
  }
}

/**
 * A Node.js release from the npm registry's `node` package (which fetches the platform's binary in its
 * preinstall script), installed once per version under the cache; returns the path of its `node`.
 * Not a devDependency of the project: its bin is also named `node` and would compete with the project's
 * own Node 24 for node_modules/.bin/node, the node npm scripts run.
 */
export async function installNode(version: string): Promise<string> {
  const dir = await publishOnce(join(CACHE_ROOT, "node", version), async (stage) => {
    const manifest = { name: `node-${version}`, private: true, allowScripts: { node: true } };
    await writeFile(join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    await npm(
      stage,
      ["install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact", `node@${version}`],
      "install",
    );
  });
  return join(dir, "node_modules", "node", "bin", "node");
}

/**
 * Runs `build` in a fresh staging folder and renames it to `dir`; when `dir` already exists (cached, or
 * a concurrent process won the race) the staging folder is discarded and the existing one used.
 */
async function publishOnce(dir: string, build: (stage: string) => Promise<void>): Promise<string> {
  if (await exists(dir)) return dir;
  const stage = `${dir}.${process.pid}.${randomUUID().slice(0, 8)}.tmp`;
  await mkdir(stage, { recursive: true });
  try {
    await build(stage);
    await rename(stage, dir).catch(async (error: NodeJS.ErrnoException) => {
      if (!(await exists(dir))) throw error;
    });
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return dir;
}

/** Installs weigh ~150 MB: drop earlier versions nobody has touched for an hour (best effort). */
async function pruneStale(parent: string, prefix: string, keep: string): Promise<void> {
  const cutoff = Date.now() - STALE_AFTER_MS;
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    const path = join(parent, name);
    if (path === keep || !name.startsWith(prefix) || name.endsWith(".tmp")) continue;
    const info = await stat(path).catch(() => undefined);
    if (info && info.mtimeMs < cutoff)
      await rm(path, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function npm(cwd: string, args: string[], step: string): Promise<string> {
  try {
    const { stdout } = await run("npm", args, { cwd, maxBuffer: 64 * 1024 * 1024, env: process.env });
    return stdout;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new EngineError(
      `NPM_${step.toUpperCase()}_FAILED`,
      `package.${step}`,
      `npm ${args.join(" ")} failed in ${cwd}:\n${stdout}\n${stderr}`.slice(0, 8000),
    );
  }
}

/** sha256 over the relative paths and contents of every file under the given entries. */
async function hashPaths(root: string, entries: string[]): Promise<string> {
  const hash = createHash("sha256");
  const files: string[] = [];
  for (const entry of [...entries].sort()) {
    const path = join(root, entry);
    if (!(await exists(path))) continue;
    if ((await stat(path)).isDirectory()) {
      const listed = await readdir(path, { recursive: true, withFileTypes: true });
      for (const d of listed) {
        const full = join(d.parentPath, d.name);
        if (
          d.isFile() &&
          !relative(root, full)
            .split("/")
            .some((part) => SKIPPED.has(part))
        )
          files.push(full);
      }
    } else if (!SKIPPED.has(entry)) {
      files.push(path);
    }
  }
  for (const file of files.sort()) {
    hash
      .update(relative(root, file))
      .update("\0")
      .update(await readFile(file))
      .update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
