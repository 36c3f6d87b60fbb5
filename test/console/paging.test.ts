import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP } from "../../service/console";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";
import { runsyncOn, signInScript } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const NOISY = resolve("test/service/logs/fixtures/noisy-handler.ts");
const DAY = 24 * 60 * 60 * 1000;

/**
 * The console past its first page, in a real browser: 120 jobs (pages of 50 by a cursor), 2,600 log
 * lines (the view follows the newest 2,000; "Load older lines" reads the rest), times with their date
 * when not today and their zone, and a Content-Security-Policy without 'unsafe-inline' that the page
 * never violates.
 */
describe.skipIf(!HAS_CHROMIUM)("console paging, dates and CSP in headless Chromium", () => {
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let queued: EndpointRecord;
  let noisy: EndpointRecord;
  const ids: string[] = [];
  const violations: string[] = [];

  const api = async (path: string) =>
    fetch(`${service.queueUrl}${path}`, { headers: { authorization: service.apiKey } });

  beforeAll(async () => {
    service = await withService({
      config: {
        jobs: {
          coldStartMs: 0,
          flashBootColdStartMs: 0,
          workerOutput: "ignore",
          handlers: { "acme/noisy": NOISY },
        },
      },
    });
    const account = accountIdOf(service.apiKey);
    const { management } = service;
    const template = management.templates.create(account, {
      name: "q",
      imageName: "acme/none",
      isServerless: true,
    });
    // No worker: its jobs stay queued.
    queued = management.endpoints.create(account, { name: "queued", templateId: template.id, workersMax: 0 });
    for (let n = 0; n < 120; n++) {
      const reply = await fetch(`${service.queueUrl}/v2/${queued.id}/run`, {
        method: "POST",
        headers: { authorization: service.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: { n } }),
      });
      ids.push(((await reply.json()) as { id: string }).id);
    }
    const noisyTemplate = management.templates.create(account, {
      name: "n",
      imageName: "acme/noisy",
      isServerless: true,
    });
    noisy = management.endpoints.create(account, {
      name: "noisy",
      templateId: noisyTemplate.id,
      workersMax: 1,
    });
    expect((await runsyncOn(service, noisy.id, { mode: "flood", lines: 2600 })).status).toBe("COMPLETED");

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    context = await browser.newContext({ locale: "en-US", timezoneId: "Asia/Tokyo" });
    // In the page (a script's text: the tests compile without the DOM's types): the key, and every
    // CSP violation the browser reports.
    await context.addInitScript({
      content: `${signInScript(service.apiKey)}
        window.cspViolations = [];
        document.addEventListener("securitypolicyviolation", (event) =>
          window.cspViolations.push(event.violatedDirective + " " + event.blockedURI));`,
    });
    page = await context.newPage();
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) violations.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await service?.close();
  });

  const cspViolations = async () => [
    ...violations,
    ...((await page.evaluate("window.cspViolations")) as string[]),
  ];

  it("serves the console with a style-src of 'self' only", async () => {
    const reply = await fetch(`${service.queueUrl}/console/`);
    expect(reply.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("style-src 'self';");
    expect(CONSOLE_CSP).not.toContain("unsafe-inline");
  });

  it("pages through 120 jobs 50 at a time, newest first, with no job twice or left out", async () => {
    await page.goto(`${service.queueUrl}/console/#/jobs/${queued.id}`);
    const rows = page.locator("#jobs tbody tr");
    const shownIds = async () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-id")));
    await expect.poll(() => rows.count()).toBe(50);
    const seen = await shownIds();
    expect(await page.locator('[data-page="newest"]').count()).toBe(0);
    await page.locator('[data-page="older"]').click();
    await expect.poll(async () => (await shownIds())[0]).toBe(ids[69]);
    seen.push(...(await shownIds()));
    await page.locator('[data-page="older"]').click();
    await expect.poll(async () => (await shownIds())[0]).toBe(ids[19]);
    expect(await rows.count()).toBe(20);
    seen.push(...(await shownIds()));
    // The last page: no older one; the newest is a link away.
    expect(await page.locator('[data-page="older"]').count()).toBe(0);
    expect(await page.locator('[data-page="newest"]').count()).toBe(1);
    expect(seen).toEqual([...ids].reverse());
    // Timeline bars drawn with their widths (set through the CSSOM, which the CSP allows).
    expect(
      await page
        .locator("#jobs .bar .wait")
        .first()
        .evaluate((node) => (node as unknown as { style: { width: string } }).style.width),
    ).toMatch(/^\d+px$/);
    expect(await cspViolations()).toEqual([]);
  });

  it("a cursor that is not a kept job of the endpoint is refused with 400 naming `before`", async () => {
    const reply = await api(`/v2/${queued.id}/jobs?before=no-such-job`);
    expect(reply.status).toBe(400);
    expect(JSON.stringify(await reply.json())).toContain(
      "before: no job no-such-job of this endpoint is kept",
    );
  });

  it("shows times in the browser's zone, with the date when not today", async () => {
    const queuedAt = async () => page.locator("#jobs tbody tr td:nth-child(3)").first().innerText();
    await page.goto(`${service.queueUrl}/console/#/jobs/${queued.id}`);
    await page.locator("#jobs tbody tr").first().waitFor();
    const today = await queuedAt();
    expect(today).toMatch(/^\d\d:\d\d:\d\d (AM|PM) GMT\+9$/);
    expect(await page.locator("main").innerText()).toContain("Times are in Asia/Tokyo.");
    // The same job seen a day later: its date is shown.
    await page.clock.setFixedTime(Date.now() + DAY);
    await page.reload();
    await page.locator("#jobs tbody tr").first().waitFor();
    const created = new Date(
      (
        (await (await api(`/v2/${queued.id}/jobs?limit=1&summary=1`)).json()) as {
          jobs: { queuedAt: number }[];
        }
      ).jobs[0]?.queuedAt ?? 0,
    );
    const date = created.toLocaleDateString("en-US", {
      timeZone: "Asia/Tokyo",
      month: "short",
      day: "numeric",
      year: "numeric",
    });
    await expect.poll(queuedAt).toMatch(new RegExp(`^${date}, \\d\\d:\\d\\d:\\d\\d (AM|PM) GMT\\+9$`));
    expect(await cspViolations()).toEqual([]);
  });

  it("logs: follows the newest 2,000 lines, and reads older ones on demand until none are kept", async () => {
    const seqsKept = async () =>
      (await (await api(`/v2/${noisy.id}/logs?limit=10000`)).text())
        .trim()
        .split("\n")
        .map((line) => (JSON.parse(line) as { seq: number }).seq);
    expect((await seqsKept()).length).toBeGreaterThan(2600);
    await page.goto(`${service.queueUrl}/console/#/logs/${noisy.id}`);
    const lines = page.locator("#log > div");
    // The newest 2,000 (and any line since): 2 MB drawn, given time (the poll's default is 1 s).
    await expect.poll(() => lines.count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(2000);
    const before = await lines.count();
    await page.locator("#log-older").click();
    await page.locator("#log-oldest").waitFor({ state: "visible", timeout: 30_000 });
    expect(await lines.count()).toBeGreaterThan(before + 600);
    expect(await page.locator("#log-older").isVisible()).toBe(false);
    // Every line kept, in order, each once, the worker's start first.
    const seqs = await lines.evaluateAll((divs) => divs.map((div) => Number(div.getAttribute("data-seq"))));
    expect(seqs).toEqual(await seqsKept());
    expect(await lines.first().innerText()).toContain("worker started");
    expect(await cspViolations()).toEqual([]);
  });
});
