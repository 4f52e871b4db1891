import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';

/**
 * Checks a session token the service gave a member for this app (POST /api/apps/{appId}/session-token):
 * its EdDSA signature against the service's JWKS (/.well-known/jwks.json), that it is for this app,
 * and not expired. The member, by this app's id for them; null when the token does not hold.
 */
export function verifySessionToken(token: string, jwks: { keys: (JsonWebKey & { kid?: string })[] }, appId: string, nowSeconds = Math.floor(Date.now() / 1000)): { userId: string; expiresAt: number } | null {
  const [header, payload, signature] = token.split('.');
  if (!header || !payload || !signature) return null;
  try {
    const { alg, kid } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: string; kid?: string };
    const jwk = jwks.keys.find((key) => key.kid === kid);
    if (alg !== 'EdDSA' || !jwk) return null;
    if (!verify(null, Buffer.from(`${header}.${payload}`), createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(signature, 'base64url'))) return null;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { aud?: string; sub?: string; exp?: number };
    if (claims.aud !== appId || typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || claims.exp < nowSeconds) return null;
    return { userId: claims.sub, expiresAt: claims.exp };
  } catch {
    return null;
  }
}
