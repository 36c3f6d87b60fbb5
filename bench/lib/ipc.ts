/**
 * The bench's processes talk over Node's IPC channel: a child announces `ready` with a value, then
 * answers numbered calls. Servers, load clients and the orchestrator are separate processes so each
 * one's CPU and memory are its own.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { z } from "zod";

const ReadyMessage = z.object({ type: z.literal("ready"), value: z.unknown() });
const ReplyMessage = z.object({
  type: z.literal("reply"),
  id: z.number(),
  ok: z.boolean(),
  value: z.unknown().optional(),
  error: z.string().optional(),
});
const ChildMessage = z.discriminatedUnion("type", [ReadyMessage, ReplyMessage]);
const CallMessage = z.object({ type: z.literal("call"), id: z.number(), cmd: z.string(), args: z.unknown() });

export type Commands = Record<string, (args: unknown) => Promise<unknown> | unknown>;

/**
 * Child side: answers calls with the given commands; `ready` is sent once they are installed. When the
 * orchestrator goes away, `onDisconnect` runs (default: exit).
 */
export function serveIpc(
  commands: Commands,
  readyValue: unknown,
  onDisconnect: () => Promise<void> | void = () => {},
): void {
  if (!process.send) throw new Error("this bench process must be started with an IPC channel");
  process.on("message", (raw: unknown) => {
    const call = CallMessage.safeParse(raw);
    if (!call.success) return;
    const { id, cmd, args } = call.data;
    const command = commands[cmd];
    const answer = (message: z.infer<typeof ReplyMessage>) => process.send?.(message);
    if (!command) {
      answer({ type: "reply", id, ok: false, error: `unknown command ${cmd}` });
      return;
    }
    Promise.resolve()
      .then(() => command(args))
      .then(
        (value) => answer({ type: "reply", id, ok: true, value }),
        (error: unknown) =>
          answer({
            type: "reply",
            id,
            ok: false,
            error: error instanceof Error ? error.message : String(error),
          }),
      );
  });
  // The orchestrator went away: nothing left to measure for.
  process.once("disconnect", () => {
    Promise.resolve()
      .then(onDisconnect)
      .finally(() => process.exit(0));
  });
  process.send({ type: "ready", value: readyValue });
}

export interface ChildOptions {
  /** Extra environment (merged over the orchestrator's). */
  env?: Record<string, string>;
  /** Node flags, e.g. --cpu-prof. */
  execArgv?: string[];
  /** Child output: inherited by default so failures are visible. */
  output?: "inherit" | "ignore";
}

/** Parent side: a child process speaking the protocol above. */
export class Child {
  readonly process: ChildProcess;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly #ready: Promise<unknown>;
  #next = 1;
  #exited = false;

  constructor(script: string, args: readonly string[], options: ChildOptions = {}) {
    const stdio = options.output ?? "inherit";
    this.process = spawn(process.execPath, [...(options.execArgv ?? []), script, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ["ignore", stdio, stdio, "ipc"],
    });
    this.#ready = new Promise((resolve, reject) => {
      this.process.on("message", (raw: unknown) => {
        const message = ChildMessage.safeParse(raw);
        if (!message.success) return;
        if (message.data.type === "ready") {
          resolve(message.data.value);
          return;
        }
        const { id, ok, value, error } = message.data;
        const pending = this.#pending.get(id);
        this.#pending.delete(id);
        if (ok) pending?.resolve(value);
        else pending?.reject(new Error(error ?? "bench child failed"));
      });
      this.process.once("exit", (code, signal) => {
        this.#exited = true;
        const failure = new Error(`bench child ${script} exited (code ${code}, signal ${signal})`);
        reject(failure);
        for (const pending of this.#pending.values()) pending.reject(failure);
        this.#pending.clear();
      });
    });
    this.#ready.catch(() => {});
  }

  get pid(): number {
    return this.process.pid ?? -1;
  }

  ready<T>(schema: z.ZodType<T>): Promise<T> {
    return this.#ready.then((value) => schema.parse(value));
  }

  call<T>(cmd: string, args: unknown, schema: z.ZodType<T>): Promise<T> {
    if (this.#exited) return Promise.reject(new Error(`bench child is gone (call ${cmd})`));
    const id = this.#next++;
    const reply = new Promise<unknown>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.process.send({ type: "call", id, cmd, args });
    return reply.then((value) => schema.parse(value));
  }

  /** Disconnects (the child exits on it) and waits; SIGKILL if it lingers. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.#exited) return;
    const exited = once(this.process, "exit");
    if (this.process.connected) this.process.disconnect();
    const timer = setTimeout(() => this.process.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }
}
