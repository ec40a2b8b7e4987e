/** A field-level validation message carried by a 422 answer. */
export interface FieldError {
  /** JSON pointer or dotted name of the offending field, e.g. `title` or `/items/0/price`. */
  field: string;
  message: string;
}

/** Options shared by every {@link HttpError}. */
export interface HttpErrorOptions {
  /**
   * Stable machine-readable code, e.g. `invalid_token`, `session_required`. Default: the status's reason phrase in
   * snake case (`bad_request`, `content_too_large`); `client_error`/`server_error` for statuses without one.
   */
  code?: string;
  /** Human-readable explanation of this occurrence; never contains secrets or library internals. */
  detail?: string;
  /** Response headers to send with the error (`WWW-Authenticate`, `Allow`, `Retry-After`, …). */
  headers?: Record<string, string>;
  /** Extra members of the problem+json body. */
  extensions?: Record<string, unknown>;
  cause?: unknown;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  425: 'Too Early',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The RFC 9110 reason phrase of a status; other statuses of a class get the class's name. */
function titleOf(status: number): string {
  return TITLES[status] ?? (status >= 500 ? 'Server Error' : status >= 400 ? 'Client Error' : 'Error');
}

/**
 * The base of the kit's error family. Middlewares pass these to `next(err)`; {@link errorHandler} renders them
 * as RFC 9457 problem+json. `status`, `statusCode`, `expose` and `headers` are the fields Express's own final
 * handler reads, so an app without our handler still answers with the right status and headers.
 *
 * @example
 * next(new HttpError(409, { code: 'already_confirmed', detail: 'This login request was already confirmed.' }));
 */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly status: number;
  readonly statusCode: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;
  /** Client errors are safe to show; server errors keep their message out of the response. */
  readonly expose: boolean;

  constructor(status: number, options: HttpErrorOptions = {}) {
    const title = titleOf(status);
    super(options.detail ?? title, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.statusCode = status;
    this.title = title;
    this.code = options.code ?? title.toLowerCase().replace(/[^a-z]+/g, '_');
    this.detail = options.detail;
    this.headers = { ...options.headers };
    this.extensions = { ...options.extensions };
    this.expose = status < 500;
  }
}

/** 400: the request is malformed; nothing was created or changed. */
export class BadRequestError extends HttpError {
  override name = 'BadRequestError';
  constructor(options: HttpErrorOptions = {}) {
    super(400, { code: 'bad_request', ...options });
  }
}

/** 401: not authenticated. Carries the challenge (`WWW-Authenticate`) of the scheme that was expected. */
export class UnauthorizedError extends HttpError {
  override name = 'UnauthorizedError';
  constructor(options: HttpErrorOptions = {}) {
    super(401, { code: 'unauthorized', ...options });
  }
}

/** 403: authenticated (or not needing to be) but not allowed. */
export class ForbiddenError extends HttpError {
  override name = 'ForbiddenError';
  constructor(options: HttpErrorOptions = {}) {
    super(403, { code: 'forbidden', ...options });
  }
}

/** 404: the targeted record does not exist; no action taken. */
export class NotFoundError extends HttpError {
  override name = 'NotFoundError';
  constructor(options: HttpErrorOptions = {}) {
    super(404, { code: 'not_found', ...options });
  }
}

/** 405 with the `Allow` header listing the methods the resource supports. */
export class MethodNotAllowedError extends HttpError {
  override name = 'MethodNotAllowedError';
  constructor(allowed: readonly string[], options: HttpErrorOptions = {}) {
    super(405, { code: 'method_not_allowed', ...options, headers: { ...options.headers, Allow: allowed.join(', ') } });
  }
}

/** 406: none of the representations the client accepts is available. */
export class NotAcceptableError extends HttpError {
  override name = 'NotAcceptableError';
  constructor(available: readonly string[] = [], options: HttpErrorOptions = {}) {
    super(406, {
      code: 'not_acceptable',
      ...options,
      extensions: { ...options.extensions, ...(available.length ? { available } : {}) },
    });
  }
}

/** 409: the request conflicts with the resource's current state (e.g. an illegal state transition). */
export class ConflictError extends HttpError {
  override name = 'ConflictError';
  constructor(options: HttpErrorOptions = {}) {
    super(409, { code: 'conflict', ...options });
  }
}

/** 410: the resource existed and is permanently gone. */
export class GoneError extends HttpError {
  override name = 'GoneError';
  constructor(options: HttpErrorOptions = {}) {
    super(410, { code: 'gone', ...options });
  }
}

/** 422: the body is well-formed but fails validation; `errors` lists each field's problem. */
export class UnprocessableEntityError extends HttpError {
  override name = 'UnprocessableEntityError';
  readonly errors: FieldError[];
  constructor(errors: FieldError[], options: HttpErrorOptions = {}) {
    super(422, { code: 'validation_failed', ...options, extensions: { ...options.extensions, errors } });
    this.errors = errors;
  }
}

/** 429 with `Retry-After` in seconds. */
export class TooManyRequestsError extends HttpError {
  override name = 'TooManyRequestsError';
  constructor(retryAfterSeconds: number, options: HttpErrorOptions = {}) {
    super(429, {
      code: 'too_many_requests',
      ...options,
      headers: { ...options.headers, 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    });
  }
}

/** 502: an upstream (the identity provider's token endpoint, a JWKS endpoint) answered wrongly or not at all. */
export class BadGatewayError extends HttpError {
  override name = 'BadGatewayError';
  constructor(options: HttpErrorOptions = {}) {
    super(502, {
      code: 'bad_gateway',
      ...options,
      headers: { 'Retry-After': '5', ...options.headers },
    });
  }
}

/** 503 with `Retry-After`: a dependency (Redis, the identity provider) is down. The kit fails closed. */
export class ServiceUnavailableError extends HttpError {
  override name = 'ServiceUnavailableError';
  constructor(options: HttpErrorOptions & { retryAfterSeconds?: number } = {}) {
    const { retryAfterSeconds = 5, ...rest } = options;
    super(503, {
      code: 'service_unavailable',
      ...rest,
      headers: { ...rest.headers, 'Retry-After': String(retryAfterSeconds) },
    });
  }
}
