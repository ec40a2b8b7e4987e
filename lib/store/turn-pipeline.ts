import { isCluster, type RedisClient } from './redis-connection';
import { TurnQueue } from './turn-queue';

type CommandMethod = (...values: Array<string | number>) => Promise<unknown>;

interface PendingCommand {
  name: string;
  method: CommandMethod;
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
  private readonly queue = new TurnQueue<PendingCommand>((commands) => this.flush(commands));

  constructor(client: RedisClient) {
    this.client = client;
    this.batching = !isCluster(client);
  }

  /** Runs command `name` (a Redis command or a script defined with `defineCommand`) with `args`. */
  call<T>(name: string, args: Array<string | number>): Promise<T> {
    const method = (this.client as unknown as Record<string, unknown>)[name];
    // An unknown name is refused here, alone, rather than breaking the pipeline of the whole turn.
    if (typeof method !== 'function') return Promise.reject(new Error(`no Redis command ${name}`));
    if (!this.batching) return this.direct(method as CommandMethod, args) as Promise<T>;
    return new Promise<T>((resolve, reject) =>
      this.queue.push({ name, method: method as CommandMethod, args, resolve: resolve as (value: unknown) => void, reject }),
    );
  }

  private direct(method: CommandMethod, args: Array<string | number>): Promise<unknown> {
    try {
      return method.apply(this.client, args);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private flush(commands: PendingCommand[]): void {
    if (commands.length === 1) {
      const [only] = commands as [PendingCommand];
      this.direct(only.method, only.args).then(only.resolve, only.reject);
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
