import type { Response } from 'supertest';

/** The `name=value` pair of a cookie set by the response, or undefined. */
export function setCookieValue(res: Response, name: string): string | undefined {
  const header = res.headers['set-cookie'] as unknown as string[] | undefined;
  const line = (header ?? []).find((cookie) => cookie.startsWith(`${name}=`));
  return line?.split(';')[0];
}

/** The full Set-Cookie line for a cookie, or undefined. */
export function setCookieLine(res: Response, name: string): string | undefined {
  const header = res.headers['set-cookie'] as unknown as string[] | undefined;
  return (header ?? []).find((cookie) => cookie.startsWith(`${name}=`));
}
