/** A body was larger than the reader's limit; the download was cancelled. */
export class TooLargeError extends Error {
  override readonly name = 'TooLargeError';
}

/**
 * Reads a fetch response's body up to `limit` bytes, cancelling the download beyond it so a remote server cannot fill
 * our memory; throws {@link TooLargeError} past the limit.
 *
 * @example
 * const text = await readLimited(await fetch(url), 1024 * 1024);
 */
export async function readLimited(response: Response, limit: number): Promise<string> {
  if (Number(response.headers.get('content-length') ?? '0') > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new TooLargeError();
  }
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new TooLargeError();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
