/** Events by name, each with the arguments its listeners take (at most two). */
export type EventMap<E> = { [K in keyof E]: readonly [unknown?, unknown?] };

type Listener = (a: unknown, b: unknown) => void;

/** The emitting side of a bus: what a part that announces events is given. */
export interface Emitter<E extends EventMap<E>> {
  emit<K extends keyof E>(event: K, ...args: E[K]): void;
}

/**
 * A small typed event bus. `emit` calls every listener of the event in the order they subscribed,
 * synchronously, in the emitter's turn: no queue, and no allocation per emit (listeners take at most
 * two arguments, passed as they are). A listener's exception reaches the emitter.
 */
export class EventBus<E extends EventMap<E>> implements Emitter<E> {
  readonly #listeners = new Map<keyof E, readonly Listener[]>();

  /** Subscribes; returns the function that unsubscribes. */
  on<K extends keyof E>(event: K, listener: (...args: E[K]) => void): () => void {
    const own = listener as unknown as Listener;
    this.#listeners.set(event, [...(this.#listeners.get(event) ?? []), own]);
    return () => {
      const rest = (this.#listeners.get(event) ?? []).filter((l) => l !== own);
      if (rest.length > 0) this.#listeners.set(event, rest);
      else this.#listeners.delete(event);
    };
  }

  /**
   * Typed as taking the event's arguments, written with two plain parameters so that no argument
   * array is made per emit. Listener lists are replaced, never changed in place: a listener that
   * (un)subscribes during an emit changes the next emit, not this one.
   */
  readonly emit = ((event: keyof E, a?: unknown, b?: unknown): void => {
    const listeners = this.#listeners.get(event);
    if (listeners === undefined) return;
    for (let i = 0; i < listeners.length; i++) (listeners[i] as Listener)(a, b);
  }) as unknown as <K extends keyof E>(event: K, ...args: E[K]) => void;

  /** Listeners of the event (tests). */
  listenerCount(event: keyof E): number {
    return this.#listeners.get(event)?.length ?? 0;
  }
}
