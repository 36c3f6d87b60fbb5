/**
 * A handler that asks for a fresh worker after its job (`refresh_worker`), for handlers that leave
 * state behind (e.g. a loaded model that must be reloaded).
 */
export async function handler(job: { id: string; input: unknown }): Promise<unknown> {
  return { refresh_worker: true, pid: process.pid, job: job.id };
}
