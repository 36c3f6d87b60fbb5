/**
 * The installed package as other projects consume it: every entry point (runpodkit, runpodkit/sdk,
 * runpodkit/service, runpodkit/worker) imported from a program with the tsconfig `pulumi new
 * typescript` writes (moduleResolution "node", which reads no package.json "exports": typesVersions
 * maps the subpaths), with node16, nodenext and bundler resolution and `skipLibCheck: false` (our
 * .d.ts name no devDependency and no missing file), on TypeScript 5.9 and, with skipLibCheck, 5.0; an
 * ES module consumer (.mts) on Node; and the program deployed, which Pulumi type-checks with ts-node.
 * docs/installation-configuration.md "Supported Node versions and package managers" states what this proves.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { CACHE_ROOT, installProgram, packProject } from "../../engine/package";

const FIXTURE = join(__dirname, "fixtures", "consumer-types");
/** A first install downloads the program's packages; each tsc run loads @pulumi/pulumi's types. */
const SETUP_TIMEOUT = 300_000;
const TEST_TIMEOUT = 180_000;

const ENTRIES = "function,function,function,function";

/**
 * The packages (bare specifiers, node: builtins aside) that the .d.ts graph from `entry` imports, with
 * the files importing each; `skip` names relative specifiers not to follow from the entry file itself.
 * Read by TypeScript's own pre-processor, so that comments and strings do not count.
 */
function declarationImports(entry: string, skip: string[] = []): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  const seen = new Set<string>();
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const specifiers = [...info.importedFiles, ...info.typeReferenceDirectives].map((ref) => ref.fileName);
    for (const specifier of specifiers) {
      if (specifier.startsWith(".")) {
        if (file === entry && skip.includes(specifier)) continue;
        const base = resolve(dirname(file), specifier).replace(/\.js$/, "");
        const target = [`${base}.d.ts`, join(base, "index.d.ts")].find(existsSync);
        if (target === undefined) throw new Error(`${file}: ${specifier} has no declaration file`);
        queue.push(target);
      } else if (!specifier.startsWith("node:")) {
        const parts = specifier.split("/");
        const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? "");
        const files = found[name] ?? [];
        files.push(file.slice(dirname(entry).length + 1));
        found[name] = files;
      }
    }
  }
  return Object.fromEntries(
    Object.entries(found)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, files]) => [name, files.sort()]),
  );
}

describe("the installed package in consumers' TypeScript and module setups", () => {
  let programDir = "";
  let workDir = "";
  let pkg: Awaited<ReturnType<typeof packProject>>;

  beforeAll(async () => {
    pkg = await packProject();
    programDir = (await installProgram(FIXTURE, pkg)).dir;
    workDir = await mkdtemp(join(tmpdir(), "runpodkit-consumer-types-"));
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  const tsc = (compiler: "typescript" | "typescript-5.0", project: string) => {
    const result = spawnSync(
      process.execPath,
      [join("node_modules", compiler, "bin", "tsc"), "-p", project, "--pretty", "false"],
      { cwd: programDir, encoding: "utf8" },
    );
    return { project, compiler, status: result.status, errors: result.stdout.trim() };
  };

  for (const project of [
    "tsconfig.node10.json",
    "tsconfig.node16.json",
    "tsconfig.nodenext.json",
    "tsconfig.bundler.json",
  ]) {
    test(
      `TypeScript 5.9, ${project} (skipLibCheck false): every entry's types resolve and check`,
      () => {
        expect(tsc("typescript", project)).toEqual({
          project,
          compiler: "typescript",
          status: 0,
          errors: "",
        });
      },
      TEST_TIMEOUT,
    );
  }

  test(
    "exactOptionalPropertyTypes: every option that may be left out also takes undefined (process.env.X, config.get())",
    () => {
      expect(tsc("typescript", "tsconfig.exact.json")).toEqual({
        project: "tsconfig.exact.json",
        compiler: "typescript",
        status: 0,
        errors: "",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "a job's result narrows on its status (COMPLETED: no error; FAILED: error a string), nodenext and bundler",
    () => {
      for (const project of ["tsconfig.results.json", "tsconfig.results-bundler.json"]) {
        expect(tsc("typescript", project)).toEqual({
          project,
          compiler: "typescript",
          status: 0,
          errors: "",
        });
      }
    },
    TEST_TIMEOUT,
  );

  test(
    "the job client's types hold where zod and undici cannot be reached (pnpm read without following symlinks)",
    () => {
      expect(tsc("typescript", "tsconfig.nodeps.json")).toEqual({
        project: "tsconfig.nodeps.json",
        compiler: "typescript",
        status: 0,
        errors: "",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "the REST and GraphQL clients' types hold where zod and undici cannot be reached (a misspelt field is an error)",
    () => {
      expect(tsc("typescript", "tsconfig.nodeps-clients.json")).toEqual({
        project: "tsconfig.nodeps-clients.json",
        compiler: "typescript",
        status: 0,
        errors: "",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "under pnpm, read without following its symlinks (as Pulumi's ts-node 7 reads it), zod is out of reach and the REST and GraphQL clients' types still hold",
    async () => {
      const pnpmDir = (await installProgram(FIXTURE, pkg, "pnpm")).dir;
      // The setup is the one meant: from runpodkit's declarations, zod does not resolve.
      const rest = join(pnpmDir, "node_modules", "runpodkit", "dist", "sdk", "rest.d.ts");
      const options = { moduleResolution: ts.ModuleResolutionKind.Node10, preserveSymlinks: true };
      expect(ts.resolveModuleName("zod", rest, options, ts.sys).resolvedModule).toBeUndefined();
      expect(
        ts.resolveModuleName("runpodkit/sdk", join(pnpmDir, "index.ts"), options, ts.sys).resolvedModule,
      ).toBeDefined();
      const result = spawnSync(
        process.execPath,
        [
          join("node_modules", "typescript", "bin", "tsc"),
          "-p",
          "tsconfig.pnpm-clients.json",
          "--pretty",
          "false",
        ],
        { cwd: pnpmDir, encoding: "utf8" },
      );
      expect({ status: result.status, errors: result.stdout.trim() }).toEqual({ status: 0, errors: "" });
    },
    SETUP_TIMEOUT,
  );

  test(
    "TypeScript 5.0 with skipLibCheck, node10 and nodenext resolution",
    () => {
      for (const project of ["tsconfig.ts50-node10.json", "tsconfig.ts50.json"]) {
        expect(tsc("typescript-5.0", project)).toEqual({
          project,
          compiler: "typescript-5.0",
          status: 0,
          errors: "",
        });
      }
    },
    TEST_TIMEOUT,
  );

  test(
    "the resources' declarations import no package a Pulumi project lacks: @pulumi/pulumi only, no zod or undici",
    async () => {
      const installed = join(programDir, "node_modules", "runpodkit");
      const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8")) as {
        exports: Record<string, string | { types?: string }>;
      };
      const typesOf = (entry: string) => {
        const target = manifest.exports[entry];
        if (typeof target !== "object" || target.types === undefined)
          throw new Error(`no types for ${entry}`);
        return join(installed, target.types);
      };
      const packages = (imports: Record<string, string[]>) => Object.keys(imports);
      // A checker that does not follow pnpm's symlinks (Pulumi's bundled ts-node 7) finds only what
      // the project has itself: the resources and the lookups, everything of "runpodkit" but the
      // sdk namespace (the SDK's own entry, below), reach @pulumi/pulumi and nothing else.
      expect(declarationImports(typesOf("."), ["./sdk"])).toEqual({
        "@pulumi/pulumi": ["provider/lookups.d.ts", "provider/public-types.d.ts", "provider/resources.d.ts"],
      });
      expect(packages(declarationImports(typesOf("./worker")))).toEqual([]);
      // The SDK's schemas are zod schemas and its clients take an undici Dispatcher: its types are
      // these packages'. The local service's app is a fastify instance.
      expect(packages(declarationImports(typesOf("./sdk")))).toEqual(["undici", "zod"]);
      expect(packages(declarationImports(typesOf("./service")))).toEqual(["fastify", "zod"]);
    },
    TEST_TIMEOUT,
  );

  test(
    "an ES module imports every entry by name",
    () => {
      const result = spawnSync(process.execPath, ["esm.mts"], { cwd: programDir, encoding: "utf8" });
      expect({ status: result.status, stdout: result.stdout }).toEqual({
        status: 0,
        stdout: `${ENTRIES},e,function\n`,
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "the program with `pulumi new typescript`'s tsconfig runs: Pulumi's ts-node type-checks it, then it requires every entry",
    async () => {
      const stack = await LocalStack.open({
        programDir,
        stackName: "consumer-types",
        stateDir: join(workDir, "state"),
        passphrase: randomBytes(12).toString("hex"),
      });
      const up = await stack.up();
      expect(up.outputs.entries?.value).toEqual({
        endpoint: "function",
        sdk: "function",
        jobClient: "function",
        startService: "function",
        serverlessStart: "function",
        typed: "AMPERE_16,e,1,function",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "the install cache drops installs unused for an hour and keeps a reused one",
    async () => {
      const programs = join(CACHE_ROOT, "programs");
      const stale = join(programs, `prune-probe-${randomBytes(4).toString("hex")}`);
      await mkdir(stale, { recursive: true });
      const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
      await utimes(stale, twoHoursAgo, twoHoursAgo);
      await utimes(programDir, twoHoursAgo, twoHoursAgo);
      // Cached: no install, only the reuse (touched) and the prune.
      expect((await installProgram(FIXTURE, pkg)).dir).toBe(programDir);
      await expect(stat(stale)).rejects.toMatchObject({ code: "ENOENT" });
      expect((await stat(programDir)).mtimeMs).toBeGreaterThan(twoHoursAgo.getTime());
    },
    TEST_TIMEOUT,
  );

  test(
    "every runtime dependency or peer is one the shipped code loads (what only the test engine uses is a devDependency)",
    async () => {
      const installed = join(programDir, "node_modules", "runpodkit");
      const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
        peerDependencies: Record<string, string>;
      };
      const loaded = new Set<string>();
      for (const file of await readdir(join(installed, "dist"), { recursive: true })) {
        if (!file.endsWith(".js")) continue;
        const text = await readFile(join(installed, "dist", file), "utf8");
        for (const [, specifier = ""] of text.matchAll(/(?:require|import)\("([^".][^"]*)"\)/g)) {
          if (specifier.startsWith("node:")) continue;
          const parts = specifier.split("/");
          loaded.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? ""));
        }
      }
      const declared = [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies)];
      expect(declared.sort()).toEqual([...loaded].sort());
      // Only the resources load Pulumi: a peer, so a Pulumi project's own copy is the one they use.
      expect(Object.keys(manifest.peerDependencies)).toEqual(["@pulumi/pulumi"]);
    },
    TEST_TIMEOUT,
  );
});
