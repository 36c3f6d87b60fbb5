/**
 * README "The local service" (in-process): `startService` and `ManualClock` both come from the
 * `runpodkit/service` entry (service/index.ts, what package.json exports), and the service started
 * with that clock counts its time rules on it: a job's `ttl` ends it when the clock is advanced.
 */
import { afterAll, describe, expect, it } from "vitest";
import { JobClient, NotFoundError, RestClient } from "../../sdk/index";
import { ManualClock, type RunningService, startService } from "../../service/index";

describe("runpodkit/service with a ManualClock", () => {
  let service: RunningService | undefined;
  const clock = new ManualClock(); // starts at 2026-01-01T00:00:00Z
  afterAll(() => service?.close());

  it("starts the service on the clock: records carry its time and a job's ttl runs out when it is advanced", async () => {
    service = await startService({ apiKeys: ["entry-clock-key"], clock });
    const rest = new RestClient({ apiKey: "entry-clock-key", baseUrl: service.restUrl });
    const template = await rest.templates.create({
      name: "entry-clock",
      imageName: "runpodkit/echo:1",
      isServerless: true,
    });
    // workersMax 0: no worker ever takes the job, so only the clock can end it.
    const endpoint = await rest.endpoints.create({ templateId: template.id, workersMin: 0, workersMax: 0 });
    expect(endpoint.createdAt).toBe("2026-01-01T00:00:00.000Z");

    const jobs = new JobClient({
      apiKey: "entry-clock-key",
      endpointId: endpoint.id,
      baseUrl: `${service.queueUrl}/v2`,
    });
    const { id } = await jobs.run({ input: { n: 1 }, policy: { ttl: 10_000 } });
    await clock.advance(9_000);
    expect((await jobs.status(id)).status).toBe("IN_QUEUE");
    await clock.advance(1_001);
    await expect(jobs.status(id)).rejects.toBeInstanceOf(NotFoundError);
    await Promise.all([jobs.close(), rest.close()]);
  });

  it("workersStandby is stored but starts no worker (the Endpoint page says the scaler does not use it)", async () => {
    const rest = new RestClient({ apiKey: "entry-clock-key", baseUrl: service!.restUrl });
    const template = await rest.templates.create({
      name: "entry-standby",
      imageName: "runpodkit/echo:1",
      isServerless: true,
    });
    const endpoint = await rest.endpoints.create({ templateId: template.id, workersMin: 0, workersMax: 3 });
    const saved = await fetch(service!.graphqlUrl, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer entry-clock-key" },
      body: JSON.stringify({
        query: `mutation { saveEndpoint(input: {id: "${endpoint.id}", name: "entry-standby", templateId: "${template.id}", gpuIds: "AMPERE_16", workersMin: 0, workersMax: 3, workersStandby: 3}) { id workersStandby } }`,
      }),
    }).then((r) => r.json() as Promise<{ data?: { saveEndpoint?: { workersStandby?: number } } }>);
    expect(saved.data?.saveEndpoint?.workersStandby).toBe(3);
    const workers = async () =>
      (await fetch(`${service!.queueUrl}/v2/${endpoint.id}/workers`, {
        headers: { authorization: "Bearer entry-clock-key" },
      }).then((r) => r.json())) as { workers: unknown[] };
    // Well past a cold start (1 s) and a scaling check: a standby count that started workers would show them.
    await clock.advance(60_000);
    expect(await workers()).toEqual({ workers: [] });
    await rest.close();
  });
});
