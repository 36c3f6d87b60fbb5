import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";
import { consoleConfig, runsyncOn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 30_000 };

/** What a hostile or careless user puts in names and prints from a handler. */
const XSS = "<img src=x onerror=window.__xss=1>";
const RTL = "\u202e";
const HOSTILE_LINES = [`${XSS} printed`, "\x1b[31mred\x1b[0m text", `order ${RTL}cba`, "bell\x07here"];

/**
 * The console in headless Chromium as a demanding user drives it: hostile names and log lines, the
 * keyboard, copying an id while the page refreshes, a long-followed log, and the service stopping
 * and coming back (on the same port, with the same data file).
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console robustness in headless Chromium"
    : `console robustness in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-console-"));
    const data = join(dir, "service.db");
    const config = consoleConfig({ "acme/hostile": resolve("test/console/fixtures/hostile-handler.ts") });
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;
    /** The last test stops the service. */
    let running = true;
    const errors: string[] = [];
    const dialogs: string[] = [];

    const runsync = (input: object) => runsyncOn(service, endpoint.id, input);
    const watch = (p: Page) => {
      p.on("console", (message) => {
        if (message.type() === "error") errors.push(message.text());
      });
      p.on("pageerror", (error) => errors.push(error.message));
      p.on("dialog", (dialog) => {
        dialogs.push(dialog.message());
        void dialog.dismiss();
      });
    };
    const signIn = async (p: Page) => {
      await p.goto(`${service.queueUrl}/console/`);
      await p.locator("#key").fill(service.apiKey);
      await p.locator("#login button[type=submit]").click();
      await p.locator("main[data-view=endpoints] tbody tr").first().waitFor();
    };

    beforeAll(async () => {
      service = await withService({ data, config });
      const account = accountIdOf(service.apiKey);
      const template = service.management.templates.create(account, {
        name: `${XSS} ${RTL}template`,
        imageName: "acme/hostile",
        isServerless: true,
      });
      endpoint = service.management.endpoints.create(account, {
        // The longest name the API takes, with no space to wrap at after the markup.
        name: `${XSS}${"W".repeat(191 - XSS.length)}`,
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
        idleTimeout: 60,
      });
      expect((await runsync({ print: HOSTILE_LINES })).status).toBe("COMPLETED");
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      watch(page);
    });

    afterAll(async () => {
      await browser?.close();
      if (running) await service?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("hostile names and log lines: no script runs, controls are shown, and the table fits the page", async () => {
      await signIn(page);
      // The longest name wraps in its cell: the table is no wider than the page.
      // (Expressions as strings: they run in the page, whose globals this file's types do not know.)
      const widths = (await page.evaluate(
        `({ table: document.querySelector("main table").scrollWidth, page: document.documentElement.clientWidth })`,
      )) as { table: number; page: number };
      expect(widths.table).toBeLessThanOrEqual(widths.page);
      expect(await page.locator(`tr[data-id="${endpoint.id}"] td`).first().innerText()).toContain(XSS);

      await page.goto(`${service.queueUrl}/console/#/templates`);
      await page.locator("main[data-view=templates] tbody tr").first().waitFor();
      // The override character is written out, not obeyed (it would reverse the rest of the cell).
      expect(await page.locator("main[data-view=templates] tbody td").first().innerText()).toBe(
        `${XSS} \\u202etemplate`,
      );

      await page.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      const log = page.locator("#log");
      await expect.poll(() => log.innerText(), POLL).toContain("bell\\u0007here");
      const text = await log.innerText();
      expect(text).toContain(`${XSS} printed`);
      expect(text).toContain("INFO  red text"); // colours dropped, not shown as "[31m"
      expect(text).toContain("order \\u202ecba");
      for (const raw of ["\x1b", "\x07", RTL]) expect(text).not.toContain(raw);
      expect(await page.evaluate("window.__xss")).toBeUndefined();
      expect(dialogs).toEqual([]);
      // Nothing failed in the page either (a missing favicon used to log a 404 on every load).
      expect(errors).toEqual([]);
    });

    it("invisible characters in names and log lines are written out: a zero-width space does not pass unseen", async () => {
      const account = accountIdOf(service.apiKey);
      // A zero-width space, then Unicode tag characters spelling "hi" (text no reader sees).
      const lookalike = service.management.endpoints.create(account, {
        name: "a\u200bpi\u{e0068}\u{e0069}",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      const name = page.locator(`tr[data-id="${lookalike.id}"] td`).first();
      await expect.poll(() => name.innerText(), POLL).toBe("a\\u200bpi\\u{e0068}\\u{e0069}");
      expect(
        (await runsync({ print: ["\ufeffbom and soft\u00adhyphen, emoji \u{1F469}\u200d\u{1F4BB} kept"] }))
          .status,
      ).toBe("COMPLETED");
      await page.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      await expect
        .poll(() => page.locator("#log").innerText(), POLL)
        .toContain("\\ufeffbom and soft\\u00adhyphen, emoji \u{1F469}\u200d\u{1F4BB} kept");
      expect(errors).toEqual([]);
    });

    it("keyboard: Tab reaches an endpoint's link and Enter opens it", async () => {
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      await page.locator("main[data-view=endpoints] tbody tr").first().waitFor();
      let focused = "";
      for (let n = 0; n < 10 && focused !== endpoint.id; n++) {
        await page.keyboard.press("Tab");
        focused = String(
          await page.evaluate(`document.activeElement?.closest("tr")?.getAttribute("data-id") ?? ""`),
        );
      }
      expect(focused).toBe(endpoint.id);
      await page.keyboard.press("Enter");
      await page.locator("main[data-view=endpoint] #settings dl").waitFor();
      expect(page.url()).toContain(`#/endpoint/${endpoint.id}`);
    });

    it("an id selected to copy stays selected while the page refreshes", async () => {
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      const id = page.locator(`tr[data-id="${endpoint.id}"] code`);
      await id.waitFor();
      await id.selectText();
      // Two more refreshes of the list come and go.
      for (let n = 0; n < 2; n++) await page.waitForResponse((r) => r.url().endsWith("/graphql"));
      await page.evaluate("new Promise(requestAnimationFrame)");
      expect(await page.evaluate("String(getSelection())")).toBe(endpoint.id);
    });

    it("a stopped worker is shown stopped, not in the state it last had", async () => {
      const account = accountIdOf(service.apiKey);
      const other = service.management.endpoints.create(account, {
        name: "scaled-down",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 1,
        idleTimeout: 60,
      });
      const reply = await fetch(`${service.queueUrl}/v2/${other.id}/runsync`, {
        method: "POST",
        headers: { authorization: service.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: {} }),
      });
      expect(((await reply.json()) as { status: string }).status).toBe("COMPLETED");
      await page.goto(`${service.queueUrl}/console/#/endpoint/${other.id}`);
      const cells = page.locator("#workers tbody tr").first().locator("td");
      await expect.poll(() => cells.nth(1).innerText(), POLL).toBe("idle");
      // Scaled to zero: the worker stops (the API keeps it with its last state, idle, and EXITED).
      service.management.endpoints.update(account, other.id, { workersMax: 0 });
      await expect.poll(() => cells.nth(2).innerText(), POLL).toBe("EXITED");
      expect(await cells.nth(1).innerText()).toBe("stopped");
      expect(await cells.nth(5).innerText()).toBe("1");
    });

    it("a load-balancing endpoint is shown as LB (REST leaves the type out), with no queue to show", async () => {
      const account = accountIdOf(service.apiKey);
      const lb = service.management.endpoints.create(account, {
        name: "balanced",
        templateId: endpoint.templateId,
        type: "LB",
        workersMin: 0,
        workersMax: 1,
      });
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      const typeOf = (id: string) => page.locator(`tr[data-id="${id}"] td`).nth(2).innerText();
      await expect.poll(() => typeOf(lb.id), POLL).toBe("LB");
      expect(await typeOf(endpoint.id)).toBe("QB");
      await page.goto(`${service.queueUrl}/console/#/endpoint/${lb.id}`);
      await expect.poll(() => page.locator("#settings").innerText(), POLL).toContain("LB (load-balancing");
      await page.goto(`${service.queueUrl}/console/#/jobs/${lb.id}`);
      await expect.poll(() => page.locator("#counts").innerText(), POLL).toContain("has no job queue");
      expect(await page.locator("#queue").isHidden()).toBe(true);
      expect(await page.locator("[data-view-error]").count()).toBe(0);
    });

    it("a log followed for long keeps the newest 5,000 lines in the page", async () => {
      await page.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      await page.locator("#log div").first().waitFor();
      expect((await runsync({ lines: 6000 })).status).toBe("COMPLETED");
      const lastLine = page.locator("#log div", { hasText: "line 5999" });
      await lastLine.waitFor(POLL);
      expect(await page.locator("#log > div").count()).toBe(5000);
      expect(Number(await page.locator("#log-count").innerText())).toBeGreaterThan(6000);
      expect(await page.locator("#log > div").first().innerText()).not.toContain("worker started");
    });

    it("a log of 60,000-character lines keeps at most 4 Mi characters in the page, the newest line last", async () => {
      await page.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      await expect.poll(() => page.locator("#log-status").innerText(), POLL).toBe("Following live");
      // 12 M characters printed; the service keeps the newest 8 Mi.
      expect((await runsync({ wide: 200 })).status).toBe("COMPLETED");
      await page.locator("#log div", { hasText: "wide 199 " }).waitFor(POLL);
      const kept = (await page.evaluate(
        `[...document.querySelectorAll("#log > div")].reduce((sum, div) => sum + div.textContent.length, 0)`,
      )) as number;
      expect(kept).toBeGreaterThan(3 * 1024 * 1024);
      // Each line's text is its message and a time, worker and job id before it.
      expect(kept).toBeLessThan(4 * 1024 * 1024 + 200 * 100);
      // The oldest went; the newest wide line is the last of them.
      const wide = page.locator("#log > div", { hasText: "wwwww" });
      expect(await wide.last().innerText()).toContain("wide 199 ");
      expect(await wide.first().innerText()).not.toContain("wide 0 ");
    });

    it("an answer for a page already left is not drawn into the next one", async () => {
      const first = await runsync({ print: ["first job"] });
      const second = await runsync({ print: ["second job"] });
      // The first job's answer is held until the second job's page shows.
      let release: () => void = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      await page.route(`**/jobs?job=${first.id}`, async (route) => {
        await held;
        await route.continue().catch(() => {});
      });
      const asked = page.waitForRequest((r) => r.url().includes(`job=${first.id}`));
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${first.id}`);
      await asked;
      // Its end: aborted when the page is left, or (had it not been) answered once released.
      const ofFirst = (r: { url(): string }) => r.url().includes(`job=${first.id}`);
      const settled = Promise.race([
        page.waitForEvent("requestfailed", ofFirst),
        page.waitForEvent("requestfinished", ofFirst),
      ]);
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${second.id}`);
      const job = page.locator("#job");
      await expect.poll(() => job.innerText(), POLL).toContain("second job");
      release();
      await settled;
      await page.evaluate("new Promise(requestAnimationFrame)");
      expect(await job.innerText()).toContain("second job");
      expect(await job.innerText()).not.toContain("first job");
      await page.unroute(`**/jobs?job=${first.id}`);
    });

    it("the service stops: each view says so and backs off; it comes back: the message goes and the log follows again", async () => {
      // Another tab (its own sessionStorage: signed in afresh) follows the log meanwhile.
      const logs = await browser.newPage();
      watch(logs);
      await signIn(logs);
      await logs.goto(`${service.queueUrl}/console/#/logs/${endpoint.id}`);
      await expect.poll(() => logs.locator("#log-status").innerText(), POLL).toBe("Following live");
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await page.locator('[data-count="completed"]').waitFor();
      const completed = await page.locator('[data-count="completed"] b').innerText();

      const port = service.port;
      await service.close();
      const main = page.locator("main");
      await expect.poll(() => main.innerText(), POLL).toContain("The service does not answer");
      await expect.poll(() => logs.locator("#log-status").innerText(), POLL).toContain("Disconnected");
      // Backing off, not asking every second while nothing answers: 2 s after the first failure, then 4 s.
      await expect.poll(() => main.innerText(), POLL).toContain("trying again in 4 s");

      service = await withService({ data, config, port });
      await expect.poll(() => page.locator("[data-view-error]").count(), POLL).toBe(0);
      expect(await page.locator('[data-count="completed"] b').innerText()).toBe(completed);
      await expect.poll(() => logs.locator("#log-status").innerText(), POLL).toBe("Following live");
      expect((await runsync({ print: ["after the restart"] })).status).toBe("COMPLETED");
      await expect.poll(() => logs.locator("#log").innerText(), POLL).toContain("after the restart");
      await logs.close();
    }, 90_000);

    it("signing in while the service is down says so and keeps no key", async () => {
      await page.locator("#signout").click();
      await service.close();
      await page.locator("#key").fill(service.apiKey);
      await page.locator("#login button[type=submit]").click();
      await expect.poll(() => page.locator("#login-error").innerText(), POLL).toContain("does not answer");
      expect(await page.evaluate(() => sessionStorage.getItem("runpodkit.apiKey"))).toBeNull();
      // A pasted key with a character no header carries: said so, not silently ignored.
      await page.locator("#key").fill("rpk_ключ");
      await page.locator("#login button[type=submit]").click();
      await expect.poll(() => page.locator("#login-error").innerText(), POLL).toContain("printable ASCII");
      expect(await page.evaluate(() => sessionStorage.getItem("runpodkit.apiKey"))).toBeNull();
      running = false;
    });
  },
);
