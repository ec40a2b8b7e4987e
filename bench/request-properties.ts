/**
 * Micro-benchmark of what a middleware pays for each property it adds to an Express request. Express gives every
 * request its app's prototype with `Object.setPrototypeOf`; afterwards V8 no longer shares the request's property
 * layout between requests, so each added property copies it. The session engine keeps its per-request state beside
 * the request (a WeakMap) for this reason, and adds only the properties its API promises; and the kit's entry
 * middlewares first call `prepareForProperties`, which turns the request's properties into a dictionary once, so
 * every property added after it (the kit's and the rest of the chain's) is cheap.
 *
 *   npx tsx bench/request-properties.ts
 */
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import express from 'express';
import { prepareForProperties } from '../lib/util/request-shape';

const ROUNDS = 5;
const OBJECTS = 50_000;
const socket = new Socket();
const appRequest = express().request as object;
const beside = new WeakMap<object, number>();
const response = {};

type Fill = (req: Record<string, unknown>) => void;

const CASES: ReadonlyArray<[string, boolean, Fill]> = [
  ['no property added', true, () => undefined],
  ['one property', true, (req) => (req.sso = 1)],
  ['four properties', true, (req) => Object.assign(req, { sso: 1, sessionID: 'id', session: 2, user: 3 })],
  [
    'four properties and a WeakMap entry',
    true,
    (req) => (Object.assign(req, { sso: 1, sessionID: 'id', session: 2, user: 3 }), beside.set(req, 4)),
  ],
  ['six properties', true, (req) => Object.assign(req, { sso: 1, sessionStore: 0, sessionID: 'id', session: 2, user: 3, state: 4 })],
  [
    'six properties after prepareForProperties',
    true,
    (req) => {
      prepareForProperties(req, response);
      Object.assign(req, { sso: 1, sessionStore: 0, sessionID: 'id', session: 2, user: 3, state: 4 });
    },
  ],
  [
    'six properties, prototype left alone',
    false,
    (req) => Object.assign(req, { sso: 1, sessionStore: 0, sessionID: 'id', session: 2, user: 3, state: 4 }),
  ],
];

function nanosecondsPerRequest(withPrototype: boolean, fill: Fill): number {
  const kept: object[] = [];
  const started = process.hrtime.bigint();
  for (let index = 0; index < OBJECTS; index += 1) {
    const req = new IncomingMessage(socket);
    // As Express 4 and 5 do before any middleware runs.
    (req as unknown as { res: object }).res = response;
    if (withPrototype) Object.setPrototypeOf(req, appRequest);
    fill(req as unknown as Record<string, unknown>);
    // Keep a few alive, as a server keeps the requests in flight.
    if (index % 64 === 0) kept.push(req);
  }
  return Number(process.hrtime.bigint() - started) / OBJECTS;
}

const best = new Map<string, number>();
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [name, withPrototype, fill] of CASES) {
    const figure = nanosecondsPerRequest(withPrototype, fill);
    best.set(name, Math.min(best.get(name) ?? Infinity, figure));
  }
}
const baseline = best.get('no property added')!;
console.log(`Node ${process.version}; best of ${ROUNDS} rounds of ${OBJECTS} requests (IncomingMessage + Express's prototype)`);
for (const [name] of CASES) {
  const figure = best.get(name)!;
  console.log(`${name.padEnd(40)} ${figure.toFixed(0).padStart(7)} ns/request  (+${(figure - baseline).toFixed(0)} ns)`);
}
