import { isCluster, type RedisClient } from './redis-connection';

interface PendingCommand {
  name: string;
  args: Array<string | number>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Reply = [Error | null, unknown];

/**
 * Sends the commands issued in one turn of the event loop in one socket write (an ioredis pipeline), each with its
 * own reply, error and timeout. Unlike ioredis's auto-pipelining a batch never waits behind another, so during an
 * outage every command still fails as fast as any other (the kit's fail-fast defaults). A Cluster client gets each
 * command on its own, since one pipeline must stay within one node.
 *
 * @example
 * const commands = new TurnPipeline(client);
 * const reply = await commands.call('set', ['sso:k', 'v', 'PX', 5000]);
 */
export class TurnPipeline {
  private readonly client: RedisClient;
  private readonly batching: boolean;
  private pending: PendingCommand[] = [];
  private scheduled = false;

  constructor(client: RedisClient) {
    this.client = client;
    this.batching = !isCluster(client);
  }

  /** Runs command `name` (a Redis command or a script defined with `defineCommand`) with `args`. */
  call<T>(name: string, args: Array<string | number>): Promise<T> {
    // An unknown name is refused here, alone, rather than breaking the pipeline of the whole turn.
    if (this.method(name) === undefined) return Promise.reject(new Error(`no Redis command ${name}`));
    if (!this.batching) return this.direct(name, args) as Promise<T>;
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ name, args, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate runs after the poll phase, so every command issued while this turn's I/O is handled joins.
        setImmediate(() => this.flush());
      }
    });
  }

  private method(name: string): ((...values: Array<string | number>) => Promise<unknown>) | undefined {
    const method = (this.client as unknown as Record<string, unknown>)[name];
    return typeof method === 'function' ? (method as (...values: Array<string | number>) => Promise<unknown>) : undefined;
  }

  private direct(name: string, args: Array<string | number>): Promise<unknown> {
    try {
      return (this.method(name) as (...values: Array<string | number>) => Promise<unknown>).apply(this.client, args);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private flush(): void {
    const commands = this.pending;
    this.pending = [];
    this.scheduled = false;
    if (commands.length === 1) {
      const [only] = commands as [PendingCommand];
      this.direct(only.name, only.args).then(only.resolve, only.reject);
      return;
    }
    let sent: Promise<Reply[] | null>;
    try {
      sent = this.client.pipeline(commands.map((command) => [command.name, ...command.args])).exec() as Promise<Reply[] | null>;
    } catch (error) {
      // Building the pipeline threw (this runs in a timer callback, where a throw would end the process).
      for (const command of commands) command.reject(error);
      return;
    }
    sent.then(
      (replies) => {
        commands.forEach((command, index) => {
          const [error, value] = (replies?.[index] ?? [new Error('no reply'), undefined]) as Reply;
          if (error) command.reject(error);
          else command.resolve(value);
        });
      },
      (error: unknown) => {
        for (const command of commands) command.reject(error);
      },
    );
  }
}
