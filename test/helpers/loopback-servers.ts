import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A server listening on 127.0.0.1 and its base URL, `http://127.0.0.1:<port>`. */
export interface ListeningServer {
  server: Server;
  base: string;
}

/**
 * The servers of one test file, each on 127.0.0.1:0, closed together (open connections included) in `afterAll`.
 *
 * @example
 * const servers = new LoopbackServers();
 * afterAll(() => servers.closeAll());
 * const { server, base } = await servers.listen(app);
 */
export class LoopbackServers {
  private readonly servers: Server[] = [];

  async listen(app: RequestListener): Promise<ListeningServer> {
    const server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.servers.push(server);
    return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  async closeAll(): Promise<void> {
    await Promise.all(
      this.servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      ),
    );
  }
}
