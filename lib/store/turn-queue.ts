/**
 * Collects what is issued during one turn of the event loop and hands it to `flush` as one list, after the turn's
 * I/O: `setImmediate` runs after the poll phase, so everything issued while that turn's requests are handled joins.
 * Each turn gets its own list; a flush never waits for an earlier one.
 *
 * @example
 * const reads = new TurnQueue<string>((keys) => client.mget(keys));
 * reads.push('sso:sess:abc');
 */
export class TurnQueue<T> {
  private pending: T[] = [];
  private scheduled = false;

  constructor(private readonly flush: (items: T[]) => void) {}

  push(item: T): void {
    this.pending.push(item);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      const items = this.pending;
      this.pending = [];
      this.scheduled = false;
      this.flush(items);
    });
  }
}
