import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";
import { runsyncOn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
/**
 * The screenshots for the README: written to docs/console/ with UPDATE_SCREENSHOTS=1 (then commit
 * them), otherwise to a temporary directory so that a test run leaves the checkout as it was.
 */
const SHOTS =
  process.env.UPDATE_SCREENSHOTS === "1" ? resolve("docs/console") : join(tmpdir(), "runpodkit-console");
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const FAILURE = "quantity must be a positive integer";
const REGISTRY_PASSWORD = "registry-password-never-shown";

/**
 * The console in a real browser (Debian's headless Chromium driven by playwright-core): the service
 * runs with an account, an endpoint and its resources, jobs ran (one failed); each view is opened,
 * what it shows is asserted, and a screenshot of it is written to docs/console/ for the README.
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console in headless Chromium"
    : `console in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;
    let failedJob: string;
    const jobs: string[] = [];

    const runsync = (input: object) => runsyncOn(service, endpoint.id, input);
    const shot = async (name: string) => {
      const path = join(SHOTS, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      const png = readFileSync(path);
      expect(png.subarray(0, 4).equals(PNG) && png.length > 10_000, `${path} is a screenshot`).toBe(true);
    };
    const text = (selector: string) => page.locator(selector).innerText();

    beforeAll(async () => {
      service = await withService({
        config: {
          managementBodyLimit: 1024 * 1024,
          jobs: {
            coldStartMs: 0,
            flashBootColdStartMs: 0,
            workerOutput: "ignore",
            handlers: { "acme/orders": resolve("test/console/fixtures/app-handler.ts") },
          },
        },
      });
      const account = accountIdOf(service.apiKey);
      const { management } = service;
      const auth = management.registryAuths.create(account, {
        name: "acme-registry",
        username: "acme",
        password: REGISTRY_PASSWORD,
      });
      management.networkVolumes.create(account, { name: "models", size: 50, dataCenterId: "EU-RO-1" });
      const template = management.templates.create(account, {
        name: "orders-worker",
        imageName: "acme/orders:1.4",
        isServerless: true,
        env: { MODEL: "small", API_TOKEN: "template-secret-value" },
        containerRegistryAuthId: auth.id,
      });
      endpoint = management.endpoints.create(account, {
        name: "orders",
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
        idleTimeout: 60,
        env: { REGION: "eu", WEBHOOK_SECRET: "endpoint-secret-value" },
      });
      for (const n of [1, 2, 3]) {
        const reply = await runsync({ order: n });
        expect(reply.status).toBe("COMPLETED");
        jobs.push(reply.id);
      }
      const failed = await runsync({ order: 4, fail: FAILURE });
      expect(failed.status).toBe("FAILED");
      failedJob = failed.id;
      mkdirSync(SHOTS, { recursive: true });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
    });

    it("signs in with the key kept in sessionStorage, never in the URL", async () => {
      await page.goto(`${service.queueUrl}/console`);
      await page.locator("#key").fill("rpk_not_an_account_000000");
      await page.locator("#login button[type=submit]").click();
      await expect.poll(() => text("#login-error")).toContain("401");
      await page.locator("#key").fill(service.apiKey);
      await page.locator("#login button[type=submit]").click();
      await page.locator("main[data-view=endpoints] tbody tr").first().waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem("runpodkit.apiKey"))).toBe(service.apiKey);
      expect(page.url()).not.toContain(service.apiKey);
    });

    it("endpoints: the deployed endpoint with its settings", async () => {
      const rows = page.locator("main[data-view=endpoints] tbody tr");
      expect(await rows.count()).toBe(1);
      const row = await rows.first().innerText();
      expect(row).toContain("orders");
      expect(row).toContain(endpoint.id);
      expect(row).toContain("0 / 1");
      expect(row).toContain("60 s");
      await shot("endpoints");
    });

    it("endpoint: its worker, idle, with its cold start and the 4 jobs it ran", async () => {
      await page.locator(`tr[data-id="${endpoint.id}"]`).click();
      const worker = page.locator("main[data-view=endpoint] #workers tbody tr");
      await worker.first().waitFor();
      expect(await worker.count()).toBe(1);
      const cells = await worker.first().locator("td").allInnerTexts();
      expect(cells[1]).toBe("idle");
      expect(cells[2]).toBe("RUNNING");
      expect(cells[4]).toMatch(/^\d+(\.\d+)? m?s$/);
      expect(cells[5]).toBe("4");
      const settings = await text("#settings");
      expect(settings).toContain("QUEUE_DELAY 4");
      expect(settings).toContain(endpoint.templateId);
      expect(settings).toContain("REGION, WEBHOOK_SECRET");
      expect(settings).not.toContain("endpoint-secret-value");
      await shot("endpoint");
    });

    it("queue and jobs: counts, each job's timeline, and a chart of queue depth and workers over time", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await expect.poll(() => text('[data-count="completed"] b')).toBe("3");
      expect(await text('[data-count="failed"] b')).toBe("1");
      expect(await text('[data-count="inQueue"] b')).toBe("0");
      const rows = page.locator("#jobs tbody tr");
      expect(await rows.count()).toBe(4);
      const statuses = await page.locator("#jobs tbody tr td:nth-child(2)").allInnerTexts();
      expect(statuses).toEqual(["FAILED", "COMPLETED", "COMPLETED", "COMPLETED"]);
      expect(await page.locator("#jobs .bar .run").count()).toBe(4);
      // The chart's history: jobs ran (in progress went up and back to 0) on the one worker.
      const ys = async (series: string) =>
        new Set(
          ((await page.locator(`polyline[data-series="${series}"]`).getAttribute("points")) ?? "")
            .split(" ")
            .map((point) => point.split(",")[1]),
        );
      expect((await ys("inProgress")).size).toBe(2);
      expect((await ys("workers")).size).toBe(2);
      expect(await text('[data-now="workers"]')).toBe("1");
      // A time axis: the first change recorded (the first job queued) on the left, now on the right.
      const metrics = (await (
        await fetch(`${service.queueUrl}/v2/${endpoint.id}/metrics`, {
          headers: { authorization: service.apiKey },
        })
      ).json()) as { points: { t: number }[] };
      const first = metrics.points[0]?.t ?? 0;
      // Today's times: the time of day with the browser's zone (a date only on other days).
      expect(await page.locator('[data-axis="from"]').textContent()).toBe(
        await page.evaluate(
          `new Date(${first}).toLocaleString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" })`,
        ),
      );
      expect(await page.locator('[data-axis="now"]').textContent()).toMatch(/^now \(.+\)$/);
      await shot("jobs");
    });

    it("job: the failed job's input, timeline and traceback", async () => {
      await page.locator(`#jobs tr[data-id="${failedJob}"]`).click();
      await page.locator("[data-traceback]").waitFor();
      expect(await text("[data-traceback]")).toContain(`TypeError: ${FAILURE}`);
      const timeline = await text("[data-timeline]");
      expect(timeline).toMatch(/^IN_QUEUE .* -> IN_PROGRESS .* -> FAILED /);
      expect(await text("main[data-view=job]")).toContain('"order": 4');
      await shot("job");
    });

    it("logs: the traceback of the failing handler, then new lines live", async () => {
      await page.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      const log = page.locator("#log");
      await expect.poll(() => log.innerText()).toContain(`TypeError: ${FAILURE}`);
      expect(await log.innerText()).toContain('processing {"order":1}');
      const tracebackLine = page.locator("#log div.ERROR", { hasText: FAILURE });
      expect(await tracebackLine.first().innerText()).toContain(failedJob);
      const live = await runsync({ order: 5, fail: "a fifth order, seen live" });
      expect(live.status).toBe("FAILED");
      await expect.poll(() => log.innerText()).toContain("TypeError: a fifth order, seen live");
      await shot("logs");
    });

    it("templates, volumes, registry auths: listed, without env values or credentials", async () => {
      await page.goto(`${service.queueUrl}/console/#/templates`);
      await page.locator("main[data-view=templates] tbody tr").first().waitFor();
      const template = await text("main[data-view=templates] tbody tr");
      expect(template).toContain("orders-worker");
      expect(template).toContain("acme/orders:1.4");
      expect(template).toContain("MODEL, API_TOKEN");
      expect(template).not.toContain("template-secret-value");
      await shot("templates");

      await page.goto(`${service.queueUrl}/console/#/volumes`);
      await page.locator("main[data-view=volumes] tbody tr").first().waitFor();
      expect(await page.locator("main[data-view=volumes] tbody tr").count()).toBe(1);
      expect(await text("main[data-view=volumes] tbody tr")).toMatch(/models.*50 GB.*EU-RO-1/s);
      await shot("volumes");

      await page.goto(`${service.queueUrl}/console/#/registry`);
      await page.locator("main[data-view=registry] tbody tr").first().waitFor();
      expect(await text("main[data-view=registry] tbody tr")).toContain("acme-registry");
      expect(await page.content()).not.toContain(REGISTRY_PASSWORD);
      await shot("registry");
    });
  },
);
