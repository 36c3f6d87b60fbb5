import type { Agent, request } from "undici";
import type { WebhookPayload } from "../../../sdk/schemas/job";
import type { Clock } from "../../clock";
import { JOB_POLICY } from "../policy";

export interface WebhookOptions {
  /** Time allowed for one delivery attempt, ms. */
  timeoutMs: number;
  /** Attempts after the first (the spec: 2). */
  retries: number;
  /** Spacing between attempts, ms (the spec: 10 s). */
  spacingMs: number;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = {
  timeoutMs: 10_000,
  retries: JOB_POLICY.webhookRetries,
  spacingMs: JOB_POLICY.webhookSpacingMs,
};

/** One delivery attempt as the receiver answered it (status 0: no answer). */
export interface WebhookAttempt {
  url: string;
  jobId: string;
  attempt: number;
  status: number;
}

/** undici's pool and request function, as the first delivery loads them. */
interface WebhookHttp {
  agent: Agent;
  request: typeof request;
}

/**
 * Delivers a finished job's status envelope to its webhook: POST JSON, success is a 200; otherwise
 * up to `retries` more attempts, `spacingMs` apart. The spacing and timeouts run on the injected clock
 * (the spec's 10 s rule is tested in milliseconds), which is why this small loop is not undici's
 * retry interceptor, whose waits are wall-clock. A failed delivery never changes the job.
 */
export class Webhooks {
  readonly #clock: Clock;
  readonly #options: WebhookOptions;
  /** undici and its connection pool, loaded by the first delivery (most runs never send a webhook). */
  #http: Promise<WebhookHttp> | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stopping = new AbortController();
  readonly #onAttempt: (attempt: WebhookAttempt) => void;

  constructor(
    clock: Clock,
    options: WebhookOptions,
    onAttempt: (attempt: WebhookAttempt) => void = () => {},
  ) {
    this.#clock = clock;
    this.#options = options;
    this.#onAttempt = onAttempt;
  }

  /** Starts a delivery in the background. */
  send(url: string, payload: WebhookPayload): void {
    if (this.#stopping.signal.aborted) return;
    const delivery = this.#deliver(url, payload).finally(() => this.#inFlight.delete(delivery));
    this.#inFlight.add(delivery);
  }

  /** Deliveries under way (tests wait on these). */
  idle(): Promise<void> {
    return Promise.all([...this.#inFlight]).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.idle();
    if (this.#http) await (await this.#http).agent.close();
  }

  #client(): Promise<WebhookHttp> {
    this.#http ??= import("undici").then(({ Agent, request }) => ({
      agent: new Agent({ keepAliveTimeout: 4_000, connections: 32 }),
      request,
    }));
    return this.#http;
  }

  async #deliver(url: string, payload: WebhookPayload): Promise<void> {
    const body = JSON.stringify(payload);
    for (let attempt = 1; attempt <= 1 + this.#options.retries; attempt++) {
      if (attempt > 1) {
        try {
          await this.#clock.sleep(this.#options.spacingMs, this.#stopping.signal);
        } catch {
          return;
        }
      }
      const status = await this.#attempt(url, body);
      this.#onAttempt({ url, jobId: payload.id, attempt, status });
      if (status === 200 || this.#stopping.signal.aborted) return;
    }
  }

  async #attempt(url: string, body: string): Promise<number> {
    const abort = new AbortController();
    const timer = this.#clock.setTimer(this.#options.timeoutMs, () => abort.abort());
    const onStop = () => abort.abort();
    this.#stopping.signal.addEventListener("abort", onStop, { once: true });
    try {
      const { agent, request } = await this.#client();
      const reply = await request(url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "user-agent": "runpodkit-webhook" },
        dispatcher: agent,
        signal: abort.signal,
      });
      await reply.body.dump();
      return reply.statusCode;
    } catch {
      return 0;
    } finally {
      timer.cancel();
      this.#stopping.signal.removeEventListener("abort", onStop);
    }
  }
}
