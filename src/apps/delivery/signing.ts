import { createHash, createPrivateKey, createPublicKey, sign, type KeyObject } from 'node:crypto';

const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface Jwk {
  kty: string;
  crv: string;
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/**
 * The service's signing key for what apps must be able to check came from it (cards and session
 * tokens, spec "Apps"): Ed25519 from a 32-byte seed in configuration, published as a JWKS, signing
 * compact JWS (`alg` EdDSA, `kid` the key's id).
 */
export class AppSigner {
  private readonly privateKey: KeyObject;
  readonly jwk: Jwk;

  constructor(seedBase64: string) {
    this.privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(seedBase64, 'base64')]), format: 'der', type: 'pkcs8' });
    // `!`: an Ed25519 public key's JWK always has its x coordinate.
    const x = createPublicKey(this.privateKey).export({ format: 'jwk' }).x!;
    const kid = createHash('sha256').update(x).digest('base64url').slice(0, 16);
    this.jwk = { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' };
  }

  jwks(): { keys: Jwk[] } {
    return { keys: [this.jwk] };
  }

  /** A compact JWS of `claims`, signed with the current key. */
  sign(claims: Record<string, unknown>): string {
    const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', typ: 'JWT', kid: this.jwk.kid })).toString('base64url');
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${header}.${payload}.${sign(null, Buffer.from(`${header}.${payload}`), this.privateKey).toString('base64url')}`;
  }
}
