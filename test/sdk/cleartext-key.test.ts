import { afterEach, describe, expect, it } from "vitest";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";

/**
 * A client whose baseUrl is plain http:// to another machine sends the API key over the network
 * unencrypted (REST and the job API in a header, GraphQL in the URL). It says so once, as a process
 * warning, when it is built: nothing is sent here (192.0.2.0/24 is TEST-NET-1, never routed).
 */

const KEY = "rpa_CLEARTEXTKEY_0123456789";

interface Seen {
  name: string;
  code: string | undefined;
  message: string;
}

let listener: ((warning: Error) => void) | undefined;
afterEach(() => {
  if (listener) process.off("warning", listener);
  listener = undefined;
});

/** The process warnings emitted while `build` runs (Node emits them on the next tick). */
async function warningsOf(build: () => Array<{ close(): Promise<void> }>): Promise<Seen[]> {
  const seen: Seen[] = [];
  listener = (warning) =>
    seen.push({ name: warning.name, code: (warning as { code?: string }).code, message: warning.message });
  process.on("warning", listener);
  const clients = build();
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all(clients.map((client) => client.close()));
  return seen;
}

describe("an API key sent in clear text to another machine", () => {
  it("is one SecurityWarning per origin naming the client and the origin, never the key", async () => {
    const seen = await warningsOf(() => [
      new RestClient({ apiKey: KEY, baseUrl: "http://192.0.2.10:8080/v1" }),
      // The same origin again, from another client: already said.
      new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: "http://192.0.2.10:8080/v2" }),
      new GraphQLClient({ apiKey: KEY, baseUrl: "http://runpod.internal.example/graphql" }),
    ]);
    expect(seen.map(({ name, code }) => ({ name, code }))).toEqual([
      { name: "SecurityWarning", code: "RUNPODKIT_CLEARTEXT_API_KEY" },
      { name: "SecurityWarning", code: "RUNPODKIT_CLEARTEXT_API_KEY" },
    ]);
    expect(seen[0]?.message).toMatch(/^rest: baseUrl http:\/\/192\.0\.2\.10:8080 is plain http:/);
    expect(seen[1]?.message).toMatch(/^graphql: baseUrl http:\/\/runpod\.internal\.example is plain http:/);
    for (const { message } of seen) {
      expect(message).toContain("https://");
      expect(message).not.toContain(KEY);
    }
  });

  it("is not warned about for https:// or this machine (localhost, *.localhost, 127.0.0.0/8, ::1)", async () => {
    const seen = await warningsOf(() => [
      new RestClient({ apiKey: KEY, baseUrl: "https://192.0.2.11/v1" }),
      new RestClient({ apiKey: KEY, baseUrl: "http://127.0.0.1:8080/v1" }),
      new RestClient({ apiKey: KEY, baseUrl: "http://127.1.2.3:8080/v1" }),
      new RestClient({ apiKey: KEY, baseUrl: "http://localhost:8080/v1" }),
      new RestClient({ apiKey: KEY, baseUrl: "http://LOCALHOST./v1" }),
      new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: "http://ep1.localhost:8080/v2" }),
      new GraphQLClient({ apiKey: KEY, baseUrl: "http://[::1]:8080/graphql" }),
      new GraphQLClient({ apiKey: KEY, baseUrl: "http://[::ffff:127.0.0.1]:8080/graphql" }),
    ]);
    expect(seen).toEqual([]);
  });
});
