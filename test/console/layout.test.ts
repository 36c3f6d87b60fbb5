import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, chromium, type Page, type Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import type { TestService } from "../helpers/service";
import { consoleService, ORDERS_HANDLER, ordersEndpoint, runsyncOn, signIn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 30_000 };
/** A phone's window. */
const NARROW = { width: 390, height: 844 };
const WIDE = { width: 1280, height: 860 };

/**
 * What the console's pages look like with what a newcomer meets first (one page of jobs, a failed
 * job) and what a careless handler sends (an error with a word thousands of characters long), in a
 * desktop window and a phone's.
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console layout in headless Chromium"
    : `console layout in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;
    let failed: string;

    beforeAll(async () => {
      service = await consoleService({
        ...ORDERS_HANDLER,
        "acme/stream": resolve("test/console/fixtures/stream-handler.ts"),
      });
      endpoint = await ordersEndpoint(service);
      // A message with no space to wrap at for 3,000 characters (a base64 blob, a hash, a path).
      const job = await runsyncOn(service, endpoint.id, { fail: `bad payload ${"Z".repeat(3000)}` });
      expect(job.status).toBe("FAILED");
      failed = job.id;
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const context = await browser.newContext({ viewport: WIDE });
      await signIn(context, service.apiKey);
      page = await context.newPage();
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
    });

    /** How wide the page is against its window (a page wider than its window scrolls sideways). */
    const widths = async () =>
      (await page.evaluate(
        `({ page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth })`,
      )) as { page: number; window: number };

    it("the queue page of an endpoint with one page of jobs shows no stray text under the jobs", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await expect.poll(() => page.locator("#jobs tbody tr").count(), POLL).toBe(2);
      // Neither "Newest jobs" (this is the newest page) nor "Older jobs" (there is no other page).
      expect(await page.locator("#jobs-pages").innerText()).toBe("");
      expect(await page.locator("main").innerText()).not.toContain("null");
    });

    it("a failed job's error with a 3,000-character word wraps: the page keeps the window's width", async () => {
      for (const viewport of [WIDE, NARROW]) {
        await page.setViewportSize(viewport);
        await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${failed}`);
        await expect.poll(() => page.locator("#job").innerText(), POLL).toContain("bad payload ZZZ");
        expect(await widths()).toEqual({ page: viewport.width, window: viewport.width });
      }
    });

    it("a failed job's megabyte error is cut like a JSON value, saying how much more the API has", async () => {
      const job = await runsyncOn(service, endpoint.id, { fail: "E".repeat(1_000_000) });
      expect(job.status).toBe("FAILED");
      await page.setViewportSize(WIDE);
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${job.id}`);
      const error = page.locator("#job p.error");
      await expect.poll(() => error.innerText(), POLL).toContain("EEEE");
      // The message and the traceback (which repeats it): 100,000 characters each and a note.
      expect((await error.innerText()).length).toBeLessThan(100_200);
      expect(await error.innerText()).toMatch(
        /\.\.\. \(\d+ more characters: read the job through the API\)$/,
      );
      expect((await page.locator("#job [data-traceback]").innerText()).length).toBeLessThan(100_200);
    });

    it("in a phone's window every view keeps the window's width, and Sign out is on screen", async () => {
      await page.setViewportSize(NARROW);
      const views: [string, string][] = [
        ["#/endpoints", "main[data-view=endpoints] tbody tr"],
        [`#/endpoint/${endpoint.id}`, "#workers tbody tr"],
        [`#/jobs/${endpoint.id}`, "#chart svg"],
        [`#/logs/${endpoint.id}`, "#log div"],
        ["#/templates", "main[data-view=templates] tbody tr"],
      ];
      for (const [hash, ready] of views) {
        await page.goto(`${service.queueUrl}/console/${hash}`);
        await page.locator(ready).first().waitFor(POLL);
        expect({ hash, ...(await widths()) }).toEqual({ hash, page: NARROW.width, window: NARROW.width });
        const signOut = await page.locator("#signout").boundingBox();
        expect(signOut).not.toBeNull();
        expect((signOut?.x ?? 0) + (signOut?.width ?? 0)).toBeLessThanOrEqual(NARROW.width);
      }
    });

    it("a finished job's page reads its megabytes once, then only what can still change", async () => {
      // 1.5 MB in, echoed out: the job is 3 MB as JSON.
      const big = await runsyncOn(service, endpoint.id, { payload: "p".repeat(1_500_000) });
      expect(big.status).toBe("COMPLETED");
      const sizes: number[] = [];
      const record = async (reply: Response) => {
        if (reply.url().includes(`job=${big.id}`)) sizes.push((await reply.body()).length);
      };
      page.on("response", record);
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${big.id}`);
      await expect.poll(() => page.locator("#job").innerText(), POLL).toContain("pppppppp");
      // Three refreshes after the one that drew it.
      await expect.poll(() => sizes.length, POLL).toBeGreaterThanOrEqual(4);
      page.off("response", record);
      expect(sizes[0]).toBeGreaterThan(3_000_000);
      for (const size of sizes.slice(1)) expect(size).toBeLessThan(1000);
      expect(await page.locator("#job").innerText()).toContain("COMPLETED");
    });

    it("a queued job's page reads its megabyte input once, its wait so far from the summary", async () => {
      const account = accountIdOf(service.apiKey);
      // No worker: the job waits as long as the page stays open.
      const idle = service.management.endpoints.create(account, {
        name: "idle",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      const run = await fetch(`${service.queueUrl}/v2/${idle.id}/run`, {
        method: "POST",
        headers: { authorization: service.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: { payload: "q".repeat(1_500_000) } }),
      });
      const { id } = (await run.json()) as { id: string };
      const sizes: number[] = [];
      const record = async (reply: Response) => {
        if (reply.url().includes(`job=${id}`)) sizes.push((await reply.body()).length);
      };
      page.on("response", record);
      await page.goto(`${service.queueUrl}/console/#/job/${idle.id}/${id}`);
      const delay = page.locator("#job dd").nth(2);
      await expect.poll(() => page.locator("#job").innerText(), POLL).toContain("qqqqqqqq");
      const first = await delay.innerText();
      // The wait shown goes on (from the summaries), the input stays.
      await expect.poll(() => sizes.length, POLL).toBeGreaterThanOrEqual(4);
      await expect.poll(() => delay.innerText(), POLL).not.toBe(first);
      page.off("response", record);
      expect(await page.locator("#job").innerText()).toContain("qqqqqqqq");
      expect(sizes[0]).toBeGreaterThan(1_500_000);
      for (const size of sizes.slice(1)) expect(size).toBeLessThan(1000);
    });

    it("a finished job's page still shows its stream drained by a client", async () => {
      const account = accountIdOf(service.apiKey);
      const template = service.management.templates.create(account, {
        name: "stream",
        imageName: "acme/stream",
        isServerless: true,
      });
      const streaming = service.management.endpoints.create(account, {
        name: "stream",
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
      });
      const job = await runsyncOn(service, streaming.id, { chunks: ["chunk-one", "chunk-two"] });
      expect(job.status).toBe("COMPLETED");
      await page.goto(`${service.queueUrl}/console/#/job/${streaming.id}/${job.id}`);
      const stream = page.locator("#job pre").nth(2);
      await expect.poll(() => stream.innerText(), POLL).toContain("chunk-two");
      // A client reads the stream: the chunks are no longer buffered, and the page says so.
      const read = await fetch(`${service.queueUrl}/v2/${streaming.id}/stream/${job.id}`, {
        headers: { authorization: service.apiKey },
      });
      expect(JSON.stringify(await read.json())).toContain("chunk-two");
      await expect.poll(() => stream.innerText(), POLL).toBe("[]");
    });
  },
);
