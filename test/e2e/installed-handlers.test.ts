/**
 * A user's TypeScript handler run by the installed package's CLI, as a newcomer sets it up: `npm init
 * -y` (whose package.json says "type": "commonjs"), a handler.ts written with `export`, the package
 * installed from its tarball (which ships no tsx), `npx runpodkit serve --handler ...`. Without tsx in
 * the project Node's type stripping loads it and refuses ES module syntax in a CommonJS package: the
 * worker says why and what to change, in the service's output and the endpoint's logs. With tsx in the
 * user's project the same file runs; a .mts runs without it. A --handler path with no file is refused
 * at start.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { eventually } from "../service/jobs/harness";

const KEY = "installed-handlers-key";
const TIMEOUT = 300_000;

let cli = "";
let userDir = "";
let running: ChildProcess | null = null;

beforeAll(async () => {
  const program = await installProgram(join(PROJECT_ROOT, "examples", "quickstart"), await packProject());
  cli = join(program.dir, "node_modules", "runpodkit", "dist", "service", "main.js");
}, TIMEOUT);

afterEach(async () => {
  running?.kill("SIGKILL");
  running = null;
  if (userDir) await rm(userDir, { recursive: true, force: true });
  userDir = "";
});

afterAll(() => running?.kill("SIGKILL"));

/** A user's project as `npm init -y` makes it, with `files` written into it. */
async function userProject(files: Record<string, string>): Promise<string> {
  userDir = await mkdtemp(join(tmpdir(), "runpodkit-user-"));
  await writeFile(
    join(userDir, "package.json"),
    `${JSON.stringify({ name: "my-worker", version: "1.0.0", type: "commonjs" }, null, 2)}\n`,
  );
  for (const [name, text] of Object.entries(files)) await writeFile(join(userDir, name), text);
  return userDir;
}

const HANDLER = `interface Input { text: string }
export async function handler(job: { id: string; input: Input }) {
  return { upper: job.input.text.toUpperCase() };
}
`;

interface Served {
  queue: string;
  output: () => string;
}

/** `runpodkit serve` of the installed package, started in `dir`; resolves with its queue URL once ready. */
function serve(dir: string, handler: string): Promise<Served> {
  const child = spawn(
    process.execPath,
    [cli, "serve", "--port", "0", "--data", ":memory:", "--handler", `acme/worker=${handler}`],
    { cwd: dir, env: { PATH: process.env.PATH ?? "", RUNPODKIT_API_KEYS: KEY } },
  );
  running = child;
  let output = "";
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const queue = /queue=(\S+)/.exec(output)?.[1];
      if (queue) resolve({ queue, output: () => output });
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) =>
      reject(new Error(`the CLI exited (${code}) before it was ready:\n${output}`)),
    );
  });
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  if (!reply.ok) throw new Error(`${method} ${path}: ${reply.status} ${text}`);
  return text === "" ? null : JSON.parse(text);
}

/** A template of image acme/worker and an endpoint with one worker always up; its id. */
async function deployWorker(queue: string): Promise<string> {
  const template = (await call(queue, "POST", "/v1/templates", {
    name: "worker",
    imageName: "acme/worker:1",
    isServerless: true,
  })) as { id: string };
  const endpoint = (await call(queue, "POST", "/v1/endpoints", {
    name: "worker",
    templateId: template.id,
    workersMin: 1,
    workersMax: 1,
  })) as { id: string };
  return endpoint.id;
}

describe("the installed CLI runs a user's TypeScript handler", () => {
  it(
    "ES module syntax in a CommonJS project, no tsx: the worker says what to change, in the output and the logs",
    async () => {
      const dir = await userProject({ "handler.ts": HANDLER });
      const served = await serve(dir, "./handler.ts");
      const endpointId = await deployWorker(served.queue);
      const hint = `It is written as an ES module (import/export) but ${join(dir, "package.json")} sets "type": "commonjs", so Node runs it as CommonJS: rename it handler.mts, or set "type": "module" in that package.json, or install tsx in the handler's project`;
      await eventually(() => (served.output().includes(hint) ? true : undefined), 30_000);
      expect(served.output()).toContain(
        `runpodkit worker: the handler module ${join(dir, "handler.ts")} did not load: Unexpected token 'export'`,
      );
      const logs = (await fetch(`${served.queue}/v2/${endpointId}/logs`, {
        headers: { authorization: `Bearer ${KEY}` },
      }).then((r) => r.text())) as string;
      expect(logs).toContain("rename it handler.mts");
      // The job waits in the queue for a worker that can start, as on the real service.
      const { id } = (await call(served.queue, "POST", `/v2/${endpointId}/run`, {
        input: { text: "x" },
      })) as {
        id: string;
      };
      expect(await call(served.queue, "GET", `/v2/${endpointId}/status/${id}`)).toMatchObject({
        status: "IN_QUEUE",
      });
    },
    TIMEOUT,
  );

  it(
    "the same project with tsx installed runs the same file through it",
    async () => {
      const dir = await userProject({ "handler.ts": HANDLER });
      // As `npm install --save-dev tsx` would (its own dependencies resolve from where it really is).
      await mkdir(join(dir, "node_modules"));
      await symlink(join(PROJECT_ROOT, "node_modules", "tsx"), join(dir, "node_modules", "tsx"), "dir");
      const served = await serve(dir, "./handler.ts");
      const endpointId = await deployWorker(served.queue);
      const done = await call(served.queue, "POST", `/v2/${endpointId}/runsync`, { input: { text: "tsx" } });
      expect(done).toMatchObject({ status: "COMPLETED", output: { upper: "TSX" } });
    },
    TIMEOUT,
  );

  it(
    "a .mts handler runs on Node's own type stripping, without tsx",
    async () => {
      const dir = await userProject({
        "handler.mts": `import type { HandlerContext } from "runpodkit/worker";\n${HANDLER.replace(
          "job: { id: string; input: Input })",
          "job: { id: string; input: Input }, _context: HandlerContext)",
        )}`,
      });
      const served = await serve(dir, "./handler.mts");
      const endpointId = await deployWorker(served.queue);
      const done = await call(served.queue, "POST", `/v2/${endpointId}/runsync`, { input: { text: "mts" } });
      expect(done).toMatchObject({ status: "COMPLETED", output: { upper: "MTS" } });
      expect(served.output()).not.toContain("did not load");
    },
    TIMEOUT,
  );

  it(
    "a --handler module path with no file is refused at start, naming the flag and the path",
    async () => {
      const dir = await userProject({ "handler.ts": HANDLER });
      const refused = await serve(dir, "./hander.ts").then(
        () => null,
        (error: unknown) => String(error),
      );
      expect(refused).toContain(
        `runpodkit: --handler acme/worker=./hander.ts: ${join(dir, "hander.ts")} does not exist (a module path is taken from the directory the service starts in; cmd:<command line> runs a command instead)`,
      );
    },
    TIMEOUT,
  );
});
