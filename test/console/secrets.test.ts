import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";
import { signIn } from "./support";

const CHROMIUM = "/usr/bin/chromium";
const HAS_CHROMIUM = existsSync(CHROMIUM);
const POLL = { timeout: 15_000 };
/** Values the console shows by name only: none may reach the page, shown or not. */
const ENDPOINT_SECRET = "hf_endpoint_value_7f3a";
const TEMPLATE_SECRET = "template_value_91c2";
const REGISTRY_PASSWORD = "registry_password_5d0e";

/**
 * What the console's own calls carry back from the service while a user looks at every view: the
 * env values it shows by name only must not be in any reply (REST sends them whole; the page asks
 * GraphQL for the names).
 */
describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? "console replies carry no secret in headless Chromium"
    : `console replies carry no secret in headless Chromium: SKIPPED, ${CHROMIUM} is absent (apt-get install -y chromium)`,
  () => {
    let service: TestService;
    let browser: Browser;
    let page: Page;
    let endpoint: EndpointRecord;
    const replies: { url: string; body: string }[] = [];

    beforeAll(async () => {
      service = await withService();
      const account = accountIdOf(service.apiKey);
      const auth = service.management.registryAuths.create(account, {
        name: "registry",
        username: "me",
        password: REGISTRY_PASSWORD,
      });
      const template = service.management.templates.create(account, {
        name: "model",
        imageName: "acme/model",
        isServerless: true,
        env: { MODEL_KEY: TEMPLATE_SECRET },
        containerRegistryAuthId: auth.id,
      });
      endpoint = service.management.endpoints.create(account, {
        name: "model",
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
        env: { HF_TOKEN: ENDPOINT_SECRET },
      });
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
      page.on("response", async (reply) => {
        const body = await reply.text().catch(() => "");
        replies.push({ url: reply.url(), body });
      });
    });

    afterAll(async () => {
      await browser?.close();
      await service?.close();
    });

    it("signing in and every view: env names shown, no env value or password in any reply", async () => {
      await page.goto(`${service.queueUrl}/console/`);
      await page.locator("#key").fill(service.apiKey);
      await page.locator("#login button[type=submit]").click();
      const list = page.locator(`main[data-view=endpoints] tr[data-id="${endpoint.id}"]`);
      await list.waitFor(POLL);
      expect(await list.innerText()).toContain("model");

      await page.goto(`${service.queueUrl}/console/#/endpoint/${endpoint.id}`);
      await expect.poll(() => page.locator("#settings").innerText(), POLL).toContain("HF_TOKEN");
      // GPUs as GraphQL's pools (the default choice here).
      expect(await page.locator("#settings").innerText()).toMatch(/GPUs\s+[A-Z]+_\d+.* x 1/);

      await page.goto(`${service.queueUrl}/console/#/templates`);
      await expect
        .poll(() => page.locator("main[data-view=templates] tbody").innerText(), POLL)
        .toContain("MODEL_KEY");

      await page.goto(`${service.queueUrl}/console/#/registry`);
      await expect
        .poll(() => page.locator("main[data-view=registry] tbody").innerText(), POLL)
        .toContain("registry");

      for (const secret of [ENDPOINT_SECRET, TEMPLATE_SECRET, REGISTRY_PASSWORD]) {
        expect(replies.filter((r) => r.body.includes(secret)).map((r) => r.url)).toEqual([]);
      }
      // The names came through GraphQL, asked for by name only.
      expect(replies.some((r) => r.url.endsWith("/graphql") && r.body.includes("HF_TOKEN"))).toBe(true);
    });

    it("a job's input, shown on its page, is not left in the browser's disk cache", async () => {
      const account = accountIdOf(service.apiKey);
      // No worker: the job stays queued, its page reading it (input included) every second.
      const idle = service.management.endpoints.create(account, {
        name: "idle",
        templateId: endpoint.templateId,
        workersMin: 0,
        workersMax: 0,
      });
      const marker = `patient-record-${Date.now()}`;
      const run = await fetch(`${service.queueUrl}/v2/${idle.id}/run`, {
        method: "POST",
        headers: { authorization: service.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: { note: marker } }),
      });
      const { id } = (await run.json()) as { id: string };
      const profile = mkdtempSync(join(tmpdir(), "runpodkit-profile-"));
      try {
        const context = await chromium.launchPersistentContext(profile, {
          executablePath: CHROMIUM,
          args: ["--no-sandbox"],
        });
        await signIn(context, service.apiKey);
        const tab = await context.newPage();
        await tab.goto(`${service.queueUrl}/console/#/job/${idle.id}/${id}`);
        await expect.poll(() => tab.locator("#job").innerText(), POLL).toContain(marker);
        // Refreshed twice more, then closed: the cache is written by then.
        for (let n = 0; n < 2; n++) await tab.waitForResponse((r) => r.url().includes(`job=${id}`));
        await context.close();
        const holding: string[] = [];
        const walk = (dir: string) => {
          for (const name of readdirSync(dir)) {
            const path = join(dir, name);
            if (statSync(path).isDirectory()) walk(path);
            else if (readFileSync(path).includes(marker)) holding.push(path.slice(profile.length));
          }
        };
        walk(profile);
        expect(holding).toEqual([]);
      } finally {
        rmSync(profile, { recursive: true, force: true });
      }
    });
  },
);
