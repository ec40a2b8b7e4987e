import type { Response } from 'supertest';

/** Asserts an RFC 9457 problem+json answer with this status (and code, when given). */
export function expectProblem(res: Response, status: number, code?: string): void {
  expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
    status,
    type: expect.stringMatching(/^application\/problem\+json/),
  });
  expect(res.body.status).toBe(status);
  if (code !== undefined) expect(res.body.code).toBe(code);
}

/**
 * A problem body without its `request_id`, which differs for every request: two answers that must not tell their
 * cases apart (a wrong password, an unknown user) compare equal on everything else.
 */
export function problemWithoutRequestId(body: Record<string, unknown>): Record<string, unknown> {
  const { request_id: _requestId, ...rest } = body;
  return rest;
}
