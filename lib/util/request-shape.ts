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
 * True on the Node versions where the step pays: Node 22 (V8 12.4) copies an Express request's whole property layout
 * for every property added to it; from Node 24 (V8 13.6) on, adding a property to such an object is cheap again, and
 * the step itself (two deletes and inserts, then dictionary lookups for every property read) only costs. Measured by
 * `bench/request-properties.ts` on 22, 24 and 26 (six properties: 51.9 µs without the step and 7.2 µs with it on
 * Node 22; 5.2 µs without and 8.1 µs with it on 24; 2.9 µs without and 7.5 µs with it on 26, on a loaded machine).
 */
export const PROPERTY_ADDITIONS_COPY_LAYOUT = Number(process.versions.node.split('.')[0]) < 24;

/**
 * Turns `req`'s and `res`'s properties into dictionaries, whatever the Node version: {@link prepareForProperties}
 * without its version check, for the bench's `bare-prepared` case.
 *
 * @example
 * turnIntoDictionaries(req, res);
 */
export function turnIntoDictionaries(req: object, res: object): void {
  reinsert(req, 'res');
  reinsert(res, 'req');
}

/**
 * Lets the kit, and everything after it in the chain, add properties to an Express request and response cheaply
 * on Node 22. Express gives both objects its app's prototype (`Object.setPrototypeOf`); from then on V8 12 shares no
 * property layout between requests, so every property added afterwards copies the object's whole layout (about
 * 1.2–2.2 µs apiece on a quiet machine, and the copy is left to the garbage collector). Express itself, Node's HTTP
 * response and the kit all add properties after that point. Taking one own property out and putting it back turns
 * the object's properties into a dictionary once (about 1.6 µs), after which each addition costs tens of
 * nanoseconds. From Node 24 on additions are cheap without it and the step costs more than it saves, so there it
 * does nothing ({@link PROPERTY_ADDITIONS_COPY_LAYOUT}). `bench/request-properties.ts` measures both; bench/RESULTS.md
 * shows the effect on whole requests (`bare-prepared`) on each version.
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
  if (PROPERTY_ADDITIONS_COPY_LAYOUT) turnIntoDictionaries(req, res);
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
