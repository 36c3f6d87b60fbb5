import type { Accounts } from "../../edge/auth";
import { bareKey, sameKey } from "../../edge/auth";
import { endpointNotFound, ServiceError } from "../../errors";
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

  /**
   * The worker's session, or UNAUTHORIZED / NOT_FOUND. `authorization` is the raw header. What a
   * caller learns depends only on what it may see: a key that is neither an account's nor this
   * worker's is 401 whatever the ids; an endpoint not of the key's account is 404 whether or not a
   * worker of that id exists (sessions are found per endpoint, never across accounts).
   */
  session(endpointId: string, workerId: string, authorization: string | undefined): WorkerSession {
    const credential = bareKey(authorization ?? "");
    const existing = this.#dispatcher.session(endpointId, workerId);
    if (existing && existing.key !== null && sameKey(credential, existing.key)) return existing;
    const accountId = this.#accounts.resolve(credential);
    if (!accountId) throw new ServiceError("UNAUTHORIZED", "Unauthorized: unknown worker or key");
    if (!this.#endpoints.get(accountId, endpointId)) throw endpointNotFound(endpointId);
    // The endpoint is this account's, so is any session on it.
    if (existing) return existing;
    return this.#dispatcher.open({ id: workerId, accountId, endpointId, managed: false, key: null });
  }
}
