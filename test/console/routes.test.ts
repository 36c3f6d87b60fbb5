import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../helpers/service";

/** The console's files as the service serves them: from the package, with nothing fetched elsewhere. */
describe("console routes", () => {
  let service: TestService;
  beforeAll(async () => {
    service = await withService();
  });
  afterAll(async () => service?.close());

  const get = (path: string) => fetch(`${service.queueUrl}${path}`, { redirect: "manual" });

  it("/console redirects to the page, served without a key and with a same-origin policy", async () => {
    const redirect = await get("/console");
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("/console/");
    const page = await get("/console/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("content-security-policy")).toContain("connect-src 'self'");
    // No inline style either: console.js sets its computed styles through the CSSOM.
    expect(page.headers.get("content-security-policy")).toContain("style-src 'self';");
    expect(page.headers.get("content-security-policy")).not.toContain("unsafe-inline");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console/console.js">');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it("serves its script and stylesheet, which load nothing from elsewhere, and nothing else", async () => {
    const script = await get("/console/console.js");
    expect(script.headers.get("content-type")).toContain("text/javascript");
    const code = await script.text();
    expect(code).toContain("sessionStorage");
    expect(code).not.toMatch(/\bimport\s.*from\s|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect((await get("/console/console.css")).headers.get("content-type")).toContain("text/css");
    const missing = await get("/console/secrets.json");
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("no such console file: secrets.json");
    // The name echoed back is the requester's: the reply is text, never sniffed as a page.
    const echoed = await get("/console/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    expect(echoed.status).toBe(404);
    expect(echoed.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(echoed.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
