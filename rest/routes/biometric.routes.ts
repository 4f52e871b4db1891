import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteOptions } from '../route-options.js';
import { BiometricKeyEnrollSchema, BiometricKeyRemoveSchema, BiometricNonceSchema } from '../../src/devices/biometric.schemas.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { principalOf } from '../auth.js';
import { OPTIONAL_BODY } from '../openapi.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { DevicesErrors } from '../../src/devices/devices.errors.js';

/** The calling device's biometric key (spec, "Devices"). */
export const biometricRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { biometric } = services;
  const tags = ['Devices'];
  const security = [{ bearerAuth: [] }];

  app.post('/api/devices/biometric-key/nonce', {
    schema: {
      tags,
      security,
      summary: 'A fresh single-use nonce for this device to sign',
      response: { 200: BiometricNonceSchema, ...authedErrors() },
    },
    handler: async (request) => biometric.issueNonce(principalOf(request)),
  });

  app.put('/api/devices/biometric-key', {
    schema: {
      tags,
      security,
      summary: 'Enrol or replace this device\'s biometric key',
      description:
        'Needs `signature`, the new key\'s signature over "BIOMETRIC_KEY_ENROLL_V1|<nonce>" (400 when it fails). When a key is enrolled, replacing needs `currentKeySignature` over "BIOMETRIC_KEY_CHANGE_V1|REPLACE|<nonce>" or a `code`: 403 when missing or invalid; 429 after too many wrong codes for the account\'s number.',
      body: BiometricKeyEnrollSchema,
      response: { 204: NoContentSchema, ...authedErrors(DevicesErrors.BIOMETRIC_KEY_INVALID, DevicesErrors.BIOMETRIC_NONCE_INVALID, DevicesErrors.BIOMETRIC_SIGNATURE_INVALID, DevicesErrors.BIOMETRIC_PROOF_REQUIRED, DevicesErrors.BIOMETRIC_PROOF_INVALID, DevicesErrors.TOO_MANY_CODE_ATTEMPTS, CommonErrors.BUSY, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await biometric.enroll(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });

  app.delete('/api/devices/biometric-key', {
    schema: {
      tags,
      security,
      summary: 'Remove this device\'s biometric key',
      description:
        'Proof: `signature` by the enrolled key over "BIOMETRIC_KEY_CHANGE_V1|REMOVE|<nonce>" (with `nonce`), or a `code`. 204 when no key is enrolled; 403 when proof is missing or invalid; 429 after too many wrong codes. The account\'s devices get `device.biometric-key-removed`.',
      body: BiometricKeyRemoveSchema.nullish(),
      [OPTIONAL_BODY]: true,
      response: { 204: NoContentSchema, ...authedErrors(DevicesErrors.BIOMETRIC_PROOF_REQUIRED, DevicesErrors.BIOMETRIC_PROOF_INVALID, DevicesErrors.TOO_MANY_CODE_ATTEMPTS, CommonErrors.BUSY, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await biometric.remove(principalOf(request), request.body ?? {});
      return reply.code(204).send();
    },
  });

  app.post('/api/devices/biometric-key/code', {
    schema: {
      tags,
      security,
      summary: 'Text a code to the account\'s number, usable once as proof for a key change',
      response: { 204: NoContentSchema, ...authedErrors(CommonErrors.TOO_MANY_CODES, CommonErrors.PHONE_COUNTRY_NOT_ALLOWED, CommonErrors.SMS_UNAVAILABLE, CommonErrors.BUSY) },
    },
    handler: async (request, reply) => {
      await biometric.sendCode(principalOf(request));
      return reply.code(204).send();
    },
  });
};
