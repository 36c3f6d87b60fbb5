import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { onTestFinished } from "vitest";
import { LogEntry } from "../../../sdk/schemas/observe";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { type Harness, KEY } from "../jobs/harness";

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const CLI = resolve("service/main.ts");

/**
 * `runpodkit logs <args>` from the sources against the job API at `baseUrl` (…/v2), the key in
 * RUNPOD_API_KEY ("": the variable unset), with what it printed and its exit code as they come.
 * SIGKILLed after the test that started it, should it still run (a `--follow`, or a regression).
 */
export function logsCli(baseUrl: string, args: string[], key = KEY) {
  const child = spawn(process.execPath, ["--import", LOADER, CLI, "logs", ...args], {
    env: {
      PATH: process.env.PATH ?? "",
      ...(key === "" ? {} : { RUNPOD_API_KEY: key }),
      RUNPOD_BASE_URL: baseUrl,
    },
  });
  const seen = { stdout: "", stderr: "", code: null as number | null };
  child.stdout.on("data", (chunk) => {
    seen.stdout += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    seen.stderr += String(chunk);
  });
  const exited = new Promise<void>((done) =>
    child.once("exit", (code) => {
      seen.code = code;
      done();
    }),
  );
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  return { child, seen, exited };
}

/** The entries of a logs reply or of `runpodkit logs --json`: one JSON entry per line. */
export const entriesOf = (text: string) =>
  text
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => LogEntry.parse(JSON.parse(line)));

/** A /runsync on the harness that must complete; the job's id. */
export async function runsyncCompleted(h: Harness, ep: EndpointRecord, input: unknown): Promise<string> {
  const reply = await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input } });
  if ((reply.body as { status?: unknown }).status !== "COMPLETED")
    throw new Error(`/runsync did not complete: ${reply.text}`);
  return (reply.body as { id: string }).id;
}
