import { ServiceError } from "../../errors";
import type { Job } from "../model/job";

export interface JobMemoryOptions {
  /** Service-wide bound of the job bytes held in memory (inputs of queued and running jobs), bytes. */
  budgetBytes: number;
  /** Inputs larger than this are kept in the store only, once written, and read back when needed. */
  spillInputBytes: number;
  /**
   * Outputs (results and progress) whose JSON is longer than this are kept in the store only, once
   * written, and read back when needed: the finished jobs kept in memory for fast reads then hold at
   * most this much output each.
   */
  spillOutputBytes: number;
}

/**
 * The service-wide budget of job bytes in memory: the input text of every queued or running job
 * still held in memory (small inputs for their whole life, large ones until the store has them), and
 * the stream chunks workers posted that /stream has not drained yet. A new job or chunk that would
 * pass the budget is refused with UNAVAILABLE (503, Retry-After) before it is kept. Outputs are not
 * counted once kept: past `spillOutputBytes` they leave memory once written. While a worker's body
 * (job-done or job-stream) is read and handed over it holds a reservation (see reserve); chunks take
 * their bytes over from it (holdStream), so a body is never counted twice. Sizes are counted in
 * UTF-16 units of the JSON text (what a string costs, give or take).
 */
export class JobMemory {
  readonly options: JobMemoryOptions;
  #used = 0;

  constructor(options: JobMemoryOptions) {
    this.options = options;
  }

  /** Bytes held now. */
  get used(): number {
    return this.#used;
  }

  /** Refuses a job of `bytes` that would not fit in the budget now. */
  admit(bytes: number): void {
    const { budgetBytes } = this.options;
    if (this.#used + bytes <= budgetBytes) return;
    throw new ServiceError(
      "UNAVAILABLE",
      `the service's memory budget for jobs (${budgetBytes} bytes) is used up (${this.#used} held); try again shortly`,
      { retryAfterMs: 1_000 },
    );
  }

  /** Counts the job's in-memory input (once; a job counted already is left as it is). */
  hold(job: Job): void {
    if (job.heldBytes > 0 || !job.inputInMemory) return;
    job.heldBytes = job.inputText.length;
    this.#used += job.heldBytes;
  }

  /** The job no longer holds what was counted (it left the queue and the workers, or its input was spilled). */
  release(job: Job): void {
    this.#used -= job.heldBytes;
    job.heldBytes = 0;
  }

  /**
   * Holds `bytes` against the budget for a body about to be read (a job-done output, job-stream
   * chunks), refusing it as admit does when it would not fit. A reservation larger than the whole
   * budget counts as the whole budget: it passes only when nothing else is held, so a body the route
   * accepts is never refused for ever. Its release frees what it still holds, once.
   */
  reserve(bytes: number): Reservation {
    const held = Math.min(Math.max(0, bytes), this.options.budgetBytes);
    this.admit(held);
    this.#used += held;
    return new Reservation(held, (freed) => {
      this.#used -= freed;
    });
  }

  /**
   * Counts stream chunks of `bytes` now buffered for the job, refusing them past the budget. With the
   * reservation their body held while it was read, the chunks take its bytes over (nothing is
   * counted twice): only what they need beyond it must fit, and what it held beyond them is freed.
   * A refusal leaves the reservation as it was.
   */
  holdStream(job: Job, bytes: number, reservation: Reservation | null = null): void {
    const covered = reservation?.held ?? 0;
    if (bytes > covered) this.admit(bytes - covered);
    reservation?.handOver();
    job.streamBytes += bytes;
    this.#used += bytes - covered;
  }

  /** The job's buffered chunks were dropped (with the job, or its run). */
  releaseStream(job: Job): void {
    this.#used -= job.streamBytes;
    job.streamBytes = 0;
  }

  /** `bytes` of the job's buffered chunks (those a reader received) were dropped. */
  releaseStreamPart(job: Job, bytes: number): void {
    const freed = Math.min(bytes, job.streamBytes);
    this.#used -= freed;
    job.streamBytes -= freed;
  }

  /** Is this input large enough to live in the store only? */
  spills(job: Job): boolean {
    return job.inputInMemory && job.inputText.length > this.options.spillInputBytes;
  }
}

/**
 * Bytes a worker's body holds against the budget while it is read (JobMemory.reserve), until its
 * release, or until holdStream hands them over to the chunks it carried.
 */
export class Reservation {
  #held: number;
  readonly #free: (bytes: number) => void;

  constructor(held: number, free: (bytes: number) => void) {
    this.#held = held;
    this.#free = free;
  }

  /** Bytes still held by this reservation (0 once released or handed over). */
  get held(): number {
    return this.#held;
  }

  /** Frees what is still held; later calls do nothing. A field, so it can be a listener as it is. */
  readonly release = (): void => {
    const held = this.#held;
    this.#held = 0;
    if (held > 0) this.#free(held);
  };

  /** The bytes are counted elsewhere from now on (JobMemory.holdStream): nothing is freed. */
  handOver(): void {
    this.#held = 0;
  }
}
