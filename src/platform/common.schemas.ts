import { z } from 'zod';

/** The body of every error answer (docs/reference/errors.md). */
export const ErrorResponseSchema = z
  .object({
    status: z.number().int().describe('HTTP status, repeated'),
    code: z.string().describe('Stable upper-snake failure code, e.g. VALIDATION_FAILED'),
    message: z.string().describe('Human-readable explanation'),
    details: z
      .array(
        z
          .object({
            in: z.string().optional().describe('Validation failures: where (body, querystring, params or headers)'),
            field: z.string().optional().describe('Validation failures: the field, dotted (empty for the whole part)'),
            message: z.string().optional().describe('What is wrong with it'),
          })
          .loose()
          .describe('One problem. Validation failures give in, field and message; other codes add fields of their own (a file and its limit, the call in progress, a manifest path)')
          .meta({ id: 'ErrorDetail' }),
      )
      .optional()
      .describe('Per-field problems for validation failures'),
    path: z.string().describe('Request path'),
    error: z.string().optional().describe('Speech-to-text 400s: which of EMPTY_FILE, NO_TRANSCRIPT, UNREADABLE_AUDIO'),
    timestamp: z.string().describe('ISO 8601 time of the answer'),
  })
  .meta({ id: 'ErrorResponse' });

export type ErrorResponse = z.infer<typeof ErrorResponseSchema>;

export const NoContentSchema = z.undefined().describe('No content');

export const IsoDateTime = z.string().meta({ format: 'date-time' }).describe('ISO 8601 date-time');

export const IdParam = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'not a valid id');

/** A language code such as en or pt-BR. */
export const LANGUAGE_CODE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;
export const LanguageCode = z.string().regex(LANGUAGE_CODE, 'expected a language code such as en or pt-BR');
/** A language code in a path: also bounded in length, so the document states what the server takes. */
export const LanguageParam = z.string().max(12).regex(LANGUAGE_CODE, 'expected a language code such as en or pt-BR');

/** A query-string boolean: exactly "true" or "false". */
export const QueryBoolean = z.enum(['true', 'false']).transform((value) => value === 'true');

/**
 * A whole number in a query string. An empty value (`?currentPage=`) is refused, not read as 0 (as
 * plain coercion would: found by the fuzzer); an absent one takes the default.
 */
export const queryInt = (min: number, max: number, fallback: number) =>
  z.preprocess((value) => (value === '' ? Number.NaN : value), z.coerce.number().int().min(min).max(max)).default(fallback);

/** Zero-based paging by query, with the list's default page size (spec, "Limits"). */
export const pagingQuery = (defaultSize: number, maxSize: number) =>
  z.object({
    pageSize: queryInt(1, maxSize, defaultSize).describe(`Default ${defaultSize}, at most ${maxSize}`),
    currentPage: queryInt(0, 1_000_000, 0).describe('Zero-based'),
  });

export function pagedSchema<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      items: z.array(item),
      pageSize: z.number().int(),
      currentPage: z.number().int(),
      totalItems: z.number().int(),
      totalPages: z.number().int(),
    })
    .meta({ id });
}

export const avatarFields = {
  avatarUrl: z.string().nullable().describe('The profile picture, 512 × 512 WebP; opens without the Authorization header while it is current'),
  avatarThumbnailUrl: z.string().nullable().describe('The same picture, 128 × 128'),
};

/** Another user as every area shows them (the users area makes it; device events carry it too). */
export const UserDtoSchema = z
  .object({
    id: z.string(),
    deleted: z.boolean().describe('The user deleted their account: no name or picture is shown (their messages stay, shown as a deleted account\'s)'),
    displayName: z.string().nullable(),
    ...avatarFields,
  })
  .meta({ id: 'UserDto' });
