import { execFile, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { quote } from "shell-quote";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../../../service/index";
import { eventually } from "./harness";

/**
 * The real service's official Python library (`runpod`), unchanged, against this service: its
 * GraphQL helpers, its Endpoint client, and workers written with `runpod.serverless.start` that the
 * service launches from a `--handler` command line. The library is not on the registries CI reaches,
 * so this runs where `python3 -c "import runpod"` works: `pip install runpod`, or a checkout of
 * runpod-python on RUNPOD_PYTHON_PATH (a PYTHONPATH for the library and anything its imports need);
 * RUNPOD_PYTHON names another interpreter. Elsewhere it is skipped, and says so.
 *
 * Without PyPI (this project's machines reach npm and Debian only), a checkout and Debian's packages do:
 * - the library: `git archive` of github.com/runpod/runpod-python into /tmp/rp (no install needed);
 * - its imports: `apt-get install -y python3-aiohttp python3-requests python3-backoff python3-tqdm
 *   python3-colorama python3-click python3-prettytable python3-psutil python3-cpuinfo python3-tomli
 *   python3-tomlkit python3-paramiko python3-watchdog python3-cryptography python3-boto3 python3-fastapi
 *   python3-uvicorn` (they land in /usr/bin/python3, so RUNPOD_PYTHON=/usr/bin/python3 when python3 is
 *   another one, e.g. pyenv's);
 * - fixtures/python-stubs for what Debian lacks or has too old: `tqdm_loggable` and `aiohttp_retry`
 *   (just what the library calls), and a `sitecustomize.py` letting Debian's aiohttp 3.8 take the 3.9
 *   `ClientTimeout(ceil_threshold=)` the library's worker session passes;
 * - then, from the repository's root (absolute paths: workers run in their own directories):
 *   `RUNPOD_PYTHON=/usr/bin/python3 RUNPOD_PYTHON_PATH=/tmp/rp:$PWD/test/service/jobs/fixtures/python-stubs
 *   npx vitest run test/service/jobs/compat-runpod-python.test.ts`.
 * Fixture scripts must not share a name with a standard-library module: Python puts the script's own
 * directory first on sys.path, so a `concurrent.py` there replaced `concurrent` (asyncio imports
 * `concurrent.futures`) and every script failed to import the library.
 */
const PYTHON = process.env.RUNPOD_PYTHON ?? "python3";
const PYTHON_PATH = process.env.RUNPOD_PYTHON_PATH ?? "";
const FIXTURES = join(__dirname, "fixtures", "python-runpod");
const KEY = "rpk_python_compat_0123456789";
/** The Python handler examples/handlers/README.md shows. */
const EXAMPLE = resolve("examples/handlers/python/handler.py");

const pythonEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  ...(PYTHON_PATH && { PYTHONPATH: PYTHON_PATH }),
  PYTHONUNBUFFERED: "1",
});

/** What the library says of itself when it imports here; undefined when it does not (the suite is skipped). */
function probeLibrary(): { version: string; hasJobStop: boolean } | undefined {
  // job-stop (the worker's stop channel) came with 1.10.0; a checkout's version reads "unknown".
  const script = [
    "import runpod",
    "from runpod.serverless.modules import rp_scale",
    'print(runpod.__version__, hasattr(rp_scale.JobScaler, "stop_job"))',
  ].join("\n");
  const probe = spawnSync(PYTHON, ["-c", script], { env: pythonEnv(), encoding: "utf8", timeout: 30_000 });
  if (probe.status !== 0) return undefined;
  const [version = "", hasJobStop] = probe.stdout.trim().split(" ");
  return { version, hasJobStop: hasJobStop === "True" };
}

const library = probeLibrary();
const version = library?.version;
const title = version
  ? `compatibility: the Python runpod library (${version})`
  : `compatibility: the Python runpod library (skipped: ${PYTHON} cannot import runpod; pip install runpod, or set RUNPOD_PYTHON_PATH)`;

/** The command line (run by a POSIX shell) of a worker running `script` with the library, as an operator writes --handler. */
function workerCommand(script: string): string {
  const path = PYTHON_PATH ? `PYTHONPATH=${quote([PYTHON_PATH])} ` : "";
  return `${path}${quote([PYTHON, "-u", resolve(FIXTURES, script)])}`;
}

describe.skipIf(version === undefined)(title, () => {
  let service: RunningService;
  let out: Record<string, unknown>;

  beforeAll(async () => {
    service = await startService({
      apiKeys: [KEY],
      config: {
        jobs: {
          handlers: {
            "python/echo": workerCommand("handler.py"),
            "python/stream": workerCommand("stream.py"),
            "python/concurrent": workerCommand("concurrency.py"),
            "python/example": workerCommand(EXAMPLE),
            "python/refresh": workerCommand("refresh.py"),
          },
          workerOutput: "ignore",
        },
      },
    });
    // The whole user session runs in one Python process (client.py); its results are asserted below.
    const { stdout } = await promisify(execFile)(PYTHON, [join(FIXTURES, "client.py")], {
      env: {
        ...pythonEnv(),
        RUNPOD_API_BASE_URL: service.queueUrl,
        RUNPODKIT_TEST_KEY: KEY,
        RUNPODKIT_TEST_QUEUE: service.queueUrl,
      },
      timeout: 170_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
  }, 240_000);
  afterAll(async () => service?.close());

  it("creates templates and endpoints through its GraphQL helpers", () => {
    expect(out["template:py-echo"]).toMatchObject({
      id: expect.any(String),
      name: "py-echo",
      imageName: "python/echo",
      isServerless: true,
    });
    expect(out["endpoint:py-echo"]).toMatchObject({
      id: expect.any(String),
      name: "py-echo",
      gpuIds: "AMPERE_16",
      workersMin: 1,
      workersMax: 1,
    });
    expect(out.endpoints).toEqual(["py-concurrent", "py-echo", "py-example", "py-refresh", "py-stream"]);
  });

  it("its other GraphQL helpers: account, GPU types, registry auths, pods, an endpoint's template", () => {
    expect(out.get_user).toMatchObject({ id: expect.stringMatching(/^user_/) });
    expect(out.update_user_settings).toMatchObject({ pubKey: "ssh-ed25519 AAAAC3Nza user@host" });
    expect(out.get_gpu).toMatchObject({ id: expect.any(String), maxGpuCount: expect.any(Number) });
    const auth = out.registry_auth as { id: string };
    expect(auth).toEqual({ id: expect.any(String), name: "registry" });
    expect(out["registry_auth.updated"]).toEqual(auth);
    expect(out["registry_auth.deleted"]).toBeNull();
    const pod = out.pod as { id: string };
    expect(pod).toMatchObject({ imageName: "runpod/pytorch:2.1.0", env: ["A=1"] });
    expect(out["pod.get"]).toMatchObject({ id: pod.id, desiredStatus: "RUNNING", gpuCount: 1 });
    expect(out["pod.stop"]).toEqual({ id: pod.id, desiredStatus: "EXITED" });
    expect(out["pod.resume"]).toMatchObject({ id: pod.id, desiredStatus: "RUNNING" });
    expect(out["pod.terminate"]).toBeNull();
    expect(out.pods).toEqual([]);
    const endpoint = out["endpoint:py-echo"] as { id: string; templateId: string };
    expect(out.update_endpoint_template).toEqual({ id: endpoint.id, templateId: expect.any(String) });
    expect((out.update_endpoint_template as { templateId: string }).templateId).not.toBe(endpoint.templateId);
    expect(out.duplicate_template).toContain('a template named "py-echo" already exists');
  });

  it("the project's example Python handler (examples/handlers/python) answers its text reversed", () => {
    expect(out.example).toEqual({ text: "olleh" });
  });

  it("run_sync and run answer with the worker's output", () => {
    expect(out.run_sync).toEqual({ echo: { mode: "echo", x: 1 } });
    expect(out["run.output"]).toEqual({ echo: { mode: "echo", y: 2 } });
    expect(out["run.status"]).toBe("COMPLETED");
    expect(out["run.id"]).toMatch(/-u1$/);
  });

  it("a handler's exception and a returned error fail the job with the library's error payload", () => {
    const failed = out["fail.final"] as { status: string; error: string };
    expect(failed.status).toBe("FAILED");
    expect(JSON.parse(failed.error)).toMatchObject({
      error_type: "<class 'ValueError'>",
      error_message: "boom from python",
      error_traceback: expect.stringContaining("ValueError: boom from python"),
    });
    expect(out["error.final"]).toMatchObject({ status: "FAILED", error: "handled error" });
  });

  it("progress_update shows in /status while the job runs", () => {
    const seen = out["progress.seen"] as [string, unknown][];
    expect(seen).toContainEqual(["IN_PROGRESS", { step: 1 }]);
    expect(seen.at(-1)).toEqual(["COMPLETED", { done: true }]);
  });

  it("cancel, purge_queue and health", async () => {
    expect(out.cancel).toMatchObject({ status: "CANCELLED" });
    expect(out["cancel.status"]).toBe("CANCELLED");
    expect(out.purge).toEqual({ removed: 0, status: "completed" });
    expect(out.health).toMatchObject({
      jobs: { completed: 3, failed: 2, inQueue: 0 },
      workers: expect.any(Object),
    });
  });

  it("a generator handler streams its chunks and returns them aggregated", () => {
    const chunks = [0, 1, 2, 3].map((chunk) => ({ chunk }));
    expect(out.stream).toEqual(chunks);
    expect(out["stream.output"]).toEqual(chunks);
    expect(out["stream.run_sync"]).toEqual(chunks.slice(0, 2));
  });

  it("refresh_worker: each job runs in a fresh worker process, the flag not in the output", () => {
    const [first, second] = out.refresh as { pid: number }[];
    expect(Object.keys(first ?? {})).toEqual(["pid"]);
    expect(second?.pid).toEqual(expect.any(Number));
    expect(second?.pid).not.toBe(first?.pid);
  });

  it("an async handler with a concurrency modifier runs several jobs at once (job-take-batch)", () => {
    const results = out.concurrent as { index: number; started: number; ended: number }[];
    expect(results.map((result) => result.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // One worker, four at a time: some job started before another one ended.
    const overlapping = results.filter((a) =>
      results.some((b) => b !== a && b.started < a.ended && a.started < b.ended),
    );
    expect(overlapping.length).toBeGreaterThanOrEqual(4);
  });

  it("its asyncio client (AsyncioEndpoint) runs, streams, cancels and purges", () => {
    expect(out["asyncio.output"]).toEqual({ echo: { mode: "echo", z: 3 } });
    expect(out["asyncio.status"]).toBe("COMPLETED");
    expect(out["asyncio.stream"]).toEqual([0, 1, 2].map((chunk) => ({ chunk })));
    expect(out["asyncio.cancel"]).toMatchObject({ status: "CANCELLED" });
    const refused = (out["asyncio.health"] as { library_refused?: string }).library_refused;
    if (refused !== undefined) {
      // Libraries before 1.8 build health's and purge's URLs without the base and never send them.
      expect(refused).toMatch(/^[a-z0-9]+\/health$/);
    } else {
      expect(out["asyncio.health"]).toMatchObject({ jobs: { inQueue: 0 } });
      expect(out["asyncio.purge"]).toEqual({ removed: 0, status: "completed" });
    }
  });

  const logLines = async () => {
    const endpoint = (out["endpoint:py-echo"] as { id: string }).id;
    const response = await fetch(`${service.queueUrl}/v2/${endpoint}/logs`, {
      headers: { authorization: KEY },
    });
    return (await response.text())
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { requestId: string | null; message: string });
  };

  it("the worker's lines are kept in the endpoint's logs under the job's id", async () => {
    expect(await logLines()).toContainEqual(
      expect.objectContaining({ requestId: out["run.id"], message: "hello from the python handler" }),
    );
  });

  it.skipIf(!library?.hasJobStop)(
    "the cancelled job's stop reaches the worker (its job-stop long-poll; 1.10.0+)",
    async () => {
      // The handler sleeps in the worker's event loop: the library acts on the stop once it wakes.
      const stopped = await eventually(
        async () =>
          (await logLines()).find(
            (line) => line.requestId === out["cancel.id"] && line.message === "Job stopped.",
          ),
        20_000,
      );
      expect(stopped).toBeDefined();
    },
  );
});

/** The standard library's top-level module names, from any Python 3.10+ here (undefined: none). */
function stdlibModules(): Set<string> | undefined {
  const probe = spawnSync(PYTHON, ["-c", "import sys; print(' '.join(sorted(sys.stdlib_module_names)))"], {
    encoding: "utf8",
    timeout: 30_000,
  });
  return probe.status === 0 ? new Set(probe.stdout.trim().split(" ")) : undefined;
}
const stdlib = stdlibModules();

// Runs wherever a Python is, library or not: a fixture that shadows a standard module breaks every
// script of the directory (Python puts it first on sys.path), as concurrent.py once did.
describe.skipIf(stdlib === undefined)("the Python compatibility fixtures", () => {
  it("no fixture script is named like a standard-library module", () => {
    const scripts = readdirSync(FIXTURES).filter((name) => name.endsWith(".py"));
    expect(scripts.length).toBeGreaterThan(0);
    expect(scripts.filter((name) => stdlib?.has(name.slice(0, -3)))).toEqual([]);
  });
});
