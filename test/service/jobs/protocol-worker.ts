import { request } from "undici";
import { type Harness, KEY, type Reply } from "./harness";

/**
 * A worker that speaks the worker protocol over HTTP exactly as the real Python library does
 * (docs/worker-protocol.md): raw key in Authorization, `?gpu=` templates with `&` appended parameters,
 * JSON bodies sent as application/x-www-form-urlencoded with a bogus `charset` header.
 */
export class ProtocolWorker {
  readonly #h: Harness;
  readonly endpointId: string;
  readonly id: string;
  readonly key: string;

  constructor(h: Harness, endpointId: string, id: string, key = KEY) {
    this.#h = h;
    this.endpointId = endpointId;
    this.id = id;
    this.key = key;
  }

  /** GET job-take; `holding` sets job_in_progress. */
  take(holding = false): Promise<Reply> {
    return this.#get(`job-take/${this.id}?gpu=LOCAL&job_in_progress=${holding ? 1 : 0}`);
  }

  takeBatch(size: number, holding = false): Promise<Reply> {
    return this.#get(
      `job-take-batch/${this.id}?gpu=LOCAL&batch_size=${size}&job_in_progress=${holding ? 1 : 0}`,
    );
  }

  stopSignals(): Promise<Reply> {
    return this.#get(`job-stop/${this.id}?gpu=LOCAL`);
  }

  ping(jobIds: string[] = [], extra = ""): Promise<Reply> {
    const ids = jobIds.length > 0 ? `&job_id=${encodeURIComponent(jobIds.join(","))}` : "";
    return this.#get(`ping/${this.id}?gpu=LOCAL${ids}&runpod_version=1.12.0${extra}`);
  }

  /** POST job-done with a JSON text body, as the Python library sends it. */
  done(jobId: string, body: string | object, isStream = false): Promise<Reply> {
    return this.#post(`job-done/${this.id}/${jobId}?gpu=LOCAL&isStream=${isStream}`, body, jobId);
  }

  progress(jobId: string, output: unknown): Promise<Reply> {
    return this.done(jobId, { status: "IN_PROGRESS", output });
  }

  streamChunk(jobId: string, output: unknown): Promise<Reply> {
    return this.streamBody(jobId, { output });
  }

  /** POST job-stream with a whole body (a chunk's output and its metrics). */
  streamBody(jobId: string, body: object): Promise<Reply> {
    return this.#post(`job-stream/${this.id}/${jobId}?gpu=LOCAL&isStream=false`, body, jobId);
  }

  async #get(path: string): Promise<Reply> {
    const reply = await request(`${this.#h.url}/v2/${this.endpointId}/${path}`, {
      method: "GET",
      headers: {
        authorization: this.key,
        "content-type": "application/json",
        "user-agent": "RunPod-Python-SDK/1.12.0",
      },
    });
    return read(reply);
  }

  async #post(path: string, body: string | object, jobId: string): Promise<Reply> {
    const reply = await request(`${this.#h.url}/v2/${this.endpointId}/${path}`, {
      method: "POST",
      headers: {
        authorization: this.key,
        "content-type": "application/x-www-form-urlencoded",
        charset: "utf-8",
        "x-request-id": jobId,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    return read(reply);
  }
}

async function read(reply: Awaited<ReturnType<typeof request>>): Promise<Reply> {
  const text = await reply.body.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  return { status: reply.statusCode, headers: reply.headers, body, text };
}
