import { isDeepStrictEqual } from 'node:util';
import { MUTATING } from './idempotency.js';

type Json = Record<string, unknown>;

/** A JSON object in the document, or undefined for anything else. */
function json(value: unknown): Json | undefined {
  // Cast: checked just before: a non-array object.
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

/** A JSON array in the document (the same array, to be changed in place), or a new empty one. */
function jsonList(value: unknown): Json[] {
  return Array.isArray(value) ? value : [];
}
type Document = { paths?: Record<string, Record<string, Json>>; components?: { schemas?: Record<string, unknown> } };

/**
 * A route whose JSON body may be left out says so with this schema key: Fastify's OpenAPI generator
 * marks every body required, and the document transform says otherwise where this is set.
 */
export const OPTIONAL_BODY = 'x-optional-body';

/**
 * A multipart route's request body, by component name: the multipart parser reads it, not the
 * schema validator, so the generator cannot see it. The route names its form with this key.
 */
export const MULTIPART_FORM = 'x-multipart-form';
/** Route schema key: the 200 answer is of this content type (a download), while errors stay JSON ErrorResponse. */
export const SUCCESS_CONTENT_TYPE = 'x-success-content-type';

/** The spec's multipart records. */
const MULTIPART_FORMS: Record<string, Json> = {
  AudioUploadForm: {
    type: 'object',
    description: 'Multipart: the recorded voice file (audio, at most 50 MB)',
    properties: { file: { type: 'string', format: 'binary', description: 'The recorded voice message' } },
    required: ['file'],
  },
  AvatarUploadForm: {
    type: 'object',
    description: 'Multipart: the picture as one `file` part',
    properties: { file: { type: 'string', format: 'binary', description: 'A JPEG, PNG, WebP, GIF, HEIF, AVIF or TIFF picture' } },
    required: ['file'],
  },
  EncryptedAttachmentUploadForm: {
    type: 'object',
    description: 'Multipart: the encrypted attachment as the `file` part and, optionally, its encrypted thumbnail as the `thumbnail` part (each starting with E2A1 and a 12-byte nonce)',
    properties: {
      file: { type: 'string', format: 'binary', description: 'The encrypted attachment' },
      thumbnail: { type: 'string', format: 'binary', description: 'The encrypted thumbnail' },
    },
    required: ['file'],
  },
  AttachmentsUploadForm: {
    type: 'object',
    description: 'Multipart: one to ten `file` parts, and an optional `payload`, a ChatMessage as JSON text posted first (the files attach to it)',
    properties: {
      file: { type: 'array', items: { type: 'string', format: 'binary' }, minItems: 1, maxItems: 10, description: 'Each file as a `file` part' },
      payload: { type: 'string', contentMediaType: 'application/json', description: 'A ChatMessage as JSON: send the part as application/json, or as text holding the JSON' },
    },
    required: ['file'],
  },
};

const INPUT = 'Input';
const REF_PREFIX = '#/components/schemas/';

/** Every `$ref` target in `value`, by component name. */
function refsIn(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsIn(item, into);
  else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(REF_PREFIX)) into.add(child.slice(REF_PREFIX.length));
      else refsIn(child, into);
    }
  }
  return into;
}

/** `value` with every `$ref` to a key of `renames` pointing at its new name. */
function renameRefs<T>(value: T, renames: Map<string, string>): T {
  // Cast: a JSON value mapped item by item keeps its shape.
  if (Array.isArray(value)) return value.map((item) => renameRefs(item, renames)) as T;
  if (!value || typeof value !== 'object') return value;
  // Cast: a JSON object rebuilt key by key keeps its shape.
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(REF_PREFIX)) {
        const name = child.slice(REF_PREFIX.length);
        return [key, `${REF_PREFIX}${renames.get(name) ?? name}`];
      }
      return [key, renameRefs(child, renames)];
    }),
  ) as T;
}

/** `value` without `additionalProperties: false` anywhere: what tells an answered record from an accepted one. */
function lenient(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(lenient);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key, child]) => !(key === 'additionalProperties' && child === false)).map(([key, child]) => [key, lenient(child)]));
}

/**
 * The zod type provider registers every named record twice, as `X` (what the server answers) and
 * `XInput` (what it accepts). A client wants the spec's record names, one schema per record: an
 * `XInput` equal to `X` (once its own references are renamed) merges into `X`; a record only
 * accepted is named `X`; a record only answered loses its unused `XInput`.
 */
function oneSchemaPerRecord(document: Document): Document {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const referenced = refsIn(document.paths);
  for (let grew = true; grew; ) {
    grew = false;
    for (const name of [...referenced]) {
      for (const inner of refsIn(schemas[name])) {
        if (!referenced.has(inner)) {
          referenced.add(inner);
          grew = true;
        }
      }
    }
  }
  // Every twin by its base name, to compare twins whose own references differ only by the suffix.
  const twins = new Map(
    Object.keys(schemas)
      .filter((name) => name.endsWith(INPUT) && name.slice(0, -INPUT.length) in schemas)
      .map((name) => [name, name.slice(0, -INPUT.length)] as const),
  );
  const renames = new Map<string, string>();
  for (const [name, base] of twins) {
    // One side unused; or equal twins (the server strips unknown fields from what it accepts and adds
    // none to what it answers, so they differ only in `additionalProperties: false`): one record.
    const equal = () => isDeepStrictEqual(lenient(renameRefs(schemas[name], twins)), lenient(renameRefs(schemas[base], twins)));
    if (!referenced.has(base) || !referenced.has(name) || equal()) renames.set(name, base);
  }
  const kept: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const base = renames.get(name);
    if (base) {
      // An input-only record takes its base name (its unused output twin is dropped below).
      if (!referenced.has(base)) kept[base] = schema;
      continue;
    }
    if (name in kept) continue;
    if (!referenced.has(name) && [...renames.values()].includes(name)) continue;
    kept[name] = schema;
  }
  return renameRefs({ ...document, components: { ...document.components, schemas: kept } }, renames);
}

/** The one value a property schema allows (`const`, or an enum of one), if it allows just one. */
function singleValue(schema: Json | undefined): string | undefined {
  if (typeof schema?.const === 'string') return schema.const;
  return Array.isArray(schema?.enum) && schema.enum.length === 1 && typeof schema.enum[0] === 'string' ? schema.enum[0] : undefined;
}

/**
 * Every `oneOf` whose variants are named records that one required property tells apart (a zod
 * discriminated union: `type` of a card block, `kind` of a call signal) gets an OpenAPI
 * `discriminator` with its mapping, so that generators pick the variant by that property.
 */
function addDiscriminators(value: unknown, schemas: Record<string, unknown>): void {
  if (Array.isArray(value)) {
    for (const item of value) addDiscriminators(item, schemas);
    return;
  }
  const node = json(value);
  if (!node) return;
  for (const child of Object.values(node)) addDiscriminators(child, schemas);
  const variants = Array.isArray(node.oneOf) ? node.oneOf.map(json) : [];
  const names = variants.map((variant) => (typeof variant?.$ref === 'string' && variant.$ref.startsWith(REF_PREFIX) ? variant.$ref.slice(REF_PREFIX.length) : undefined));
  if (names.length < 2 || node.discriminator || names.some((name) => name === undefined)) return;
  const records = names.map((name) => json(schemas[name ?? '']));
  const candidates = Object.keys(json(records[0]?.properties) ?? {});
  for (const property of candidates) {
    const values = records.map((record) => (Array.isArray(record?.required) && record.required.includes(property) ? singleValue(json(json(record?.properties)?.[property])) : undefined));
    if (values.some((v) => v === undefined) || new Set(values).size !== values.length) continue;
    node.discriminator = { propertyName: property, mapping: Object.fromEntries(values.map((v, i) => [v, `${REF_PREFIX}${names[i]}`])) };
    return;
  }
}

/** The document without the records no operation uses, directly or through another record. */
function withoutUnusedSchemas<T extends Document>(document: T): T {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const used = refsIn(document.paths);
  for (const pending = [...used]; pending.length > 0; ) {
    for (const inner of refsIn(schemas[pending.pop() ?? ''])) {
      if (!used.has(inner)) {
        used.add(inner);
        pending.push(inner);
      }
    }
  }
  document.components = { ...document.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) };
  return document;
}

const operationIdOf = (method: string, path: string) =>
  [method, ...path.split('/').filter(Boolean).map((part) => part.replace(/[{}]/g, ''))]
    .join('-')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    // `!`: filter(Boolean) left no empty word.
    .map((word, i) => (i === 0 ? word.toLowerCase() : word[0]!.toUpperCase() + word.slice(1)))
    .join('');

/**
 * Query values arrive as text: a boolean is sent as `true` or `false` (the server takes exactly
 * those), and paging numbers fit 32 bits. The document says so in the types clients generate from.
 */
function clientTypes(parameter: Json): void {
  const schema = json(parameter.schema);
  if (!schema || parameter.in !== 'query') return;
  if (schema.type === 'string' && isDeepStrictEqual(schema.enum, ['true', 'false'])) {
    delete schema.enum;
    schema.type = 'boolean';
  }
  if (schema.type === 'integer' && typeof schema.maximum === 'number' && schema.maximum <= 2 ** 31 - 1 && schema.format === undefined) schema.format = 'int32';
}

/** A mutating operation behind the access token takes an optional Idempotency-Key, with the codes it may bring. */
function takesIdempotencyKey(operation: Json): void {
  const parameters = jsonList(operation.parameters);
  operation.parameters = parameters;
  parameters.push({
    in: 'header',
    name: 'Idempotency-Key',
    required: false,
    description: 'A key the client makes per request it may retry: a repeat with the same key and request gets the first answer (kept 24 hours)',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  });
  // Cast: an operation's responses are a map of JSON objects (swagger's types say unknown).
  const responses = (operation.responses ??= {}) as Record<string, Json>;
  const addCodes = (status: string, description: string, codes: string[]) => {
    const response = responses[status];
    const listed = /^(.*Codes: )([A-Z0-9_, ]+)\.$/.exec(String(response?.description ?? ''));
    // `!`: the pattern matched, so its second group is there.
    if (response && listed) response.description = `${listed[1]}${[...new Set([...listed[2]!.split(', '), ...codes])].sort().join(', ')}.`;
    else if (!response) responses[status] = { description: `${description}. Codes: ${codes.join(', ')}.`, content: (responses['401'] ?? responses['400'])?.content };
  };
  addCodes('400', 'Invalid request', ['IDEMPOTENCY_KEY_INVALID', 'IDEMPOTENCY_KEY_REUSED']);
  addCodes('409', 'Conflict', ['IDEMPOTENCY_ANSWER_NOT_KEPT', 'IDEMPOTENCY_KEY_IN_USE']);
}

/**
 * What the served document gets after the zod transform: operation ids, optional and multipart
 * bodies, client types of query parameters, one schema per record.
 */
export function finishDocument<T>(input: T): T {
  // Cast: the generic input is the OpenAPI document @fastify/swagger built.
  const document = oneSchemaPerRecord(input as Document);
  const schemas = (document.components ??= {}).schemas ?? {};
  for (const [path, operations] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(operations)) {
      operation.operationId ??= operationIdOf(method, path);
      for (const parameter of jsonList(operation.parameters)) clientTypes(parameter);
      const form = operation[MULTIPART_FORM];
      if (typeof form === 'string' && MULTIPART_FORMS[form]) {
        delete operation[MULTIPART_FORM];
        schemas[form] = MULTIPART_FORMS[form];
        operation.requestBody = { required: true, content: { 'multipart/form-data': { schema: { $ref: `${REF_PREFIX}${form}` } } } };
      }
      const download = operation[SUCCESS_CONTENT_TYPE];
      if (typeof download === 'string') {
        delete operation[SUCCESS_CONTENT_TYPE];
        const ok = json(json(operation.responses)?.['200']) ?? {};
        ok.content = { [download]: { schema: { type: 'string' } } };
      }
      if (path.startsWith('/api/') && MUTATING.has(method.toUpperCase()) && Array.isArray(operation.security)) takesIdempotencyKey(operation);
      if (!operation[OPTIONAL_BODY]) continue;
      delete operation[OPTIONAL_BODY];
      const body = json(operation.requestBody);
      if (body) {
        body.required = false;
        // A body that may be absent is validated as nullish (a generated client may send `null` for
        // none); documented as the object alone, so generators offer an optional object, not a union.
        for (const media of Object.values(json(body.content) ?? {})) {
          const entry = json(media);
          const anyOf = jsonList(json(entry?.schema)?.anyOf);
          const object = anyOf.filter((option) => json(option)?.type !== 'null');
          if (entry && anyOf.length === 2 && object.length === 1) entry.schema = object[0];
        }
      }
    }
  }
  document.components.schemas = schemas;
  addDiscriminators(schemas, schemas);
  // Cast: the same document, finished in place.
  return document as T;
}

/**
 * One of the served documents: the paths `select` keeps, under its own title. Every route goes into
 * one generated document; `/api` and the versioned payments interface are served apart from it.
 */
export function documentOf<T>(full: T, select: (path: string) => boolean, info: { title: string; version: string; description: string }): T {
  // Cast: a copy of the generated OpenAPI document.
  const document = structuredClone(full) as Document & { info?: unknown };
  document.paths = Object.fromEntries(Object.entries(document.paths ?? {}).filter(([path]) => select(path)));
  // Cast: the same document with fewer paths and its own info.
  document.info = info;
  return withoutUnusedSchemas(document) as T;
}
