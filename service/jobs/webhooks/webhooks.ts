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
  /**
   * Bytes of payloads being sent at once, over every delivery: an attempt starts while fewer are in
   * flight (so one larger payload still goes, alone past the bound), else it waits its turn.
   */
  maxInFlightBytes: number;
  /**
   * Attempts sent to one receiver (origin) at once: the connections the delivery pool opens to it.
   * Further attempts to it wait their turn here, not in the pool's queue, where `timeoutMs` would run
   * before they are sent.
   */
  connectionsPerOrigin: number;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookOptions = {
  timeoutMs: 10_000,
  retries: JOB_POLICY.webhookRetries,
  spacingMs: JOB_POLICY.webhookSpacingMs,
  maxInFlightBytes: 16 * 1024 * 1024,
  connectionsPerOrigin: 32,
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

/** The receiver a URL names (scheme, host and port), for taking waiting attempts in turn. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** The payload's JSON text (its object is not kept past this call), undefined when there is none. */
function bodyOf(payload: () => WebhookPayload | undefined): string | undefined {
  const current = payload();
  return current === undefined ? undefined : JSON.stringify(current);
}

/**
 * Delivers a finished job's status envelope to its webhook: POST JSON, success is a 200; otherwise
 * up to `retries` more attempts, `spacingMs` apart. The spacing and timeouts run on the injected clock
 * (the spec's 10 s rule is tested in milliseconds), which is why this small loop is not undici's
 * retry interceptor, whose waits are wall-clock. A failed delivery never changes the job.
 *
 * A payload (the job's input and output: megabytes) is made for each attempt and dropped after it,
 * and attempts wait their turn past `maxInFlightBytes`: deliveries to a receiver that never answers
 * held every payload for their whole life (40 jobs of 5 MB inputs: 1.1 GB of the service's memory).
 */
export class Webhooks {
  readonly #clock: Clock;
  readonly #options: WebhookOptions;
  /** undici and its connection pool, loaded by the first delivery (most runs never send a webhook). */
  #http: Promise<WebhookHttp> | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #stopping = new AbortController();
  readonly #onAttempt: (attempt: WebhookAttempt) => void;
  /** Bytes of the payloads being sent now. */
  #sendingBytes = 0;
  /** Attempts given their turn and not yet ended, by the receiver's origin (at most connectionsPerOrigin each). */
  readonly #sending = new Map<string, number>();
  /**
   * Attempts given their turn whose payload is not made yet (its size unknown): none other goes
   * meanwhile, or jobs ending in one turn (timed out together, a worker's jobs failed with it) all
   * went at once, past maxInFlightBytes.
   */
  #granted = 0;
  /**
   * Attempts waiting for room under maxInFlightBytes or for a connection of their receiver, by the
   * receiver's origin, taken in turn from each origin: a receiver that never answers delays other
   * receivers' deliveries by one attempt's timeout at most, not by all of its own.
   */
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(
    clock: Clock,
    options: WebhookOptions,
    onAttempt: (attempt: WebhookAttempt) => void = () => {},
  ) {
    this.#clock = clock;
    this.#options = options;
    this.#onAttempt = onAttempt;
  }

  /**
   * Starts a delivery in the background. `payload` makes the envelope for each attempt; undefined
   * ends the delivery (the job is gone, or changed since: a retried job sends its own).
   */
  send(url: string, jobId: string, payload: () => WebhookPayload | undefined): void {
    if (this.#stopping.signal.aborted) return;
    const delivery = this.#deliver(url, jobId, payload).finally(() => this.#inFlight.delete(delivery));
    this.#inFlight.add(delivery);
  }

  /** Deliveries under way (tests wait on these). */
  idle(): Promise<void> {
    return Promise.all([...this.#inFlight]).then(() => undefined);
  }

  /** Deliveries under way: sending, waiting their turn or their next attempt (tests). */
  get deliveries(): number {
    return this.#inFlight.size;
  }

  /** Bytes of the payloads being sent now (tests). */
  get sendingBytes(): number {
    return this.#sendingBytes;
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    for (const [origin, lane] of this.#waiting) {
      for (const turn of lane) {
        this.#take(origin);
        turn();
      }
    }
    this.#waiting.clear();
    await this.idle();
    if (this.#http) await (await this.#http).agent.close();
  }

  #client(): Promise<WebhookHttp> {
    this.#http ??= import("undici").then(({ Agent, request }) => ({
      agent: new Agent({ keepAliveTimeout: 4_000, connections: this.#options.connectionsPerOrigin }),
      request,
    }));
    return this.#http;
  }

  async #deliver(url: string, jobId: string, payload: () => WebhookPayload | undefined): Promise<void> {
    const origin = originOf(url);
    for (let attempt = 1; attempt <= 1 + this.#options.retries; attempt++) {
      if (attempt > 1) {
        try {
          await this.#clock.sleep(this.#options.spacingMs, this.#stopping.signal);
        } catch {
          return;
        }
      }
      await this.#turn(origin);
      // The turn holds one of the origin's connections until the attempt ends (or is not made).
      let status: number;
      try {
        let body: string | undefined;
        try {
          body = this.#stopping.signal.aborted ? undefined : bodyOf(payload);
        } finally {
          this.#granted--;
        }
        if (body === undefined) return;
        this.#sendingBytes += body.length;
        this.#next();
        try {
          status = await this.#attempt(url, body);
        } finally {
          this.#sendingBytes -= body.length;
        }
      } finally {
        this.#endTurn(origin);
      }
      this.#onAttempt({ url, jobId, attempt, status });
      if (status === 200 || this.#stopping.signal.aborted) return;
    }
  }

  /**
   * Resolves once an attempt to `origin` may be sent: room under maxInFlightBytes, a free connection
   * of its receiver, no attempt waiting before it, and none still making its payload (#granted). Its
   * timeout starts only then, so an attempt
   * that waited behind a burst to one receiver is not failed without having been sent.
   */
  #turn(origin: string): Promise<void> {
    if (this.#waiting.size === 0 && this.#granted === 0 && this.#hasRoom() && this.#connectionFree(origin)) {
      this.#take(origin);
      return Promise.resolve();
    }
    const turn = new Promise<void>((resolve) => {
      const lane = this.#waiting.get(origin);
      if (lane) lane.push(resolve);
      else this.#waiting.set(origin, [resolve]);
    });
    // Others may wait only for their own receiver's connections: this one may go now.
    this.#next();
    return turn;
  }

  #hasRoom(): boolean {
    return this.#sendingBytes === 0 || this.#sendingBytes < this.#options.maxInFlightBytes;
  }

  #connectionFree(origin: string): boolean {
    return (this.#sending.get(origin) ?? 0) < this.#options.connectionsPerOrigin;
  }

  #take(origin: string): void {
    this.#sending.set(origin, (this.#sending.get(origin) ?? 0) + 1);
    this.#granted++;
  }

  /** An attempt ended (or was not made): its connection is free, and the next waiting one may go. */
  #endTurn(origin: string): void {
    const left = (this.#sending.get(origin) ?? 1) - 1;
    if (left > 0) this.#sending.set(origin, left);
    else this.#sending.delete(origin);
    this.#next();
  }

  /**
   * Lets the next waiting attempt go when there is room. One at a time: it counts its bytes once it
   * has made its payload (a turn later), then lets the next one go in turn. The origin waiting
   * longest with a free connection goes; it goes to the back of the line if more of its attempts wait.
   */
  #next(): void {
    if (this.#waiting.size === 0 || this.#granted > 0 || !this.#hasRoom()) return;
    for (const [origin, lane] of this.#waiting) {
      if (!this.#connectionFree(origin)) continue;
      const turn = lane.shift();
      this.#waiting.delete(origin);
      if (lane.length > 0) this.#waiting.set(origin, lane);
      this.#take(origin);
      turn?.();
      return;
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
