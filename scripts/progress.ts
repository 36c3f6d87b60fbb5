/**
 * The account `npm start` prints of its long steps: a line when a step starts, a line when it ends
 * with its duration (or fails), and something alive in between: on a terminal one line redrawn in
 * place every second (elapsed time and the step's own detail), elsewhere (CI, a pipe) a line every
 * 15 s. Time comes from a Clock, so tests move it by hand.
 */
import type { Clock, Timer } from "../service/clock";

export interface ProgressOptions {
  write(text: string): void;
  clock: Pick<Clock, "now" | "setTimer">;
  /** A terminal: the alive line is redrawn in place. Otherwise lines are only ever appended. */
  live: boolean;
  /** Between two alive signals, ms (default: 1 s live, 15 s otherwise). */
  heartbeatMs?: number;
}

const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const CLEAR_LINE = "\r\x1b[2K";

/** `0.4 s`, `12.3 s`, `2 min 05 s`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

export interface StepAbout {
  /** Printed after the label when the step starts: what it does. */
  note?: string;
  /** How far the step got, shown with each alive signal. */
  detail?: () => string;
}

export class Progress {
  readonly #options: ProgressOptions;
  readonly #startedAt: number;
  /** The alive line on screen (live mode), to clear before any other output. */
  #aliveLine = "";

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#startedAt = options.clock.now();
  }

  /** Time since this account began. */
  get elapsedMs(): number {
    return this.#options.clock.now() - this.#startedAt;
  }

  /** Prints a line of the account (clearing the alive line first, redrawing it after). */
  line(text = ""): void {
    const alive = this.#aliveLine;
    this.#clearAlive();
    this.#options.write(`${text}\n`);
    if (alive) this.#drawAlive(alive);
  }

  /**
   * Runs one long step: `▸ label  note` when it starts, `✓ label  <duration>` when it ends, `✗ label
   * failed after <duration>` (and the error rethrown) when it fails. `detail` says how far it got, for
   * the alive signal (e.g. "4 provider calls").
   */
  async step<T>(label: string, run: () => Promise<T>, about: StepAbout = {}): Promise<T> {
    const { clock, live } = this.#options;
    const heartbeatMs = this.#options.heartbeatMs ?? (live ? 1_000 : 15_000);
    const started = clock.now();
    const { note, detail } = about;
    this.line(`▸ ${label}${note ? `  ${note}` : ""}`);
    let beats = 0;
    const beat = () => {
      beats++;
      const more = detail?.();
      const status = `${label} ${formatDuration(clock.now() - started)}${more ? `, ${more}` : ""}`;
      if (live) this.#drawAlive(`  ${SPINNER[beats % SPINNER.length]} ${status}`);
      else this.line(`  … ${status}`);
      timer = clock.setTimer(heartbeatMs, beat);
    };
    let timer: Timer = clock.setTimer(heartbeatMs, beat);
    try {
      const result = await run();
      timer.cancel();
      this.#clearAlive();
      this.line(`✓ ${label}  ${formatDuration(clock.now() - started)}`);
      return result;
    } catch (error) {
      timer.cancel();
      this.#clearAlive();
      this.line(`✗ ${label} failed after ${formatDuration(clock.now() - started)}`);
      throw error;
    }
  }

  #drawAlive(text: string): void {
    this.#options.write(`${CLEAR_LINE}${text}`);
    this.#aliveLine = text;
  }

  #clearAlive(): void {
    if (!this.#aliveLine) return;
    this.#options.write(CLEAR_LINE);
    this.#aliveLine = "";
  }
}

export interface NextStep {
  label: string;
  text: string;
}

/** Where the main job's account ends: a titled list, labels aligned. */
export function formatNextSteps(steps: readonly NextStep[]): string[] {
  const width = Math.max(...steps.map((s) => s.label.length));
  return ["where to look next", ...steps.map((s) => `  ${s.label.padEnd(width)}  ${s.text}`)];
}
