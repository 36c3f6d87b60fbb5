import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Cli, startCli } from "./cli";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = "rpk_crash_alpha_0123456789abcdef";
const OTHER = "rpk_crash_beta_fedcba9876543210";
const ENV = {
  RUNPODKIT_API_KEYS: `${KEY},${OTHER}`,
  RUNPODKIT_STORE_KEY: randomBytes(32).toString("hex"),
};

async function call(base: string, method: string, path: string, key: string, body?: unknown) {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  return { status: reply.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

interface Acked {
  jobs: { key: string; endpointId: string; id: string }[];
  templates: { key: string; id: string; secret: string }[];
  volumes: { key: string; id: string }[];
}

describe("crash durability", () => {
  it("every acknowledged job and resource is present after SIGKILL under concurrent load and a restart", async () => {
    const data = join(dir, "store.sqlite");
    const args = ["--data", data];
    let cli: Cli = startCli(args, ENV);
    const acked: Acked = { jobs: [], templates: [], volumes: [] };
    try {
      const { restUrl, queueUrl } = await cli.ready;
      const endpoints = new Map<string, string>();
      for (const key of [KEY, OTHER]) {
        const template = await call(restUrl, "POST", "/templates", key, {
          name: "crash-echo",
          imageName: "runpodkit/echo",
          isServerless: true,
        });
        const endpoint = await call(restUrl, "POST", "/endpoints", key, {
          templateId: template.body.id,
          workersMin: 0,
          workersMax: 1,
        });
        expect(endpoint.status).toBe(200);
        endpoints.set(key, String(endpoint.body.id));
      }

      // Concurrent load, never awaited to an end: /run from both accounts, REST creates of templates
      // (each with a secret env value) and network volumes. Only 2xx replies count as acknowledged.
      let stopped = false;
      let n = 0;
      const runLoop = async (key: string) => {
        const endpointId = endpoints.get(key) as string;
        while (!stopped) {
          const i = n++;
          const reply = await call(queueUrl, "POST", `/v2/${endpointId}/run`, key, { input: { i } });
          if (reply.status === 200) acked.jobs.push({ key, endpointId, id: String(reply.body.id) });
        }
      };
      const templateLoop = async (key: string) => {
        while (!stopped) {
          const i = n++;
          const secret = `secret-${i}-${randomBytes(4).toString("hex")}`;
          const reply = await call(restUrl, "POST", "/templates", key, {
            name: `crash-${i}`,
            imageName: "runpodkit/echo",
            isServerless: true,
            env: { TOKEN: secret },
          });
          if (reply.status === 200) acked.templates.push({ key, id: String(reply.body.id), secret });
        }
      };
      const volumeLoop = async (key: string) => {
        while (!stopped) {
          const i = n++;
          const reply = await call(restUrl, "POST", "/networkvolumes", key, {
            name: `crash-${i}`,
            size: 10,
            dataCenterId: "EU-RO-1",
          });
          if (reply.status === 200) acked.volumes.push({ key, id: String(reply.body.id) });
        }
      };
      const loops = [
        ...[KEY, OTHER, KEY, OTHER, KEY, OTHER].map(runLoop),
        ...[KEY, OTHER].map(templateLoop),
        volumeLoop(KEY),
      ].map((loop) => loop.catch(() => undefined)); // in flight when the service dies: not acknowledged

      // Killed mid-load, once enough has been acknowledged, with requests still in flight.
      while (acked.jobs.length < 200 || acked.templates.length < 20 || acked.volumes.length < 10) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      cli.child.kill("SIGKILL");
      expect((await cli.exited).signal).toBe("SIGKILL");
      stopped = true;
      await Promise.all(loops);

      cli = startCli(args, ENV);
      const again = await cli.ready;
      const missing: string[] = [];
      for (const job of acked.jobs) {
        const reply = await call(again.queueUrl, "GET", `/v2/${job.endpointId}/status/${job.id}`, job.key);
        if (reply.status !== 200 || reply.body.id !== job.id) missing.push(`job ${job.id}: ${reply.status}`);
      }
      for (const template of acked.templates) {
        const reply = await call(again.restUrl, "GET", `/templates/${template.id}`, template.key);
        const env = reply.body.env as Record<string, string> | undefined;
        if (reply.status !== 200 || env?.TOKEN !== template.secret) missing.push(`template ${template.id}`);
      }
      for (const volume of acked.volumes) {
        const reply = await call(again.restUrl, "GET", `/networkvolumes/${volume.id}`, volume.key);
        if (reply.status !== 200) missing.push(`volume ${volume.id}: ${reply.status}`);
      }
      expect(missing).toEqual([]);
    } finally {
      cli.kill();
    }
  }, 60_000);
});
