import type { Accounts } from "../../edge/auth";
import { bareKey } from "../../edge/auth";
import { notFound, ServiceError } from "../../errors";
import type { EndpointDirectory } from "../../planes";
import type { Dispatcher, WorkerSession } from "./dispatcher";

/**
 * Who a worker-protocol request comes from. A worker this service started presents its own key
 * (RUNPOD_AI_API_KEY, one per worker); a worker someone runs by hand presents its account's key, and
 * its first request opens its session. Either way the path's endpoint must be the worker's own.
 */
export class WorkerAccess {
  readonly #accounts: Accounts;
  readonly #dispatcher: Dispatcher;
  readonly #endpoints: EndpointDirectory;

  constructor(accounts: Accounts, dispatcher: Dispatcher, endpoints: EndpointDirectory) {
    this.#accounts = accounts;
    this.#dispatcher = dispatcher;
    this.#endpoints = endpoints;
  }

  /** The worker's session, or UNAUTHORIZED / NOT_FOUND. `authorization` is the raw header. */
  session(endpointId: string, workerId: string, authorization: string | undefined): WorkerSession {
    const credential = bareKey(authorization ?? "");
    const existing = this.#dispatcher.session(workerId);
    if (existing) {
      if (existing.endpointId !== endpointId) throw notFound("worker", workerId);
      if (existing.key !== null && credential === existing.key) return existing;
      if (this.#accounts.resolve(credential) === existing.accountId) return existing;
      throw new ServiceError("UNAUTHORIZED", "Unauthorized: not this worker's key");
    }
    const accountId = this.#accounts.resolve(credential);
    if (!accountId) throw new ServiceError("UNAUTHORIZED", "Unauthorized: unknown worker or key");
    if (!this.#endpoints.get(accountId, endpointId)) throw notFound("endpoint", endpointId);
    return this.#dispatcher.open({ id: workerId, accountId, endpointId, managed: false, key: null });
  }
}
