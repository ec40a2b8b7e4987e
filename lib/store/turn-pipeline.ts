import { isCluster, type RedisClient } from './redis-connection';
import { TurnQueue } from './turn-queue';

type CommandMethod = (...values: Array<string | number>) => Promise<unknown>;

interface PendingCommand {
  method: CommandMethod;
  args: Array<string | number>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Corkable {
  writable: boolean;
  cork(): void;
  uncork(): void;
}

/**
 * Sends the commands issued in one turn of the event loop in one socket write, pipelined in Redis's sense (no command
 * waits for an earlier one's reply), each with its own reply, error and timeout. The socket is corked while the
 * turn's commands are handed to the client, so Node writes them together when it is uncorked; each command stays the
 * client's own, so nothing is built beyond what a lone command costs. Unlike ioredis's auto-pipelining a batch never
 * waits behind another, so during an outage every command still fails as fast as any other (the kit's fail-fast
 * defaults). A Cluster client gets each command on its own, since its commands go to several nodes.
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
    // An unknown name is refused here, alone, before anything of the turn is sent.
    if (typeof method !== 'function') return Promise.reject(new Error(`no Redis command ${name}`));
    if (!this.batching) return this.direct(method as CommandMethod, args) as Promise<T>;
    return new Promise<T>((resolve, reject) =>
      this.queue.push({ method: method as CommandMethod, args, resolve: resolve as (value: unknown) => void, reject }),
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
    // Corked, the socket keeps every command's write and sends them together when uncorked: one writev. While the
    // client is not connected there is no socket to cork, and ioredis queues the commands as it does any other.
    const stream = this.client.status === 'ready' ? (this.client as unknown as { stream?: Corkable }).stream : undefined;
    const corked = stream?.writable ? stream : undefined;
    corked?.cork();
    try {
      for (const command of commands) this.direct(command.method, command.args).then(command.resolve, command.reject);
    } finally {
      corked?.uncork();
    }
  }
}
