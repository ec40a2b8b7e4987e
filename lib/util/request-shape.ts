import type { RequestHandler } from 'express';

/**
 * Takes one own property of `target` out and puts it back with the same value, when it is a plain data property
 * (writable, enumerable, configurable). V8 then keeps the object's properties as a dictionary.
 */
function reinsert(target: object, name: 'req' | 'res'): void {
  const descriptor = Object.getOwnPropertyDescriptor(target, name);
  if (descriptor === undefined || !descriptor.writable || !descriptor.configurable || !descriptor.enumerable) return;
  const holder = target as Record<string, unknown>;
  delete holder[name];
  holder[name] = descriptor.value;
}

/**
 * Lets the kit, and everything after it in the chain, add properties to an Express request and response cheaply.
 * Express gives both objects its app's prototype (`Object.setPrototypeOf`); from then on V8 shares no property
 * layout between requests, so every property added afterwards copies the object's whole layout (about 1.2–2.2 µs
 * apiece on Node 20, and the copy is left to the garbage collector). Express itself, Node's HTTP response and the
 * kit all add properties after that point. Taking one own property out and putting it back turns the object's
 * properties into a dictionary once (about 1.6 µs), after which each addition costs tens of nanoseconds.
 * `bench/request-properties.ts` measures both; bench/RESULTS.md shows the effect on whole requests.
 *
 * The properties taken out and put back are `req.res` and `res.req`, which Express 4 and 5 both set on the
 * objects themselves before any middleware runs. Their values and attributes stay as they were; only their place
 * in the key order changes. Objects not shaped that way are left alone, and a second call costs a hash delete and
 * insert.
 *
 * @example
 * prepareForProperties(req, res);
 * req.sso = runtime;
 */
export function prepareForProperties(req: object, res: object): void {
  reinsert(req, 'res');
  reinsert(res, 'req');
}

/**
 * {@link prepareForProperties} as a middleware, for a router whose first step it is.
 *
 * @example
 * router.use(preparingMiddleware);
 */
export const preparingMiddleware: RequestHandler = (req, res, next) => {
  prepareForProperties(req, res);
  next();
};
