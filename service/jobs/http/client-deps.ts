import type { Accounts } from "../../edge/auth";
import type { Reservation } from "../book/memory";
import type { JobService } from "../client/job-service";
import type { RateLimiter } from "../client/rate-limit";

/** What the client routes (client-routes.ts, openai-route.ts, the fast path's) are given. */
export interface ClientRouteDeps {
  accounts: Accounts;
  jobs: JobService;
  limiter: RateLimiter;
  /** How long /stream holds when no chunk is buffered, ms. */
  streamHoldMs: number;
  /** Whether the service is stopping (holds released): held replies then end their connection. */
  released: () => boolean;
}

/** Who a request is from and which endpoint it is for, decided before its body is read. */
export interface Admission {
  accountId: string;
  endpointId: string;
  /** The memory a new job's body holds while it is read (/run, /runsync, /openai); null when none. */
  reservation: Reservation | null;
}
