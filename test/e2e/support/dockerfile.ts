/**
 * Runs a Dockerfile's steps outside Docker (the machines the tests run on have no Docker engine), for
 * the few instructions the examples use: WORKDIR, COPY of named files, RUN through `/bin/sh -c`, ARG,
 * ENV and an exec-form CMD. The image's root is a folder; COPY copies only what it names, from the
 * build context minus .dockerignore, and fails as Docker does when a source is not there. The base
 * image is only reported (the caller checks it): the host's node and npm stand in for it.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface BuiltImage {
  from: string;
  /** The image's WORKDIR, as a folder on this machine. */
  workdir: string;
  /** The image's environment (ENV), with the build args substituted. */
  env: Record<string, string>;
  cmd: string[];
}

/** Instructions with continuation lines joined and comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  const joined = text.replace(/\\\r?\n/g, " ");
  return joined
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith("#"))
    .map((line) => {
      const match = /^(\S+)\s+(.*)$/.exec(line);
      if (!match?.[1] || match[2] === undefined)
        throw new Error(`Dockerfile: cannot read ${JSON.stringify(line)}`);
      return { op: match[1].toUpperCase(), args: match[2] };
    });
}

function substitute(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => {
    return vars[a ?? b ?? ""] ?? "";
  });
}

/** Builds `dockerfile` with `context` as the build context into the folder `root` (the image's `/`). */
export async function buildOutsideDocker(
  dockerfile: string,
  context: string,
  root: string,
  buildArgs: Record<string, string> = {},
): Promise<BuiltImage> {
  const ignorePath = join(context, ".dockerignore");
  const ignored = new Set(
    existsSync(ignorePath)
      ? (await readFile(ignorePath, "utf8"))
          .split(/\r?\n/)
          .map((l) => l.trim())
          .filter((l) => l && !l.startsWith("#"))
      : [],
  );
  let from = "";
  let workdir = root;
  const args: Record<string, string> = {};
  const env: Record<string, string> = {};
  let cmd: string[] = [];
  for (const { op, args: rest } of instructions(await readFile(dockerfile, "utf8"))) {
    const vars = { ...args, ...env };
    if (op === "FROM") from = rest;
    else if (op === "WORKDIR") {
      workdir = join(root, substitute(rest, vars));
      await mkdir(workdir, { recursive: true });
    } else if (op === "COPY") {
      const parts = rest.split(/\s+/);
      const dest = join(workdir, parts.at(-1) ?? ".");
      await mkdir(dest, { recursive: true });
      for (const source of parts.slice(0, -1)) {
        const path = join(context, source);
        if (ignored.has(source) || !existsSync(path)) {
          throw new Error(`COPY ${rest}: "${source}" not found in the build context`);
        }
        await cp(path, join(dest, source), { recursive: true });
      }
    } else if (op === "RUN") {
      try {
        // The build's environment only: the host's PATH (its node and npm stand in for the base
        // image's) and HOME (npm's registry settings and cache), nothing else of this process. npm
        // takes what its cache holds first, as the project's other installs do (engine/package.ts):
        // revalidating each package with the registry took minutes on the test machines.
        await run("/bin/sh", ["-c", rest], {
          cwd: workdir,
          env: {
            PATH: process.env.PATH ?? "",
            HOME: process.env.HOME ?? "/tmp",
            npm_config_prefer_offline: "true",
            ...vars,
          },
          maxBuffer: 64 * 1024 * 1024,
          timeout: 300_000,
        });
      } catch (error) {
        const { stderr = "" } = error as { stderr?: string };
        throw new Error(`RUN ${rest} failed:\n${stderr.slice(0, 4000)}`);
      }
    } else if (op === "ARG") {
      const [name = "", value = ""] = rest.split(/=(.*)/s);
      args[name] = buildArgs[name] ?? value;
    } else if (op === "ENV") {
      const [name = "", value = ""] = rest.split(/=(.*)/s);
      env[name] = substitute(value, vars);
    } else if (op === "CMD") {
      cmd = JSON.parse(rest) as string[];
    } else {
      throw new Error(`Dockerfile: ${op} is not an instruction this runner knows`);
    }
  }
  return { from, workdir, env, cmd };
}
