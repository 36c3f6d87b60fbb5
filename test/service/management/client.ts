import type { TestService } from "../../helpers/service";

export interface Reply<T = unknown> {
  status: number;
  body: T;
  text: string;
}

/** Minimal wire client for the service's own tests: real HTTP through the global (undici) fetch. */
export function clients(service: TestService) {
  async function send<T>(url: string, init: RequestInit): Promise<Reply<T>> {
    const response = await fetch(url, init);
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, body: body as T, text };
  }

  /** A REST call; `key: null` sends no Authorization header, a string body is sent as is. */
  function rest<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    key: string | null = service.apiKey,
  ) {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    return send<T>(`${service.restUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
  }

  /** A GraphQL call with the key in ?api_key= (the spec's way). */
  async function gql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    key: string = service.apiKey,
  ) {
    const reply = await send<{
      data: T;
      errors?: { message: string; extensions?: { code: string; field?: string } }[];
    }>(`${service.graphqlUrl}?api_key=${encodeURIComponent(key)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query, variables }),
    });
    return reply;
  }

  return { rest, gql, send };
}
