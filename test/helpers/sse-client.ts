/** One Server-Sent Event as received, with the monotonic time it arrived. */
export interface ReceivedEvent {
  event: string;
  data: string;
  receivedAt: number;
}

/** A minimal EventSource over fetch: collects events and lets a test wait for one. */
export interface EventStream {
  status: number;
  events: ReceivedEvent[];
  /** Resolves with the first event (already received or future) that matches. */
  next(predicate: (event: ReceivedEvent) => boolean, timeoutMs?: number): Promise<ReceivedEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openEventStream(url: string, headers: Record<string, string> = {}): Promise<EventStream> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const events: ReceivedEvent[] = [];
  const waiters: Array<{ predicate: (event: ReceivedEvent) => boolean; resolve: (event: ReceivedEvent) => void }> = [];
  let buffer = '';
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let index: number;
        while ((index = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          const received = { event, data: data.join('\n'), receivedAt: performance.now() };
          events.push(received);
          for (const waiter of [...waiters]) {
            if (waiter.predicate(received)) {
              waiters.splice(waiters.indexOf(waiter), 1);
              waiter.resolve(received);
            }
          }
        }
      }
    } catch {
      // Aborted by close().
    }
  })();
  return {
    status: res.status,
    events,
    ended,
    next(predicate, timeoutMs = 5000) {
      const found = events.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no matching event in time')), timeoutMs);
        waiters.push({
          predicate,
          resolve: (event) => {
            clearTimeout(timer);
            resolve(event);
          },
        });
      });
    },
    close() {
      controller.abort();
    },
  };
}

/** Matches a `status` event with this status. */
export function statusIs(status: string): (event: ReceivedEvent) => boolean {
  return (event) => event.event === 'status' && (JSON.parse(event.data) as { status: string }).status === status;
}
