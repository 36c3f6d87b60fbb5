import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostGate, hostNameOf, hostPolicy } from "../../../service/edge/hosts";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "../management/client";
import { startCli } from "./cli";

/*
 * DNS rebinding: a page on evil.example that points its own name at 127.0.0.1 is, to the browser,
 * still evil.example, so it could read what the service answers without a key (the console,
 * openapi.json). Bound to loopback, the service answers only Host names that mean this machine.
 */

let service: TestService;
let endpointId: string;
beforeAll(async () => {
  service = await withService({ config: { allowedHosts: ["dev.box.lan"] } });
  const api = clients(service);
  const template = await api.rest<{ id: string }>("POST", "/templates", {
    name: "hosts",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await api.rest<{ id: string }>("POST", "/endpoints", {
    name: "hosts",
    templateId: template.body.id,
    workersMax: 1,
  });
  endpointId = endpoint.body.id;
});
afterAll(() => service?.close());

/** One request to the service with `host` as its Host header (fetch does not let a page set it either). */
function withHost(
  host: string,
  path: string,
  method = "GET",
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const sent = request(
      { host: "127.0.0.1", port: service.port, path, method, headers: { ...headers, host } },
      (reply) => {
        let text = "";
        reply.setEncoding("utf8");
        reply.on("data", (chunk: string) => {
          text += chunk;
        });
        reply.on("end", () =>
          resolve({ status: reply.statusCode ?? 0, text, connection: reply.headers.connection }),
        );
      },
    );
    sent.on("error", reject);
    sent.end(method === "POST" ? "{}" : undefined);
  });
}

describe("a service bound to loopback answers only its own names", () => {
  it("refuses a rebinding page's Host on the console, openapi.json and the job API's fast path: 421 naming the Host and --allowed-host", async () => {
    const host = `evil.example:${service.port}`;
    const message = `host: this service answers requests addressed to localhost, 127.0.0.1, [::1] or its --allowed-host names, not "${host}" (a page that points its own name at this machine is refused); to reach it by that name, start it with --allowed-host evil.example`;
    for (const path of ["/console/", "/console/console.js", "/v1/openapi.json", "/v1/docs/"]) {
      const reply = await withHost(host, path);
      expect(reply.status).toBe(421);
      expect(reply.connection).toBe("close");
      expect(JSON.parse(reply.text)).toEqual({ message, code: "HOST_NOT_ALLOWED", field: "host" });
    }
    // With a key too (a page could hold one): the job API's fast /run, in the job API's shape.
    const run = await withHost(host, `/v2/${endpointId}/run`, "POST", {
      authorization: service.apiKey,
      "content-type": "application/json",
    });
    expect(run.status).toBe(421);
    expect(JSON.parse(run.text)).toEqual({
      error: message,
      message,
      code: "HOST_NOT_ALLOWED",
      field: "host",
    });
    // A name that only looks like loopback is not it.
    expect((await withHost("localhost.evil.example", "/console/")).status).toBe(421);
    expect((await withHost("127.0.0.1.nip.io", "/console/")).status).toBe(421);
  });

  it("answers localhost, 127.x, [::1] (with or without a port) and the configured names", async () => {
    for (const host of [
      `localhost:${service.port}`,
      "LOCALHOST",
      `127.0.0.1:${service.port}`,
      "127.0.0.2",
      `[::1]:${service.port}`,
      "dev.box.lan",
      `DEV.box.lan.:${service.port}`,
    ]) {
      const reply = await withHost(host, "/console/");
      expect({ host, status: reply.status }).toEqual({ host, status: 200 });
    }
  });

  it("still runs jobs: workers reach the service by the address it gave them", async () => {
    const reply = await fetch(`${service.queueUrl}/v2/${endpointId}/runsync?wait=60000`, {
      method: "POST",
      headers: { authorization: service.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ input: { hello: "hosts" } }),
    });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({ status: "COMPLETED" });
  });
});

describe("the policy", () => {
  it("is off when bound off loopback with no names given; names given switch it on", () => {
    expect(hostPolicy("0.0.0.0", [], false)).toBeNull();
    expect(hostPolicy("0.0.0.0", ["My.Host."], false)).toEqual(new Set(["my.host", "0.0.0.0"]));
    expect(hostPolicy("127.0.0.1", [], true)).toEqual(new Set(["127.0.0.1"]));
  });

  it("refuses a name that is not a host name or address, naming the setting", async () => {
    expect(() => hostPolicy("127.0.0.1", ["evil.example/path"], true)).toThrow(
      'startService: allowedHosts (--allowed-host): "evil.example/path" is not a host name or IP address',
    );
    await expect(withService({ config: { allowedHosts: ["a b"] } })).rejects.toThrow(/--allowed-host/);
  });

  it("a server's gate answers as the policy does, for a value it let through before and for one it refused", () => {
    const allowed = hostGate(hostPolicy("127.0.0.1", ["dev.box.lan"], true));
    const asked = [
      "localhost:8080",
      "evil.example",
      "localhost:8080",
      "dev.box.lan:1",
      "evil.example",
      "[::1]:9",
    ];
    expect(asked.map((host) => allowed(host))).toEqual([true, false, true, true, false, true]);
    // Subdomains of localhost are loopback (RFC 6761: an LB endpoint's local url); look-alikes are not.
    const named = ["ab12cd.localhost:8080", "x.y.localhost", "localhost.evil.example", "evillocalhost"];
    expect(named.map((host) => allowed(host))).toEqual([true, true, false, false]);
    // Many distinct allowed values (127.x:port) past what it remembers are still answered right.
    for (let port = 1; port <= 100; port++) expect(allowed(`127.0.0.${port % 250}:${port}`)).toBe(true);
    expect(allowed("evil.example:80")).toBe(false);
    expect(allowed(undefined)).toBe(true);
    expect(hostGate(null)("evil.example")).toBe(true);
  });

  it("reads the name of each Host form", () => {
    expect(hostNameOf("Example.COM:8080")).toBe("example.com");
    expect(hostNameOf("[::1]:8080")).toBe("::1");
    expect(hostNameOf("localhost.")).toBe("localhost");
    expect(hostNameOf("::1")).toBe("::1");
  });
});

describe("runpodkit serve --allowed-host", () => {
  it("adds a name the service answers; a bad one is refused at start, naming the flag", async () => {
    const env = { RUNPODKIT_API_KEYS: "rpk_hosts_cli_0123456789abcdef" };
    const cli = startCli(["--data", ":memory:", "--allowed-host", "dev.box.lan"], env);
    try {
      const { restUrl } = await cli.ready;
      const port = Number(new URL(restUrl).port);
      const ask = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const sent = request({ host: "127.0.0.1", port, path: "/console/", headers: { host } }, (reply) => {
            reply.resume();
            resolve(reply.statusCode ?? 0);
          });
          sent.on("error", reject);
          sent.end();
        });
      expect(await ask(`dev.box.lan:${port}`)).toBe(200);
      expect(await ask(`other.lan:${port}`)).toBe(421);
    } finally {
      cli.kill();
    }
    const bad = startCli(["--data", ":memory:", "--allowed-host", "http://x/"], env);
    expect((await bad.exited).code).toBe(1);
    expect(bad.stderr()).toContain(
      'allowedHosts (--allowed-host): "http://x/" is not a host name or IP address',
    );
  });
});
