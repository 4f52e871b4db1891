/** A handler may return a promise: the library waits for it before it counts the event as handled. */
export type Handler<T> = (payload: T) => void | Promise<void>;

/** A small typed emitter whose `emit` waits for every handler; a handler's error goes to `onError`. */
export class Emitter<Events> {
  private readonly handlers = new Map<keyof Events, Set<Handler<never>>>();

  constructor(private readonly onError: (error: unknown, event: keyof Events) => void) {}

  on<K extends keyof Events>(event: K, handler: Handler<Events[K]>): () => void {
    let set = this.handlers.get(event);
    if (!set) this.handlers.set(event, (set = new Set()));
    set.add(handler as Handler<never>);
    return () => void set.delete(handler as Handler<never>);
  }

  listens(event: keyof Events): boolean {
    return (this.handlers.get(event)?.size ?? 0) > 0;
  }

  async emit<K extends keyof Events>(event: K, payload: Events[K]): Promise<void> {
    const set = this.handlers.get(event);
    if (!set || set.size === 0) return;
    await Promise.all(
      [...set].map(async (handler) => {
        try {
          await (handler as Handler<Events[K]>)(payload);
        } catch (error) {
          this.onError(error, event);
        }
      }),
    );
  }
}
