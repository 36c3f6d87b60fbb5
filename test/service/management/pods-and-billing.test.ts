import type { DatabaseSync } from "node:sqlite";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BillingRecords, NetworkVolumeBillingRecords } from "../../../sdk/schemas/billing";
import { type Pod, PodList } from "../../../sdk/schemas/pod";
import { buildApp } from "../../../service/app";
import { ManualClock } from "../../../service/clock";
import { openDatabase } from "../../../service/db";
import { Accounts, accountIdOf } from "../../../service/edge/auth";
import { EventBus } from "../../../service/event-bus";
import { createSequentialIds } from "../../../service/ids";
import { DEFAULT_CONFIG } from "../../../service/index";
import { Management } from "../../../service/management";
import { WORKER_USAGE_RETENTION_MS, WorkerUsageLedger } from "../../../service/management/model/billing";
import { managementMigrations } from "../../../service/management/store/migrations";
import { openSealer } from "../../../service/management/store/sealing";
import { ManagementStore } from "../../../service/management/store/store";
import type { ServiceEvents, WorkerPod } from "../../../service/planes";

/*
 * The management plane reads workers only through the WorkerRegistry it is built with. Here the job plane is a fixed list of
 * workers that the test sets, so pods and billing can be checked against exact times and prices.
 */
const KEY = "pods-billing-key";
const OTHER = "pods-billing-other";
const HOUR = 3_600_000;

let app: FastifyInstance;
let db: DatabaseSync;
let clock: ManualClock;
const workers: WorkerPod[] = [];

async function call<T>(method: "GET" | "POST" | "PATCH" | "DELETE", url: string, body?: unknown, key = KEY) {
  const reply = await app.inject({
    method,
    url: `/v1${url}`,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
  });
  return { status: reply.statusCode, body: reply.body ? (reply.json() as T) : (undefined as T) };
}

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 0, 1));
  db = openDatabase(":memory:", managementMigrations);
  const store = new ManagementStore(db, openSealer(":memory:"));
  const management = new Management({
    store,
    clock,
    ids: createSequentialIds(),
    events: new EventBus<ServiceEvents>(),
    workers: {
      list: (accountId, endpointId) =>
        workers.filter((w) => w.accountId === accountId && (!endpointId || w.endpointId === endpointId)),
    },
    usage: new WorkerUsageLedger({ store, clock }),
  });
  // No job plane: its routes are empty and it has nothing to stop.
  const jobs = { routes: async () => {}, release: () => {}, stop: async () => {} };
  app = buildApp({
    accounts: new Accounts([KEY, OTHER]),
    management,
    jobs,
    managementBodyLimit: DEFAULT_CONFIG.managementBodyLimit,
  });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  db.close();
});

describe("pods and billing from the job plane's workers", () => {
  let endpointId: string;
  let templateId: string;
  const accountId = () => accountIdOf(KEY);

  it("lists serverless workers as pods with their endpointId, only with includeWorkers", async () => {
    templateId = (
      await call<{ id: string }>("POST", "/templates", {
        name: "w",
        imageName: "img:7",
        isServerless: true,
        env: { T: "1" },
      })
    ).body.id;
    const endpoint = await call<{ id: string }>("POST", "/endpoints", {
      templateId,
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      gpuCount: 2,
      workersMax: 2,
    });
    endpointId = endpoint.body.id;
    const start = clock.now();
    workers.push(
      {
        id: "worker00000001",
        accountId: accountId(),
        endpointId,
        desiredStatus: "RUNNING",
        imageName: "img:7",
        templateId,
        gpuCount: 2,
        createdAt: start,
        lastStartedAt: start,
        state: "idle",
      },
      {
        id: "worker00000002",
        accountId: accountId(),
        endpointId,
        desiredStatus: "EXITED",
        imageName: "img:7",
        templateId,
        gpuCount: 2,
        createdAt: start,
        lastStartedAt: null,
        state: "idle",
      },
    );

    expect((await call("GET", "/pods")).body).toEqual([]);
    const pods = PodList.parse((await call("GET", "/pods?includeWorkers=true")).body);
    expect(pods.map((p) => [p.id, p.endpointId, p.desiredStatus])).toEqual([
      ["worker00000001", endpointId, "RUNNING"],
      ["worker00000002", endpointId, "EXITED"],
    ]);
    expect(pods[0]).toMatchObject({ image: "img:7", templateId, gpu: { count: 2 }, env: { T: "1" } });
    const running = await call<Pod[]>("GET", "/pods?includeWorkers=true&desiredStatus=RUNNING");
    expect(running.body.map((p) => p.id)).toEqual(["worker00000001"]);
    const one = await call<Pod>("GET", "/pods/worker00000002");
    expect(one.body).toMatchObject({ id: "worker00000002", endpointId, desiredStatus: "EXITED" });
    expect((await call("GET", "/pods/worker00000002", undefined, OTHER)).status).toBe(404);
    expect((await call("GET", "/pods?includeWorkers=true", undefined, OTHER)).body).toEqual([]);

    const withWorkers = await call<{ workers: Pod[] }>("GET", `/endpoints/${endpointId}?includeWorkers=true`);
    expect(withWorkers.body.workers.map((w) => w.id)).toEqual(["worker00000001", "worker00000002"]);
    const gql = await app.inject({
      method: "POST",
      url: `/graphql?api_key=${KEY}`,
      payload: { query: `{ myself { endpoints { pods { id desiredStatus } } } }` },
    });
    expect(gql.json()).toEqual({
      data: {
        myself: {
          endpoints: [
            {
              pods: [
                { id: "worker00000001", desiredStatus: "RUNNING" },
                { id: "worker00000002", desiredStatus: "EXITED" },
              ],
            },
          ],
        },
      },
    });
  });

  it("bills running worker time per bucket at the GPU's hourly price times its GPU count", async () => {
    await clock.advance(30 * HOUR); // 2026-01-01T00:00 -> 2026-01-02T06:00
    const reply = await call(
      "GET",
      "/billing/endpoints?startTime=2026-01-01T00:00:00Z&endTime=2026-01-03T00:00:00Z",
    );
    const records = BillingRecords.parse(reply.body);
    // RTX 4090 = ADA_24 pool, $1.12 per GPU-hour, 2 GPUs; the EXITED worker is not billed.
    expect(records).toEqual([
      { amount: 53.76, timeBilledMs: 24 * HOUR, time: "2026-01-01T00:00:00.000Z", endpointId },
      { amount: 13.44, timeBilledMs: 6 * HOUR, time: "2026-01-02T00:00:00.000Z", endpointId },
    ]);
    const byPod = BillingRecords.parse(
      (await call("GET", "/billing/pods?bucketSize=month&grouping=podId&startTime=2026-01-01T00:00:00Z"))
        .body,
    );
    expect(byPod).toEqual([
      { amount: 67.2, timeBilledMs: 30 * HOUR, time: "2026-01-01T00:00:00.000Z", podId: "worker00000001" },
    ]);
    const filteredOut = await call(
      "GET",
      `/billing/endpoints?templateId=othertemplate&startTime=2026-01-01T00:00:00Z`,
    );
    expect(filteredOut.body).toEqual([]);
    expect(
      (await call("GET", "/billing/endpoints?startTime=2026-01-01T00:00:00Z", undefined, OTHER)).body,
    ).toEqual([]);
  });

  it("bills network volumes for every size they had, even after deletion", async () => {
    const start = clock.now(); // 2026-01-02T06:00
    const volume = await call<{ id: string }>("POST", "/networkvolumes", {
      name: "v",
      size: 100,
      dataCenterId: "EU-RO-1",
    });
    await clock.advance(18 * HOUR); // to 2026-01-03T00:00
    await call("PATCH", `/networkvolumes/${volume.body.id}`, { size: 200 });
    await clock.advance(12 * HOUR);
    expect((await call("DELETE", `/networkvolumes/${volume.body.id}`)).status).toBe(204);
    await clock.advance(24 * HOUR);
    const records = NetworkVolumeBillingRecords.parse(
      (await call("GET", `/billing/networkvolumes?startTime=${new Date(start).toISOString()}`)).body,
    );
    const perGbHour = 0.07 / (30 * 24);
    expect(records.map((r) => [r.time, r.diskSpaceBilledGb])).toEqual([
      ["2026-01-02T00:00:00.000Z", 100],
      ["2026-01-03T00:00:00.000Z", 200],
    ]);
    expect(records[0]?.amount).toBeCloseTo(100 * 18 * perGbHour, 5);
    expect(records[1]?.amount).toBeCloseTo(200 * 12 * perGbHour, 5);
  });
  it("filters workers by their endpoint's GPU type and data centers; includes its volume and machine", async () => {
    const ids = async (query: string) =>
      (await call<Pod[]>("GET", `/pods?includeWorkers=true&${query}`)).body.map((p) => p.id);
    const both = ["worker00000001", "worker00000002"];
    expect(await ids("gpuTypeId=NVIDIA%20GeForce%20RTX%204090")).toEqual(both);
    expect(await ids("gpuTypeId=NVIDIA%20A40")).toEqual([]);
    expect(await ids("dataCenterId=EU-RO-1")).toEqual(both);
    expect(await ids("cpuFlavorId=cpu3c")).toEqual([]);
    await call("PATCH", `/endpoints/${endpointId}`, { dataCenterIds: ["US-TX-3"] });
    expect(await ids("dataCenterId=EU-RO-1")).toEqual([]);
    const volume = await call<{ id: string }>("POST", "/networkvolumes", {
      name: "wv",
      size: 5,
      dataCenterId: "US-TX-3",
    });
    await call("PATCH", `/endpoints/${endpointId}`, { networkVolumeId: volume.body.id });
    const one = await call<Pod>(
      "GET",
      "/pods/worker00000001?includeNetworkVolume=true&includeMachine=true&includeSavingsPlans=true",
    );
    expect(one.body).toMatchObject({
      networkVolume: { id: volume.body.id, name: "wv", size: 5, dataCenterId: "US-TX-3" },
      machine: { gpuTypeId: "NVIDIA GeForce RTX 4090", gpuDisplayName: "RTX 4090" },
      savingsPlans: [],
    });
    await call("PATCH", `/endpoints/${endpointId}`, {
      networkVolumeId: null,
      dataCenterIds: ["EU-RO-1", "US-TX-3"],
    });
  });
});

// Last in this file: it moves the shared clock past the retention.
describe("billed time over a long run", () => {
  it("rented pods' periods and volumes' past sizes are kept for the retention, then deleted", async () => {
    const count = (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    const podsBefore = count("mgmt_pod_usage");
    const volumesBefore = count("mgmt_volume_usage");
    const start = clock.now();
    const pod = await call<{ id: string }>("POST", "/pods", {
      name: "long-run",
      imageName: "repo/train:1",
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      dataCenterIds: ["US-TX-3"],
    });
    expect(pod.status).toBe(200);
    const volume = await call<{ id: string }>("POST", "/networkvolumes", {
      name: "long-run",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    await clock.advance(HOUR);
    await call("POST", `/pods/${pod.body.id}/stop`);
    await call("PATCH", `/networkvolumes/${volume.body.id}`, { size: 20 });
    expect(count("mgmt_pod_usage")).toBe(podsBefore + 1);
    expect(count("mgmt_volume_usage")).toBe(volumesBefore + 2);
    const range = `startTime=${new Date(start).toISOString()}&endTime=${new Date(start + 2 * HOUR).toISOString()}`;
    const billedPod = async () =>
      BillingRecords.parse((await call("GET", `/billing/pods?${range}&grouping=podId`)).body).filter(
        (r) => r.podId === pod.body.id,
      );
    expect(await billedPod()).toHaveLength(1);
    // Within the retention they stay; past it the next stop, resize or delete deletes every ended one
    // (they were kept for good: a service renting pods all year grew its table for every period).
    await clock.advance(WORKER_USAGE_RETENTION_MS - HOUR);
    await call("DELETE", `/pods/${pod.body.id}`);
    expect(count("mgmt_pod_usage")).toBe(podsBefore + 1);
    await clock.advance(2 * HOUR);
    await call("PATCH", `/networkvolumes/${volume.body.id}`, { size: 30 });
    expect(count("mgmt_pod_usage")).toBe(0);
    // The volume's current size is still billed until now; its sizes that ended are gone.
    expect(
      db.prepare("SELECT size_gb AS size FROM mgmt_volume_usage WHERE volume_id = ?").all(volume.body.id),
    ).toEqual([{ size: 20 }, { size: 30 }]);
    expect(await billedPod()).toEqual([]);
  });
});
