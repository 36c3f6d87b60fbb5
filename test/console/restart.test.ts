import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";
import { consoleConfig, runsyncOn, signIn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 20_000 };

/**
 * The service restarts under an open console (same port, same data file): what was in its memory
 * only is gone, and the page must not keep showing it; then it restarts without the page's key.
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console across a service restart in headless Chromium"
    : `console across a service restart in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-console-restart-"));
    const data = join(dir, "service.db");
    const config = consoleConfig({ "acme/stream": resolve("test/console/fixtures/stream-handler.ts") });
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;

    beforeAll(async () => {
      service = await withService({ data, config });
      const account = accountIdOf(service.apiKey);
      const template = service.management.templates.create(account, {
        name: "stream",
        imageName: "acme/stream",
        isServerless: true,
      });
      endpoint = service.management.endpoints.create(account, {
        name: "stream",
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
      });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      await signIn(context, service.apiKey);
      page = await context.newPage();
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("a finished job's stream, kept in memory only, is shown gone after a restart, not as it was", async () => {
      const job = await runsyncOn(service, endpoint.id, { chunks: ["chunk-one", "chunk-two"] });
      expect(job.status).toBe("COMPLETED");
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${job.id}`);
      const stream = page.locator("#job pre").nth(2);
      await expect.poll(() => stream.innerText(), POLL).toContain("chunk-two");
      const port = service.port;
      await service.close();
      await expect.poll(() => page.locator("main").innerText(), POLL).toContain("does not answer");
      service = await withService({ data, config, port });
      // The job is still there (from the data file); its unread chunks are not (memory only).
      const read = await fetch(`${service.queueUrl}/v2/${endpoint.id}/jobs?job=${job.id}`, {
        headers: { authorization: service.apiKey },
      });
      expect(((await read.json()) as { jobs: { stream: unknown[] }[] }).jobs[0]?.stream).toEqual([]);
      await expect.poll(() => page.locator("[data-view-error]").count(), POLL).toBe(0);
      await expect.poll(() => stream.innerText(), POLL).toBe("[]");
      expect(await page.locator("#job").innerText()).toContain("COMPLETED");
    }, 60_000);

    it("restarted without the page's key: the page says the key was refused and asks for one", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await page.locator('[data-count="completed"]').waitFor(POLL);
      const port = service.port;
      const other = service.otherApiKey;
      await service.close();
      service = await withService({ data, config, port, apiKeys: [other] });
      await expect.poll(() => page.locator("#login-error").innerText(), POLL).toContain("refused (401)");
      expect(await page.locator("#login").isVisible()).toBe(true);
      expect(await page.locator("main").innerText()).toBe("");
      expect(await page.evaluate(() => sessionStorage.getItem("runpodkit.apiKey"))).toBeNull();
    }, 60_000);
  },
);
