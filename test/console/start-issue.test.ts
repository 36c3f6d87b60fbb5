import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);

/** A handler that never loads: the console says why where the waiting jobs are, and on its worker. */
describe.skipIf(!HAS_CHROMIUM)("console: workers that do not start", () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let endpoint: EndpointRecord;

  beforeAll(async () => {
    service = await withService({
      config: {
        jobs: {
          coldStartMs: 0,
          workerOutput: "ignore",
          handlers: { "acme/broken": resolve("test/service/workers/fixtures/throws-at-import.mts") },
        },
      },
    });
    const account = accountIdOf(service.apiKey);
    const template = service.management.templates.create(account, {
      name: "broken-worker",
      imageName: "acme/broken",
      isServerless: true,
    });
    endpoint = service.management.endpoints.create(account, {
      name: "broken",
      templateId: template.id,
      workersMin: 0,
      workersMax: 1,
    });
    const run = await fetch(`${service.queueUrl}/v2/${endpoint.id}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ input: { n: 1 } }),
    });
    expect(run.status).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    page = await browser.newPage();
    await page.goto(`${service.queueUrl}/console`);
    await page.locator("#key").fill(service.apiKey);
    await page.locator("#login button[type=submit]").click();
    await page.locator("main[data-view=endpoints] tbody tr").first().waitFor();
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  it("the queue page names why above the jobs; the worker table shows it on the worker", async () => {
    await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
    await expect
      .poll(
        () =>
          page
            .locator("[data-start-issue]")
            .innerText()
            .catch(() => ""),
        { timeout: 20_000 },
      )
      .toMatch(
        /^Workers do not start: worker \w+ its process exited \(code 1\) before its first call to the service: .*model weights not found at \/models\/x; its logs: runpodkit logs \w+ --worker \w+ \(/,
      );
    expect(await page.locator('[data-count="inQueue"] b').innerText()).toBe("1");
    // The waiting job's own page says it too (a newcomer opens the job that does not run).
    const [job] = (
      (await (
        await fetch(`${service.queueUrl}/v2/${endpoint.id}/jobs?summary=1`, {
          headers: { authorization: service.apiKey },
        })
      ).json()) as { jobs: { id: string }[] }
    ).jobs;
    await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${job?.id}`);
    await expect
      .poll(
        () =>
          page
            .locator("main[data-view=job] [data-start-issue]")
            .innerText()
            .catch(() => ""),
        {
          timeout: 20_000,
        },
      )
      .toMatch(/^Workers do not start: worker \w+ its process exited \(code 1\)/);
    expect(await page.locator("#job").innerText()).toContain("IN_QUEUE");
    await page.goto(`${service.queueUrl}/console/#/endpoint/${endpoint.id}`);
    const status = page.locator("main[data-view=endpoint] #workers tbody tr td:nth-child(3) .error");
    await status.first().waitFor();
    expect(await status.first().innerText()).toMatch(
      /^TERMINATED: its process exited \(code 1\) before its first call to the service: .*model weights not found/,
    );
  });
});
