import type { TestService } from "../helpers/service";

/** One job through the job API's /runsync, as a client of the console's service sends it. */
export async function runsyncOn(
  service: TestService,
  endpointId: string,
  input: object,
): Promise<{ id: string; status: string }> {
  const reply = await fetch(`${service.queueUrl}/v2/${endpointId}/runsync`, {
    method: "POST",
    headers: { authorization: service.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ input }),
  });
  return (await reply.json()) as { id: string; status: string };
}
