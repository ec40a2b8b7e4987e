import type { Express } from 'express';
import type { FuzzRoute } from './fuzz';

interface RouteLayer {
  name: string;
  slash: boolean;
  rawPath?: string;
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle: { stack?: RouteLayer[]; router?: { stack: RouteLayer[] }; routes?: Record<string, string | undefined> };
}

const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Every route an Express app mounts, read from its router (Express 5), sub-routers and sub-apps included: the
 * kit's routers (`loginPortal`, `qrLoginProvider`, `oidc()` by its `routes`), the app's own routes, and a
 * `/<file>` route under each static mount, one entry per path with all its methods. A handler it cannot see into
 * (oidc-provider's callback) is the caller's to list.
 *
 * @example
 * const routes = mountedRoutes(site.running.app);
 */
export function mountedRoutes(express: Express): FuzzRoute[] {
  const app = express as unknown as RouteLayer['handle'];
  const routes: FuzzRoute[] = [];
  const walk = (stack: RouteLayer[], prefix: string) => {
    for (const layer of stack) {
      const mount = layer.slash ? prefix : `${prefix}${layer.rawPath ?? ''}`;
      if (layer.route) {
        const methods = Object.keys(layer.route.methods).flatMap((method) => (method === '_all' ? ALL_METHODS : [method.toUpperCase()]));
        for (const path of [layer.route.path].flat()) routes.push({ method: [...new Set(methods)], path: `${prefix}${path}` });
        continue;
      }
      const nested = layer.handle.stack ?? layer.handle.router?.stack;
      if (nested) walk(nested, mount);
      else if (layer.handle.routes) {
        const { login, callback, logout, backchannelLogout } = layer.handle.routes;
        if (login) routes.push({ method: 'GET', path: `${mount}${login}` });
        if (callback) routes.push({ method: 'GET', path: `${mount}${callback}` });
        if (logout) routes.push({ method: 'POST', path: `${mount}${logout}` });
        if (backchannelLogout) routes.push({ method: 'POST', path: `${mount}${backchannelLogout}` });
      } else if (layer.name === 'serveStatic') routes.push({ method: 'GET', path: `${mount}/:file` });
    }
  };
  walk(app.router?.stack ?? app.stack ?? [], '');
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = byPath.get(route.path) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    byPath.set(route.path, methods);
  }
  return [...byPath].map(([path, methods]) => ({ method: [...methods].sort(), path }));
}
