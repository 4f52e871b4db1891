import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AttachmentsErrors } from '../src/attachments/attachments.errors.js';
import { CommonErrors } from '../src/platform/common.errors.js';
import { AppError, type CodedError } from '../src/platform/errors.js';
import type { ErrorResponse } from '../src/platform/common.schemas.js';
import { isMalformedMultipart } from './multipart.js';
import { documentedCodes } from './responses.js';
import type { DependencyHealth } from '../src/platform/dependencies.js';
import { IDEMPOTENCY_CODES, MUTATING } from './idempotency.js';

/** Routes whose path carries a credential (ticket links): their answers and logs show the template. */
const CREDENTIAL_IN_PATH = /:(ticket|token)\b/;

/**
 * The path an error body or a log line may show: the route's template (`/media/:ticket`) where the
 * path itself is a credential, else the path as asked; never the query.
 */
export function shownPath(request: FastifyRequest): string {
  const template = request.routeOptions.url;
  if (template && CREDENTIAL_IN_PATH.test(template)) return template;
  return request.url.split('?')[0] ?? request.url;
}

function body(request: FastifyRequest, status: number, code: string, message: string, details?: Record<string, unknown>[]): ErrorResponse {
  return {
    status,
    code,
    message,
    ...(details && details.length > 0 ? { details } : {}),
    path: shownPath(request),
    timestamp: new Date().toISOString(),
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Whether error answers are checked against the codes their operation documents (tests). */
    checkDocumentedCodes: boolean;
  }
}

/**
 * Where the code answered is not among those the operation documents: in tests (NODE_ENV=test) the
 * answer becomes a 500 naming it, so the test that met it fails and the OpenAPI document is mended.
 */
function undocumented(request: FastifyRequest, made: AppError): AppError | null {
  const { schema, url } = request.routeOptions;
  if (!request.server.checkDocumentedCodes || !url || !schema || schema.hide) return null;
  // Cast: Fastify types a route's response schemas as unknown; they are the status-keyed map the routes declare.
  const codes = documentedCodes((schema.response as Record<number, unknown> | undefined)?.[made.status]);
  if (codes?.has(made.code)) return null;
  // The Idempotency-Key codes every mutating operation behind the access token documents (finishDocument adds them).
  if (MUTATING.has(request.method) && IDEMPOTENCY_CODES.some((code) => code.code === made.code)) return null;
  return CommonErrors.INTERNAL_ERROR({ message: `undocumented answer ${made.status} ${made.code} for ${request.method} ${url}` });
}

/** Sends an error answer: a declared code, or the AppError it made. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: CodedError | AppError) {
  const given = error instanceof AppError ? error : error();
  const made = undocumented(request, given) ?? given;
  if (made !== given) request.log.error({ code: given.code, status: given.status, route: request.routeOptions.url }, made.message);
  if (made.headers) reply.headers(made.headers);
  return reply.code(made.status).type('application/json; charset=utf-8').send({ ...body(request, made.status, made.code, made.message, made.details), ...made.extra });
}

/** Fastify's own request errors, mapped to codes of the ErrorResponse. */
const FASTIFY_CODES: Record<string, AppError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: CommonErrors.UNSUPPORTED_MEDIA_TYPE(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: CommonErrors.INVALID_CONTENT_LENGTH(),
  FST_ERR_CTP_INVALID_JSON_BODY: CommonErrors.MALFORMED_JSON(),
  FST_ERR_CTP_EMPTY_JSON_BODY: CommonErrors.MALFORMED_JSON({ message: 'The body is empty' }),
  // @fastify/multipart
  FST_FILES_LIMIT: AttachmentsErrors.LIMIT_FILES_PER_UPLOAD(),
  FST_REQ_FILE_TOO_LARGE: AttachmentsErrors.LIMIT_FILE_SIZE(),
  FST_PARTS_LIMIT: AttachmentsErrors.LIMIT_PARTS(),
  FST_FIELDS_LIMIT: AttachmentsErrors.LIMIT_FIELDS(),
  FST_INVALID_MULTIPART_CONTENT_TYPE: CommonErrors.UNSUPPORTED_MEDIA_TYPE({ message: 'Send multipart/form-data' }),
  FST_MP_PREMATURE_CLOSE: AttachmentsErrors.UPLOAD_INCOMPLETE(),
  FST_INVALID_JSON_FIELD_ERROR: CommonErrors.MULTIPART_INVALID({ message: 'A part sent as application/json is not valid JSON' }),
  FST_PROTO_VIOLATION: CommonErrors.MULTIPART_INVALID({ message: 'A part is named after a prototype property' }),
};

export function installErrorHandling(app: FastifyInstance, options: { checkDocumentedCodes: boolean; dependencies: DependencyHealth }): void {
  app.decorate('checkDocumentedCodes', options.checkDocumentedCodes);
  // Answered before the body is read: a method no route has (TRACE, QUERY) never reaches body parsing.
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return answerNoRoute(app, request, reply);
    return undefined;
  });
  app.setNotFoundHandler((request, reply) => answerNoRoute(app, request, reply));

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      if (error.status >= 500) request.log.error({ err: error.cause ?? error, code: error.code }, 'dependency failure');
      return sendError(request, reply, error);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const details = error.validation.map((issue) => ({
        in: error.validationContext,
        // Cast: the zod type provider puts zod's issue in Ajv-shaped params, typed as Record<string, any> of unknown shape.
        field: issue.instancePath.replace(/^\//, '').replaceAll('/', '.') || (issue.params as { issue?: { path?: unknown[] } }).issue?.path?.join('.') || '',
        message: issue.message,
      }));
      return sendError(request, reply, CommonErrors.VALIDATION_FAILED({ message: `Invalid ${error.validationContext ?? 'request'}`, details }));
    }
    // The size limit is in the answer: the route's own, or the server's BODY_LIMIT.
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const limit = request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit;
      return sendError(request, reply, CommonErrors.PAYLOAD_TOO_LARGE({ message: `The request body is larger than the limit of ${limit} bytes` }));
    }
    const known = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (known) return sendError(request, reply, known);
    if (error.validation) {
      return sendError(request, reply, CommonErrors.VALIDATION_FAILED({ message: error.message }));
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      // A 4xx Fastify raised that has no code of ours: its status, with the general code.
      return sendError(request, reply, new AppError(error.statusCode, CommonErrors.BAD_REQUEST.code, error.message));
    }
    // MongoDB or Redis stopped answering while the request ran: 503 with its code, never a 500.
    const away = options.dependencies.noteError(error);
    if (away) {
      request.log.warn({ err: error, dependency: away }, 'dependency away');
      return sendError(request, reply, options.dependencies.unavailable(away, error));
    }
    if (isMalformedMultipart(error)) return sendError(request, reply, CommonErrors.MULTIPART_INVALID({ message: `The multipart/form-data body is malformed: ${error.message}` }));
    request.log.error({ err: error }, 'unhandled error');
    return sendError(request, reply, CommonErrors.INTERNAL_ERROR);
  });
}

/** 404, or 405 with `Allow` when the path exists under other methods (RFC 9110, 15.5.6). */
function answerNoRoute(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
  const path = request.url.split('?')[0] ?? '';
  const allowed = allowedMethods(app.routeTable, path);
  if (allowed.length === 0) return sendError(request, reply, CommonErrors.NOT_FOUND({ message: `No route ${request.method} ${path}` }));
  void reply.header('allow', allowed.join(', '));
  return sendError(request, reply, CommonErrors.METHOD_NOT_ALLOWED({ message: `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}` }));
}

interface RoutePattern {
  method: string;
  url: string;
  pattern: RegExp;
  /** One flag per path segment, 1 for a fixed word: the router prefers fixed words, left to right. */
  rank: number[];
}

const routePatterns = new WeakMap<readonly string[], RoutePattern[]>();

function patternsOf(routeTable: readonly string[]): RoutePattern[] {
  let patterns = routePatterns.get(routeTable);
  if (!patterns) {
    patterns = routeTable.map((route) => {
      const [method = '', url = ''] = route.split(' ');
      const segments = url.split('/');
      const source = segments.map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))).join('/');
      return { method, url, pattern: new RegExp(`^${source}$`), rank: segments.map((segment) => (segment.startsWith(':') || segment === '*' ? 0 : 1)) };
    });
    routePatterns.set(routeTable, patterns);
  }
  return patterns;
}

const byRank = (a: RoutePattern, b: RoutePattern) => {
  for (let i = 0; i < Math.max(a.rank.length, b.rank.length); i++) if ((a.rank[i] ?? 0) !== (b.rank[i] ?? 0)) return (b.rank[i] ?? 0) - (a.rank[i] ?? 0);
  return 0;
};

/**
 * The methods a concrete path has (GET brings HEAD), in a stable order: those of the route the
 * router would pick for it, so `/api/rooms/search` has POST only, not the GET of `/api/rooms/:roomId`.
 */
function allowedMethods(routeTable: readonly string[], path: string): string[] {
  const matching = patternsOf(routeTable).filter(({ pattern }) => pattern.test(path)).sort(byRank);
  const best = matching[0];
  if (!best) return [];
  // Routes of one shape count together, whatever their parameters are named (`/api/messages/:roomId` and `/api/messages/:messageId`).
  const methods = new Set(matching.filter((route) => route.pattern.source === best.pattern.source).map(({ method }) => method));
  if (methods.has('GET')) methods.add('HEAD');
  return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((method) => methods.has(method));
}
