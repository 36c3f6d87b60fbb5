import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import type { TestService } from "../helpers/service";
import { consoleService, ORDERS_HANDLER, ordersEndpoint, signIn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 15_000 };

/**
 * Addresses the console is sent to that name nothing it can show: a link with a malformed escape,
 * an endpoint deleted while its page is open.
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console navigation in headless Chromium"
    : `console navigation in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;
    const errors: string[] = [];

    beforeAll(async () => {
      service = await consoleService(ORDERS_HANDLER);
      endpoint = await ordersEndpoint(service);
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      const context = await browser.newContext({
        viewport: { width: 1280, height: 860 },
        timezoneId: "UTC",
        locale: "en-US",
      });
      await signIn(context, service.apiKey);
      page = await context.newPage();
      page.on("pageerror", (error) => errors.push(error.message));
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
    });

    it("signed out, the page shows the sign-in form only: no Sign out, no links; Tab goes to the key", async () => {
      const fresh = await browser.newPage();
      await fresh.goto(`${service.queueUrl}/console/`);
      await fresh.locator("#key").waitFor(POLL);
      expect(await fresh.locator("#signout").isVisible()).toBe(false);
      expect(await fresh.locator("#nav").isVisible()).toBe(false);
      await fresh.keyboard.press("Tab");
      expect(await fresh.evaluate("document.activeElement?.id")).toBe("key");
      // Keyboard only: the key, Enter, and the endpoints are there with the links.
      await fresh.keyboard.type(service.apiKey);
      await fresh.keyboard.press("Enter");
      await fresh.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      expect(await fresh.locator("#signout").isVisible()).toBe(true);
      await fresh.close();
    });

    it("a page left open past midnight shows yesterday's times with their date", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      const queued = page.locator("#jobs tbody tr td:nth-child(3)").first();
      await queued.waitFor(POLL);
      expect(await queued.innerText()).toMatch(/^\d\d:\d\d:\d\d (AM|PM) UTC$/);
      // The same page, not reloaded, a day later.
      await page.clock.setFixedTime(Date.now() + 24 * 3600 * 1000);
      await expect
        .poll(() => queued.innerText(), POLL)
        .toMatch(/^[A-Z][a-z]{2} \d+, \d{4}, \d\d:\d\d:\d\d (AM|PM) UTC$/);
    });

    it("a link with a malformed escape opens its view, naming the id as written, and the next link works", async () => {
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      await page.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      await page.evaluate(`location.hash = "#/job/${endpoint.id}/%E0%A4%A"`);
      await expect.poll(() => page.locator("main h1").innerText(), POLL).toBe("Job %E0%A4%A");
      await expect
        .poll(() => page.locator("#job").innerText(), POLL)
        .toBe("This job is not kept any more (results expire).");
      await page.evaluate(`location.hash = "#/jobs/${endpoint.id}"`);
      await page.locator("#jobs tbody tr").first().waitFor(POLL);
      expect(errors).toEqual([]);
    });

    it("an endpoint deleted while its queue page is open: the page says so and shows nothing stale", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await page.locator("#jobs tbody tr").first().waitFor(POLL);
      const account = accountIdOf(service.apiKey);
      service.management.endpoints.update(account, endpoint.id, { workersMin: 0, workersMax: 0 });
      service.management.endpoints.delete(account, endpoint.id);
      const main = page.locator("main");
      await expect.poll(() => main.innerText(), POLL).toContain("it was deleted, or is not of this account");
      expect(await main.innerText()).toContain(`endpoint ${endpoint.id} not found`);
      // The counts and jobs it showed are gone; the way back is a link.
      expect(await page.locator("[data-count], #jobs, #chart").count()).toBe(0);
      expect(await page.locator("main h1").innerText()).toBe(`Queue and jobs of ${endpoint.id}`);
      await page.locator('main a[href="#/endpoints"]').click();
      await expect
        .poll(() => page.locator("main[data-view=endpoints]").innerText(), POLL)
        .toContain("No endpoints yet");
      expect(errors).toEqual([]);
    });
  },
);
