import { existsSync } from "node:fs";
import { type AddressInfo, createServer, type Socket, connect as tcpConnect } from "node:net";
import { resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page, type Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import type { TestService } from "../helpers/service";
import { consoleService, ORDERS_HANDLER, ordersEndpoint, runsyncOn, signIn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 20_000 };

/** Flags (a region pair, a subdivision's tag sequence), a skin tone, ZWJ sequences: one grapheme each. */
const GRAPHEMES = [
  "\u{1F1EF}\u{1F1F5}",
  "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}",
  "\u{1F469}\u{1F3FD}\u200d\u{1F4BB}",
  "\u{1F468}\u200d\u{1F469}\u200d\u{1F467}",
];
/** Scotland's flag: 14 UTF-16 units. */
const SCOTLAND = GRAPHEMES[1] ?? "";

/**
 * Back (or Forward) pressed while the page's main thread is busy for `ms` (a loaded machine): the
 * browser changes the history entry (and history.state) at once, and the page's timers that came due
 * meanwhile may run before its hashchange does.
 */
async function whileBusy(page: Page, press: () => Promise<unknown>, ms = 800): Promise<void> {
  // Two frames first: the scroll the view caused (drawn shorter, or restored) is dispatched, its save
  // scheduled.
  await page.evaluate(`new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
    setTimeout(() => { const end = performance.now() + ${ms}; while (performance.now() < end); }, 0);
    resolve();
  })))`);
  await press();
}

/**
 * What a user watching one job live meets: a running job with a large input streaming for long, a
 * queue page's address with a paging cursor that names no job, and names and outputs with emoji.
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console live views in headless Chromium"
    : `console live views in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    let service: TestService;
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    let endpoint: EndpointRecord;
    let slow: EndpointRecord;
    const errors: string[] = [];

    const post = (path: string, body?: object) =>
      fetch(`${service.queueUrl}${path}`, {
        method: "POST",
        headers: { authorization: service.apiKey, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    beforeAll(async () => {
      service = await consoleService({
        ...ORDERS_HANDLER,
        "acme/slow-stream": resolve("test/console/fixtures/slow-stream-handler.ts"),
      });
      endpoint = await ordersEndpoint(service);
      const account = accountIdOf(service.apiKey);
      const template = service.management.templates.create(account, {
        name: "slow-stream",
        imageName: "acme/slow-stream",
        isServerless: true,
      });
      slow = service.management.endpoints.create(account, {
        name: "slow-stream",
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
      });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      await signIn(context, service.apiKey);
      page = await context.newPage();
      page.on("pageerror", (error) => errors.push(error.message));
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
    });

    it("a running job's page reads its megabyte input once, then its status and new stream chunks only; the whole job once when it ends", async () => {
      const run = await post(`/v2/${slow.id}/run`, {
        input: { everyMs: 50, payload: "r".repeat(1_000_000) },
      });
      const { id } = (await run.json()) as { id: string };
      const replies: { size: number; status: string }[] = [];
      const record = async (reply: Response) => {
        if (!reply.url().includes(`job=${id}`)) return;
        const body = await reply.body();
        replies.push({ size: body.length, status: String(JSON.parse(body.toString()).jobs[0]?.status) });
      };
      page.on("response", record);
      await page.goto(`${service.queueUrl}/console/#/job/${slow.id}/${id}`);
      const job = page.locator("#job");
      const stream = page.locator("#job pre").nth(2);
      await expect.poll(() => job.innerText(), POLL).toContain("IN_PROGRESS");
      await expect.poll(() => stream.innerText(), POLL).toContain("token-1");
      // Five refreshes while it runs: the stream shown grows with them.
      const running = () => replies.filter((r) => r.status === "IN_PROGRESS");
      await expect.poll(() => running().length, POLL).toBeGreaterThanOrEqual(6);
      await expect.poll(() => stream.innerText(), POLL).toContain("token-30");
      expect(await job.innerText()).toContain("rrrrrrrr");
      // Read whole once; each refresh after costs the page and the service its summary and the new
      // chunks, not the input: before, each was the whole job (1 MB a second while it ran).
      const sizes = replies.map((r) => r.size);
      console.info(`running job page: ${sizes.length} reads, bytes each: ${sizes.join(", ")}`);
      expect(sizes[0]).toBeGreaterThan(1_000_000);
      for (const size of sizes.slice(1)) expect(size).toBeLessThan(5_000);
      // Reading it left the stream to its client: /stream still hands out the first chunk.
      const read = await fetch(`${service.queueUrl}/v2/${slow.id}/stream/${id}`, {
        headers: { authorization: service.apiKey },
      });
      expect(JSON.stringify(await read.json())).toContain('"token-0"');
      // Drained by the client: the page shows only the chunks still buffered.
      await expect.poll(() => stream.innerText(), POLL).not.toContain('"token-0"');

      expect((await post(`/v2/${slow.id}/cancel/${id}`)).status).toBe(200);
      await expect.poll(() => job.innerText(), POLL).toContain("CANCELLED");
      await expect
        .poll(() => replies.filter((r) => r.status === "CANCELLED").length, POLL)
        .toBeGreaterThanOrEqual(4);
      page.off("response", record);
      // Once ended: read whole once (its output and error may be new), then its summary only.
      const ended = replies.filter((r) => r.status === "CANCELLED").map((r) => r.size);
      expect(ended.filter((size) => size > 1_000_000)).toHaveLength(1);
      expect(ended.at(-1)).toBeLessThan(1000);
      expect(errors).toEqual([]);
    });

    it("a paging cursor that names no kept job: one message naming it, a link to the first page, and no more refreshes", async () => {
      const fresh = await context.newPage();
      await fresh.clock.install();
      const requests: string[] = [];
      fresh.on("request", (request) => requests.push(request.url()));
      const cursor = "not-a-job<i>";
      await fresh.goto(
        `${service.queueUrl}/console/#/jobs/${endpoint.id}?before=${encodeURIComponent(cursor)}`,
      );
      const error = fresh.locator("main .error");
      await expect.poll(() => error.innerText(), POLL).toContain(`"${cursor}"`);
      const newest = fresh.locator("main a[data-page=newest]");
      expect(await newest.getAttribute("href")).toBe(`#/jobs/${endpoint.id}`);
      // A minute on the page's clock: before, a refresh (and the same error) came every 2 to 10 s.
      const calls = () => requests.filter((url) => url.includes(`/v2/${endpoint.id}/`)).length;
      const before = calls();
      await fresh.clock.runFor(60_000);
      // A request the page sends after that minute: any refresh it sent in the minute comes before it.
      await fresh.evaluate(`fetch("/console/console.css")`);
      await expect.poll(() => requests.some((url) => url.endsWith("/console/console.css")), POLL).toBe(true);
      expect(calls()).toBe(before);
      expect(await fresh.locator("main #jobs").count()).toBe(0);
      // The link leads back to the newest page, which refreshes again.
      await newest.click();
      await expect.poll(() => fresh.locator("#jobs tbody tr").count(), POLL).toBeGreaterThan(0);
      await fresh.close();
    });

    it("flags, skin tones and ZWJ sequences in names are shown whole; markup in them stays text", async () => {
      const account = accountIdOf(service.apiKey);
      const name = `team ${GRAPHEMES.join(" ")} <b>bold</b>`;
      const tagged = service.management.endpoints.create(account, {
        name,
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      const cell = page.locator(`tr[data-id="${tagged.id}"] td`).first();
      await expect.poll(() => cell.innerText(), POLL).toBe(name);
      expect(await page.locator(`tr[data-id="${tagged.id}"] td b`).count()).toBe(0);
      // Tag characters outside a flag still carry text no reader sees: written out as before.
      const hidden = service.management.endpoints.create(account, {
        name: `x\u{E0068}\u{E0069} \u{1F3F4}\u{E0068}\u{E0069}\u{E0020}\u{E0074}\u{E0068}\u{E0065}\u{E0072}\u{E0065}\u{E007F}`,
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      const hiddenCell = page.locator(`tr[data-id="${hidden.id}"] td`).first();
      await expect.poll(() => hiddenCell.innerText(), POLL).toContain("x\\u{e0068}\\u{e0069} ");
      expect(await hiddenCell.innerText()).toContain("\\u{e0020}");
    });

    it("a JSON value cut at 100,000 characters is cut before a flag it would split, never inside it", async () => {
      const prefix = JSON.stringify({ echoed: { s: "" } }, null, 2).indexOf('""') + 1;
      // The flag starts one unit before the bound: a cut there kept half of a surrogate pair.
      const s = `${"a".repeat(100_000 - prefix - 1)}${SCOTLAND}${"b".repeat(10)}`;
      const job = await runsyncOn(service, endpoint.id, { s });
      expect(job.status).toBe("COMPLETED");
      await page.goto(`${service.queueUrl}/console/#/job/${endpoint.id}/${job.id}`);
      const output = page.locator("#job pre").nth(1);
      await expect.poll(() => output.innerText(), POLL).toContain("more characters");
      const shown = (await output.innerText()).split("\n... (")[0] ?? "";
      const whole = JSON.stringify({ echoed: { s } }, null, 2);
      // Compared by length and end: a failing comparison of 100,000 characters prints them all.
      expect(shown.length).toBe(100_000 - 1);
      expect(shown.slice(-20)).toBe(whole.slice(100_000 - 21, 100_000 - 1));
      expect(await output.innerText()).toContain(`(${whole.length - shown.length} more characters`);
    });

    it("keyboard only: a link opened with Enter leaves the focus on the new view's heading, and Back names each view", async () => {
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      const row = page.locator(`tr[data-id="${endpoint.id}"] a`);
      await row.waitFor(POLL);
      expect(await page.title()).toBe("Endpoints - runpodkit console");
      // Tab from the heading: the first row's link (no stop on the way: nothing else is in between).
      await page.keyboard.press("Tab");
      const focused = () => page.evaluate(`document.activeElement?.textContent ?? ""`);
      for (let n = 0; n < 20 && (await focused()) !== "orders"; n++) await page.keyboard.press("Tab");
      await page.keyboard.press("Enter");
      await page.locator("main[data-view=endpoint]").waitFor(POLL);
      // Before, the focus fell to the page's body and the title stayed "runpodkit console".
      expect(await page.evaluate(`document.activeElement?.tagName`)).toBe("H1");
      expect(await focused()).toBe(`Endpoint ${endpoint.id}`);
      expect(await page.title()).toBe(`Endpoint ${endpoint.id} - runpodkit console`);
      await page.keyboard.press("Tab");
      expect(await focused()).toBe("Settings and workers");
      await page.goBack();
      await page.locator("main[data-view=endpoints]").waitFor(POLL);
      expect(await page.title()).toBe("Endpoints - runpodkit console");
      expect(await page.evaluate(`document.activeElement?.tagName`)).toBe("H1");
    });

    it("an endpoint that queued hundreds of jobs: its queue page reads the chart's 600 points once, then only new ones", async () => {
      const account = accountIdOf(service.apiKey);
      // No worker: each job queued is a change of the queue's depth, a point of the chart.
      const busy = service.management.endpoints.create(account, {
        name: "busy",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      for (let n = 0; n < 700; n++) await post(`/v2/${busy.id}/run`, { input: { n } });
      const sizes: number[] = [];
      const record = async (reply: Response) => {
        if (reply.url().includes(`/v2/${busy.id}/metrics`)) sizes.push((await reply.body()).length);
      };
      page.on("response", record);
      await page.goto(`${service.queueUrl}/console/#/jobs/${busy.id}`);
      const depth = page.locator('#chart [data-now="inQueue"]');
      await expect.poll(() => depth.innerText(), POLL).toBe("700");
      await post(`/v2/${busy.id}/run`, { input: { n: 700 } });
      await expect.poll(() => depth.innerText(), POLL).toBe("701");
      await expect.poll(() => sizes.length, POLL).toBeGreaterThanOrEqual(4);
      page.off("response", record);
      console.info(`queue page chart: ${sizes.length} reads, bytes each: ${sizes.join(", ")}`);
      // Before, each was the whole series: 600 points, 37 KB a second.
      expect(sizes[0]).toBeGreaterThan(30_000);
      for (const size of sizes.slice(1)) expect(size).toBeLessThan(1000);
      // The chart still spans what was recorded: its step line has a point per change.
      const corners = await page.locator('#chart polyline[data-series="inQueue"]').getAttribute("points");
      expect((corners ?? "").split(" ").length).toBeGreaterThan(1000);
    });

    it("selecting a worker's id in the jobs table to copy it keeps the page; Ctrl-click on a row opens it in a new tab", async () => {
      await page.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      const worker = page.locator("#jobs tbody tr").first().locator("td").nth(6).locator("code");
      await worker.waitFor(POLL);
      const box = await worker.boundingBox();
      if (!box) throw new Error("the worker's id is not on screen");
      // Dragged over with the mouse, as a user selects it to copy.
      await page.mouse.move(box.x + 1, box.y + box.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2, { steps: 5 });
      await page.mouse.up();
      // Before, the click that ends the drag opened the job's page, and the selection was gone.
      const workerId = await page.evaluate(`String(document.getSelection())`);
      expect(await page.evaluate("location.hash")).toBe(`#/jobs/${endpoint.id}`);
      expect(workerId).toBe(await worker.innerText());
      const row = page.locator("#jobs tbody tr").first();
      const jobId = await row.getAttribute("data-id");
      const [opened] = await Promise.all([
        context.waitForEvent("page"),
        row
          .locator("td")
          .nth(2)
          .click({ modifiers: ["Control"] }),
      ]);
      await opened.locator("main[data-view=job]").waitFor(POLL);
      expect(opened.url()).toContain(`#/job/${endpoint.id}/${jobId}`);
      // This tab stays where it was.
      expect(await page.evaluate("location.hash")).toBe(`#/jobs/${endpoint.id}`);
      await opened.close();
    });

    it("signing in on a slow network says it is signing in, and takes no second submission meanwhile", async () => {
      const fresh = await browser.newPage();
      await fresh.goto(`${service.queueUrl}/console/`);
      const cdp = await fresh.context().newCDPSession(fresh);
      await cdp.send("Network.enable");
      // 1.5 s each way, 50 KB/s: a train's network.
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 1500,
        downloadThroughput: 50_000,
        uploadThroughput: 20_000,
      });
      await fresh.locator("#key").fill(service.apiKey);
      const submit = fresh.locator("#login button[type=submit]");
      await submit.click();
      // Before, the key field emptied and nothing else changed for seconds.
      expect(await submit.innerText()).toBe("Signing in...");
      expect(await submit.isDisabled()).toBe(true);
      await fresh.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      expect(await fresh.locator("#login").isVisible()).toBe(false);
      await fresh.locator("#signout").click();
      expect(await submit.innerText()).toBe("Open the console");
      expect(await submit.isDisabled()).toBe(false);
      await fresh.close();
    });

    it("Back from a job opened far down the jobs list returns to that place in the list, on a busy machine too", async () => {
      const account = accountIdOf(service.apiKey);
      const long = service.management.endpoints.create(account, {
        name: "long",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      for (let n = 0; n < 50; n++) await post(`/v2/${long.id}/run`, { input: { n } });
      await page.goto(`${service.queueUrl}/console/#/jobs/${long.id}`);
      const row = page.locator("#jobs tbody tr").nth(40);
      await row.waitFor(POLL);
      await row.scrollIntoViewIfNeeded();
      const place = (await page.evaluate("scrollY")) as number;
      expect(place).toBeGreaterThan(500);
      const jobId = await row.getAttribute("data-id");
      // Quiet, then busy (Back reaching a page whose timers came due meanwhile): a few times, as the
      // browser's order of its queued tasks is not fixed.
      for (const busy of [false, true, true, true, true]) {
        await page.locator(`#jobs tbody tr[data-id="${jobId}"] td`).nth(2).click();
        await page.locator("main[data-view=job]").waitFor(POLL);
        // A new view opens at its top.
        expect(await page.evaluate("scrollY")).toBe(0);
        if (busy) await whileBusy(page, () => page.goBack());
        else await page.goBack();
        await page.locator(`#jobs tbody tr[data-id="${jobId}"]`).waitFor(POLL);
        // Before, the list opened at its top: before the rows came (the browser restored the place on an
        // empty view); later, when busy, as the job page's pending save of its own place (0) ran after
        // Back had changed the entry, over the list's.
        await expect.poll(() => page.evaluate("scrollY"), POLL).toBe(place);
      }
    });

    it("Back from the older jobs page to the first page's bottom, then Forward: each opens where it was, on a busy machine too", async () => {
      const account = accountIdOf(service.apiKey);
      const paged = service.management.endpoints.create(account, {
        name: "paged",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      // Two full pages of jobs.
      for (let n = 0; n < 100; n++) await post(`/v2/${paged.id}/run`, { input: { n } });
      await page.goto(`${service.queueUrl}/console/#/jobs/${paged.id}`);
      const older = page.locator("main a[data-page=older]");
      await older.waitFor(POLL);
      await older.scrollIntoViewIfNeeded();
      const place = (await page.evaluate("scrollY")) as number;
      expect(place).toBeGreaterThan(500);
      await older.click();
      await expect.poll(() => page.locator("main h2").nth(1).innerText(), POLL).toBe("Older jobs");
      await page.locator("#jobs tbody tr").nth(40).waitFor(POLL);
      // A new page opens at its top; the older page is as long as the first.
      expect(await page.evaluate("scrollY")).toBe(0);
      expect(
        await page.evaluate("document.documentElement.scrollHeight - innerHeight"),
      ).toBeGreaterThanOrEqual(place);
      await whileBusy(page, () => page.goBack());
      await expect.poll(() => page.locator("main h2").nth(1).innerText(), POLL).toBe("Recent jobs");
      await expect.poll(() => page.evaluate("scrollY"), POLL).toBe(place);
      // At once after the first page's place came back (its save pending), Forward on a busy page.
      await whileBusy(page, () => page.goForward());
      await expect.poll(() => page.locator("main h2").nth(1).innerText(), POLL).toBe("Older jobs");
      await page.locator("#jobs tbody tr").nth(40).waitFor(POLL);
      // Before, the first page's place, saved late into the older page's entry, was where it opened.
      await page.evaluate(
        "new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))",
      );
      expect(await page.evaluate("scrollY")).toBe(0);
      expect(await page.evaluate("history.state.scrollY ?? 0")).toBe(0);
    });

    it("a reload right after scrolling the jobs list reopens it at that place", async () => {
      const account = accountIdOf(service.apiKey);
      const reload = service.management.endpoints.create(account, {
        name: "reload",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      for (let n = 0; n < 50; n++) await post(`/v2/${reload.id}/run`, { input: { n } });
      await page.goto(`${service.queueUrl}/console/#/jobs/${reload.id}`);
      const row = page.locator("#jobs tbody tr").nth(40);
      await row.waitFor(POLL);
      // Scrolled, and reloaded at once: before the place is saved (a save waits for scrolling to pause).
      const place = (await page.evaluate(
        `document.querySelectorAll("#jobs tbody tr")[40].scrollIntoView(); scrollY`,
      )) as number;
      expect(place).toBeGreaterThan(500);
      await page.reload();
      await page.locator("#jobs tbody tr").nth(40).waitFor(POLL);
      // Before, the list reopened at its top.
      await expect.poll(() => page.evaluate("scrollY"), POLL).toBe(place);
    });

    it("Back pressed the moment the jobs list stops scrolling, then Forward: the list is where it was left", async () => {
      const account = accountIdOf(service.apiKey);
      const quick = service.management.endpoints.create(account, {
        name: "quick",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      for (let n = 0; n < 50; n++) await post(`/v2/${quick.id}/run`, { input: { n } });
      await page.goto(`${service.queueUrl}/console/#/endpoints`);
      await page.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      await page.evaluate(`location.hash = "#/jobs/${quick.id}"`);
      await page.locator("#jobs tbody tr").nth(40).waitFor(POLL);
      // Scrolled, and Back at once: before the place is saved (a save waits for scrolling to pause).
      const place = (await page.evaluate(
        `document.querySelectorAll("#jobs tbody tr")[40].scrollIntoView(); scrollY`,
      )) as number;
      expect(place).toBeGreaterThan(500);
      await page.goBack();
      await page.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      await page.goForward();
      await page.locator("#jobs tbody tr").nth(40).waitFor(POLL);
      // Before, the list came back at its top (or where it was before the last scroll).
      await expect.poll(() => page.evaluate("scrollY"), POLL).toBe(place);
    });

    it("a network that stops answering (no reply, no error) is said so within 15 s, and the page recovers with it", async () => {
      // Between the browser and the service: passes bytes on until stalled, then drops them (a
      // laptop woken on another network, a VPN gone), as nothing refuses or resets the connection.
      let stalled = false;
      const sockets = new Set<Socket>();
      const relay = createServer((socket) => {
        const upstream = tcpConnect(service.port, "127.0.0.1");
        sockets.add(socket);
        socket.on("data", (data) => stalled || upstream.write(data));
        upstream.on("data", (data) => stalled || socket.write(data));
        socket.on("close", () => {
          sockets.delete(socket);
          upstream.destroy();
        });
        upstream.on("close", () => socket.destroy());
        socket.on("error", () => upstream.destroy());
        upstream.on("error", () => socket.destroy());
      });
      // Port 0: one the OS picks for this relay (one taken earlier and let go, another fork may hold).
      await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
      const { port } = relay.address() as AddressInfo;
      const stalling = await context.newPage();
      await stalling.clock.install();
      try {
        await stalling.goto(`http://127.0.0.1:${port}/console/#/jobs/${endpoint.id}`);
        await stalling.locator('[data-count="completed"]').waitFor(POLL);
        stalled = true;
        // The next refresh asks, and no answer comes; 15 s on the page's clock later it says so.
        await stalling.clock.runFor(1_000);
        await stalling.clock.runFor(15_000);
        const error = stalling.locator("main [data-view-error]");
        // Before, the page showed its last data as if current, with no word, for as long as it hung.
        await expect.poll(() => error.innerText(), POLL).toContain("The service does not answer");
        expect(await stalling.locator('[data-count="completed"]').count()).toBe(1);
        // The network comes back (its connections had dropped what they carried: they are gone).
        stalled = false;
        for (const socket of sockets) socket.destroy();
        await stalling.clock.runFor(2_000);
        await expect.poll(() => error.count(), POLL).toBe(0);
      } finally {
        await stalling.close();
        // The browser keeps its connections for other pages: closed here, or close() waits for them.
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => relay.close(resolve));
      }
    });

    it("keyboard only: on a queue with jobs waiting, a job's row keeps the focus while the table redraws each second", async () => {
      const account = accountIdOf(service.apiKey);
      const waiting = service.management.endpoints.create(account, {
        name: "waiting",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      for (let n = 0; n < 3; n++) await post(`/v2/${waiting.id}/run`, { input: { n } });
      await page.goto(`${service.queueUrl}/console/#/jobs/${waiting.id}`);
      await page.locator("#jobs tbody tr").nth(2).waitFor(POLL);
      // Tab from the heading to the second job's row.
      const second = await page.locator("#jobs tbody tr").nth(1).locator("a").getAttribute("href");
      const focused = () => page.evaluate(`document.activeElement?.getAttribute("href") ?? ""`);
      for (let n = 0; n < 30 && (await focused()) !== second; n++) await page.keyboard.press("Tab");
      expect(await focused()).toBe(second);
      // Each second the waiting jobs' bars grow: the table is drawn again. Two redraws later:
      await page.evaluate(`window.__redraws = 0;
        new MutationObserver(() => window.__redraws++).observe(document.getElementById("jobs"), { childList: true });`);
      await expect.poll(() => page.evaluate("window.__redraws"), POLL).toBeGreaterThanOrEqual(2);
      // Before, the focus fell to the page's body at the first redraw.
      expect(await focused()).toBe(second);
      await page.keyboard.press("Enter");
      await page.locator("main[data-view=job]").waitFor(POLL);
      expect(page.url()).toContain(second ?? "");
    });

    it("an address with an id longer than any (two ids pasted together) says so once, not every second", async () => {
      const id = `${endpoint.id}`.repeat(10);
      await page.goto(`${service.queueUrl}/console/#/endpoint/${id}`);
      const error = page.locator("main [data-view-error]");
      // Before, the service's 414 came back every second, as if it might change.
      await expect.poll(() => error.innerText(), POLL).toContain("no id is that long");
      expect(await error.innerText()).toContain("This page is no longer refreshed.");
      expect(await page.locator("main a[href='#/endpoints']").count()).toBe(1);
    });

    it("two tabs: Sign out in one signs the other out too, saying why", async () => {
      // A browser of their own: Sign out reaches every console tab of a browser (this file's page too).
      const own = await browser.newContext();
      await signIn(own, service.apiKey);
      const first = await own.newPage();
      const second = await own.newPage();
      await first.goto(`${service.queueUrl}/console/#/endpoints`);
      await second.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await first.locator("main[data-view=endpoints] tbody tr").first().waitFor(POLL);
      await second.locator('[data-count="completed"]').waitFor(POLL);
      await first.locator("#signout").click();
      // Before, the other tab kept its copy of the key and went on showing the account.
      await expect
        .poll(() => second.locator("#login-error").innerText(), POLL)
        .toBe("Signed out in another tab of the console.");
      expect(await second.locator("main").innerText()).toBe("");
      expect(await second.evaluate(() => sessionStorage.getItem("runpodkit.apiKey"))).toBeNull();
      await own.close();
    });

    it("on a queue with jobs waiting, a time selected in the jobs table stays selected while the page refreshes", async () => {
      const account = accountIdOf(service.apiKey);
      const waiting = service.management.endpoints.create(account, {
        name: "waiting-select",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      await post(`/v2/${waiting.id}/run`, { input: { n: 1 } });
      await page.goto(`${service.queueUrl}/console/#/jobs/${waiting.id}`);
      const queued = page.locator("#jobs tbody tr").first().locator("td").nth(2);
      await queued.waitFor(POLL);
      await queued.selectText();
      const selected = await page.evaluate(`String(document.getSelection())`);
      expect(selected).toBe(await queued.innerText());
      let refreshes = 0;
      const count = (reply: Response) => {
        if (reply.url().includes(`/v2/${waiting.id}/jobs?`)) refreshes += 1;
      };
      page.on("response", count);
      await expect.poll(() => refreshes, POLL).toBeGreaterThanOrEqual(3);
      page.off("response", count);
      // Before, the waiting job's growing bar redrew the table each second and the selection went.
      expect(await page.evaluate(`String(document.getSelection())`)).toBe(selected);
      // Let go, the table is drawn again with what changed meanwhile.
      await page.evaluate(`window.__drawn = 0;
        new MutationObserver(() => window.__drawn++).observe(document.getElementById("jobs"), { childList: true });
        document.getSelection().removeAllRanges();`);
      await expect.poll(() => page.evaluate("window.__drawn"), POLL).toBeGreaterThanOrEqual(1);
    });

    it("a tab in the background asks nothing, and refreshes the moment it is shown again", async () => {
      const tab = await context.newPage();
      await tab.clock.install();
      const requests: string[] = [];
      tab.on("request", (request) => requests.push(request.url()));
      const calls = () => requests.filter((url) => url.includes(`/v2/${endpoint.id}/`));
      await tab.goto(`${service.queueUrl}/console/#/jobs/${endpoint.id}`);
      await tab.locator('[data-count="completed"]').waitFor(POLL);
      // Hidden as a tab is behind another (headless Chromium shows every page: its state is set here).
      await tab.evaluate(`Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__hidden });
        Object.defineProperty(document, "visibilityState", { configurable: true, get: () => window.__hidden ? "hidden" : "visible" });
        window.__hidden = true; document.dispatchEvent(new Event("visibilitychange"));`);
      await tab.clock.runFor(2_000);
      const before = calls().length;
      // A minute in the background: before, 60 refreshes of 3 calls each.
      await tab.clock.runFor(60_000);
      // A request sent after that minute: any refresh sent in the minute comes before it.
      await tab.evaluate(`fetch("/console/console.css")`);
      await expect.poll(() => requests.some((url) => url.endsWith("/console/console.css")), POLL).toBe(true);
      expect(calls().length).toBe(before);
      // Shown again: it refreshes at once.
      await tab.evaluate(`window.__hidden = false; document.dispatchEvent(new Event("visibilitychange"));`);
      await expect.poll(() => calls().length, POLL).toBeGreaterThan(before);
      await tab.close();
    });
  },
);
