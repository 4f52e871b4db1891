import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal } from '../src/platform/principal.js';
import type { AuthService } from '../src/auth/auth.service.js';
import { CommonErrors } from '../src/platform/common.errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

// The scheme is case-insensitive (RFC 9110, section 11.1).
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i;

/** onRequest hook: every route in its scope needs a valid access token of an active device. */
export function requireAccessToken(auth: AuthService) {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const match = BEARER.exec(request.headers.authorization ?? '');
    if (!match?.[1]) throw CommonErrors.UNAUTHORIZED();
    request.principal = await auth.authenticate(match[1]);
  };
}

/** The caller of a route behind `requireAccessToken`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw CommonErrors.UNAUTHORIZED();
  return request.principal;
}
