import { request } from "undici";
import { type Harness, KEY } from "./jobs/harness";

/** An HTTP reply as the spec tests read it: its status and its JSON body ({} when empty). */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A request with the account key to a harness, its reply read whole; the content-type only with a body. */
export async function send(
  h: Harness,
  method: string,
  path: string,
  body?: string | Buffer,
  contentType = "application/json",
): Promise<Answer> {
  const headers: Record<string, string> = { authorization: KEY };
  if (body !== undefined) headers["content-type"] = contentType;
  return readAnswer(await request(`${h.url}${path}`, { method: method as "POST", headers, body }));
}

/** Reads a reply whole as an Answer. */
export async function readAnswer(reply: {
  statusCode: number;
  body: { text(): Promise<string> };
}): Promise<Answer> {
  const text = await reply.body.text();
  return { status: reply.statusCode, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** The job API's and REST's error bodies carry `field`; GraphQL's, under its error's extensions. */
export function fieldOf(answer: Answer): unknown {
  const errors = answer.body.errors as { extensions?: { field?: string } }[] | undefined;
  return errors ? errors[0]?.extensions?.field : answer.body.field;
}

/** The error's message: the body's `message`, or GraphQL's first error's. */
export function messageOf(answer: Answer): unknown {
  const errors = answer.body.errors as { message?: string }[] | undefined;
  return errors ? errors[0]?.message : answer.body.message;
}
