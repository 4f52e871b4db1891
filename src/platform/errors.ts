/** Every failure a client may see: an HTTP status and a stable upper-snake code. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>[],
    readonly headers?: Record<string, string>,
    cause?: unknown,
    /** Fields added to this error's ErrorResponse body (e.g. `error` of the speech-to-text answer). */
    readonly extra?: Record<string, string>,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'AppError';
  }
}

export interface ErrorDefinition {
  readonly status: number;
  /** The default message; a call site may give a more precise one. */
  readonly message: string;
}

export interface ErrorOptions {
  message?: string;
  details?: Record<string, unknown>[];
  /** Seconds, sent as `Retry-After` (429 and 503). */
  retryAfter?: number;
  headers?: Record<string, string>;
  cause?: unknown;
  /** Fields added to the ErrorResponse body. */
  extra?: Record<string, string>;
}

/** One declared error: call it to make the AppError to throw. */
export type CodedError = ((options?: ErrorOptions) => AppError) & {
  readonly code: string;
  readonly status: number;
  readonly message: string;
  readonly area: string;
};

const catalogue = new Map<string, CodedError>();

/**
 * Declares an area's error codes, each once with its status and default message. A code declared
 * twice (in two areas, or twice with different statuses) stops the process at start-up.
 */
export function defineErrors<const T extends Record<string, ErrorDefinition>>(area: string, definitions: T): { readonly [K in keyof T]: CodedError } {
  const made: Record<string, CodedError> = {};
  for (const [code, definition] of Object.entries(definitions)) {
    if (!/^[A-Z][A-Z0-9_]+$/.test(code)) throw new Error(`error code ${code} is not upper-snake`);
    // `!`: has(code) was just true.
    if (catalogue.has(code)) throw new Error(`error code ${code} is declared by ${catalogue.get(code)!.area} and again by ${area}`);
    const make = (options: ErrorOptions = {}) => {
      const headers = { ...options.headers };
      if (options.retryAfter !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(options.retryAfter)));
      return new AppError(
        definition.status,
        code,
        options.message ?? definition.message,
        options.details,
        Object.keys(headers).length > 0 ? headers : undefined,
        options.cause,
        options.extra,
      );
    };
    // Cast: Object.assign adds the fields that make the factory a CodedError.
    const coded = Object.assign(make, { code, status: definition.status, message: definition.message, area }) as CodedError;
    catalogue.set(code, coded);
    made[code] = coded;
  }
  // Cast: made has one CodedError per key of the definitions.
  return made as { readonly [K in keyof T]: CodedError };
}

/** Every code declared so far (import `src/error-catalogue.ts` to load them all), by status then code. */
export function errorCatalogue(): CodedError[] {
  return [...catalogue.values()].sort((a, b) => a.status - b.status || a.code.localeCompare(b.code));
}

/** The declared error of this code, if any (for codes that arrive from another process, like the SFU's). */
export function declaredError(code: string): CodedError | undefined {
  return catalogue.get(code);
}

/** What an error says, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A property of something thrown or parsed (an error's `code`, `cause`, `writeErrors`), without assuming its shape. */
export function propertyOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? Reflect.get(value, key) : undefined;
}
