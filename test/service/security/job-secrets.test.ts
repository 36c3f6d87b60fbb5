import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { withService } from "../../helpers/service";
import { clients } from "../management/client";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-job-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HANDLER = resolve("test/service/security/fixtures/s3-handler.ts");
const ACCESS_SECRET = "s3_access_SECRET_4d3c2b1a0f";
const S3_CONFIG = {
  accessId: "AKIA_TEST_ID",
  accessSecret: ACCESS_SECRET,
  bucketName: "results-bucket",
  endpointUrl: "https://s3.example.com",
};

/** Whether the store file or its WAL and shared-memory files hold `text`, as a copy of them would. */
function storeHolds(data: string, text: string): boolean {
  return [data, `${data}-wal`, `${data}-shm`]
    .filter((file) => existsSync(file))
    .some((file) => readFileSync(file).includes(Buffer.from(text)));
}

const config = { jobs: { handlers: { "acme/s3": HANDLER } } };

/** Scales the endpoint up and waits for the queued job: what its worker was handed of s3Config. */
async function runQueued(data: string, endpointId: string, jobId: string): Promise<unknown> {
  const service = await withService({ data, config });
  try {
    const api = clients(service);
    const scaled = await api.rest("PATCH", `/endpoints/${endpointId}`, { workersMax: 1 });
    expect(scaled.status).toBe(200);
    const done = await api.send<{ status: string; output: unknown }>(
      `${service.queueUrl}/v2/${endpointId}/status-sync/${jobId}?wait=60000`,
      { headers: { authorization: service.apiKey } },
    );
    expect(done.body.status).toBe("COMPLETED");
    return done.body.output;
  } finally {
    await service.close();
  }
}

const HANDED = {
  bucketName: "results-bucket",
  accessSecretSha256: createHash("sha256").update(ACCESS_SECRET).digest("hex"),
};

describe("a job's s3Config at rest", () => {
  it("its bucket secret key is sealed in the store, and a restarted service still hands it to the worker", async () => {
    const data = join(dir, "jobs.sqlite");
    const { endpointId, jobId } = await queueJob(data);
    expect(storeHolds(data, ACCESS_SECRET)).toBe(false);
    expect(await runQueued(data, endpointId, jobId)).toEqual(HANDED);
    expect(storeHolds(data, ACCESS_SECRET)).toBe(false);
  });

  it("a job queued by a service that wrote s3Config as JSON is still run with it", async () => {
    const data = join(dir, "legacy.sqlite");
    const { endpointId, jobId } = await queueJob(data);
    // As a service before sealing left the row.
    const db = new DatabaseSync(data);
    db.prepare("UPDATE jobs SET s3_config = ? WHERE id = ?").run(JSON.stringify(S3_CONFIG), jobId);
    db.close();
    expect(await runQueued(data, endpointId, jobId)).toEqual(HANDED);
  });
});

/** A service with an endpoint no worker may run on, and one job queued on it with S3_CONFIG; then stopped. */
async function queueJob(data: string): Promise<{ endpointId: string; jobId: string }> {
  const first = await withService({ data, config });
  let endpointId: string;
  let jobId: string;
  try {
    const api = clients(first);
    const template = await api.rest<{ id: string }>("POST", "/templates", {
      name: "s3-worker",
      imageName: "acme/s3",
      isServerless: true,
    });
    expect(template.status).toBe(200);
    // No worker may run: the job stays queued in the store across the restart.
    const endpoint = await api.rest<{ id: string }>("POST", "/endpoints", {
      name: "s3-endpoint",
      templateId: template.body.id,
      workersMin: 0,
      workersMax: 0,
    });
    expect(endpoint.status).toBe(200);
    endpointId = endpoint.body.id;
    const run = await api.send<{ id: string; status: string }>(`${first.queueUrl}/v2/${endpointId}/run`, {
      method: "POST",
      headers: { authorization: first.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ input: { n: 1 }, s3Config: S3_CONFIG }),
    });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe("IN_QUEUE");
    jobId = run.body.id;
    // An accepted /run is on disk before its reply: the row is there, its s3Config is not readable.
    expect(storeHolds(data, jobId)).toBe(true);
    expect(storeHolds(data, "results-bucket")).toBe(false);
    expect(storeHolds(data, ACCESS_SECRET)).toBe(false);
  } finally {
    await first.close();
  }
  return { endpointId, jobId };
}
