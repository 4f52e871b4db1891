import type { Clock } from '../platform/clock.js';
import { randomBytes } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import { newSmsCode, type CodeHasher } from '../platform/code-hash.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { Keyspace } from '../platform/keyspace.js';
import { parsePublicKey, verifySignature, type BiometricAlgorithm } from './signatures.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { BiometricKeyRecord, DeviceDoc, DevicesRepo } from './devices.repo.js';
import type { UserReads } from '../users/index.js';
import type { SmsProvider } from '../platform/sms/sms.js';
import { CommonErrors } from '../platform/common.errors.js';
import { DevicesErrors } from './devices.errors.js';
import { must } from '../platform/must.js';

export const NONCE_TTL_SECONDS = 300;
const CODE_TTL_SECONDS = 600;
const CODE_MAX_WRONG = 5;
const CODE_WRONG_WINDOW_SECONDS = 900;
const CODES_PER_WINDOW = 5;

/** The exact strings the device signs (spec, "Devices"; the enrol and confirm forms are this service's). */
export const signedMessage = {
  enroll: (nonce: string) => `BIOMETRIC_KEY_ENROLL_V1|${nonce}`,
  replace: (nonce: string) => `BIOMETRIC_KEY_CHANGE_V1|REPLACE|${nonce}`,
  remove: (nonce: string) => `BIOMETRIC_KEY_CHANGE_V1|REMOVE|${nonce}`,
  /** Prefix of a confirmation: the caller appends the canonical description of what is confirmed. */
  confirmPrefix: (nonce: string) => `BIOMETRIC_CONFIRM_V1|${nonce}|`,
};

export interface EnrollInput {
  publicKey: string;
  algorithm: BiometricAlgorithm;
  nonce: string;
  signature: string;
  currentKeySignature?: string;
  code?: string;
}

export interface RemoveInput {
  nonce?: string;
  signature?: string;
  code?: string;
}

export type ConfirmationResult = 'NOT_REQUIRED' | 'CONFIRMED';

/**
 * Biometric keys of devices (spec, "States and transitions", device biometric key) and the one
 * check later features use to confirm an action with the device's key.
 */
export class BiometricService {
  constructor(
    private readonly deps: {
      devices: Pick<DevicesRepo, 'findActive' | 'enrolledKeyOf' | 'swapBiometricKey'>;
      users: UserReads;
      codes: CodeHasher;
      ephemeral: EphemeralStore;
      keys: Keyspace['biometric'];
      sms: SmsProvider;
      events: DeviceEvents;
      appName: string;
      clock: Clock;
    },
  ) {}

  private async device(principal: Principal): Promise<DeviceDoc> {
    const device = await this.deps.devices.findActive(principal.deviceId, principal.userId);
    if (!device) throw DevicesErrors.DEVICE_REVOKED();
    return device;
  }

  /** A fresh single-use nonce bound to the calling device, valid five minutes. */
  async issueNonce(principal: Principal): Promise<{ nonce: string; expiresAt: string }> {
    const nonce = randomBytes(24).toString('base64url');
    await this.deps.ephemeral.put(this.deps.keys.nonce(nonce), principal.deviceId, NONCE_TTL_SECONDS);
    return { nonce, expiresAt: new Date((this.deps.clock()).getTime() + NONCE_TTL_SECONDS * 1000).toISOString() };
  }

  /** Uses up a nonce; true only once, only for the device it was issued to, only before it expires. */
  private async consumeNonce(principal: Principal, nonce: string | undefined): Promise<boolean> {
    if (!nonce || nonce.length > 128) return false;
    const owner = await this.deps.ephemeral.take(this.deps.keys.nonce(nonce));
    return owner === principal.deviceId;
  }

  /** Texts a six-digit code to the account's number, usable once as proof for a key change. */
  async sendCode(principal: Principal): Promise<void> {
    await this.device(principal);
    const user = await this.deps.users.findById(principal.userId);
    if (!user) throw CommonErrors.UNAUTHORIZED();
    const limit = await this.deps.ephemeral.hit(this.deps.keys.codesSent(user.phone), CODES_PER_WINDOW, CODE_WRONG_WINDOW_SECONDS);
    if (!limit.allowed) throw CommonErrors.TOO_MANY_CODES({ message: 'Too many codes were requested; try again later', retryAfter: limit.retryAfter });
    const code = newSmsCode();
    await this.deps.ephemeral.put(this.deps.keys.code(principal.deviceId), await this.deps.codes.hash(code), CODE_TTL_SECONDS);
    await this.deps.sms.send({ to: user.phone, text: `${code} is your ${this.deps.appName} code to change this device's biometric key.`, code });
  }

  /**
   * Checks a texted code. Wrong entries are counted per account number: past the allowance, 429
   * (spec: "too many codes entered for the account's number").
   */
  private async checkCode(principal: Principal, code: string): Promise<boolean> {
    const user = await this.deps.users.findById(principal.userId);
    if (!user) throw CommonErrors.UNAUTHORIZED();
    const wrongKey = this.deps.keys.wrongCodes(user.phone);
    const retryAfter = await this.deps.ephemeral.exhausted(wrongKey, CODE_MAX_WRONG);
    if (retryAfter !== null) throw DevicesErrors.TOO_MANY_CODE_ATTEMPTS({ retryAfter });
    const hash = await this.deps.ephemeral.get(this.deps.keys.code(principal.deviceId));
    if (hash && /^\d{6}$/.test(code) && (await this.deps.codes.verify(hash, code))) {
      // Single use: only the request that deletes it may use it.
      return this.deps.ephemeral.remove(this.deps.keys.code(principal.deviceId));
    }
    await this.deps.ephemeral.hit(wrongKey, CODE_MAX_WRONG, CODE_WRONG_WINDOW_SECONDS);
    return false;
  }

  /** none → enrolled with a proof of possession; enrolled → enrolled (new key) with a replacement proof, else 403. */
  async enroll(principal: Principal, input: EnrollInput): Promise<void> {
    const device = await this.device(principal);
    const parsed = parsePublicKey(input.publicKey, input.algorithm);
    if (!parsed) throw DevicesErrors.BIOMETRIC_KEY_INVALID({ message: `Not a ${input.algorithm} public key` });
    const current = device.biometricKey ?? null;
    if (current && !input.currentKeySignature && !input.code) {
      throw DevicesErrors.BIOMETRIC_PROOF_REQUIRED({ message: 'A key is enrolled: give currentKeySignature or a code to replace it' });
    }
    if (!(await this.consumeNonce(principal, input.nonce))) {
      if (current) throw DevicesErrors.BIOMETRIC_PROOF_INVALID({ message: 'The nonce is unknown, expired or used' });
      throw DevicesErrors.BIOMETRIC_NONCE_INVALID({ message: 'The nonce is unknown, expired or used; get a new one' });
    }
    if (!verifySignature(parsed.key, input.algorithm, Buffer.from(signedMessage.enroll(input.nonce)), input.signature)) {
      throw DevicesErrors.BIOMETRIC_SIGNATURE_INVALID();
    }
    if (current) {
      const byKey =
        input.currentKeySignature !== undefined &&
        verifySignature(must(parsePublicKey(current.publicKey, current.algorithm), 'the enrolled key').key, current.algorithm, Buffer.from(signedMessage.replace(input.nonce)), input.currentKeySignature);
      const byCode = !byKey && input.code !== undefined && (await this.checkCode(principal, input.code));
      if (!byKey && !byCode) throw DevicesErrors.BIOMETRIC_PROOF_INVALID({ message: 'The replacement proof is invalid' });
    }
    const swapped = await this.deps.devices.swapBiometricKey(device._id, current?.publicKey ?? null, {
      publicKey: parsed.spki,
      algorithm: input.algorithm,
      enrolledAt: this.deps.clock(),
    });
    if (!swapped) throw DevicesErrors.BIOMETRIC_PROOF_INVALID({ message: 'The enrolled key changed meanwhile; try again' });
  }

  /** enrolled → none with the enrolled key's signature or a code (the account's devices are told); none → 204. */
  async remove(principal: Principal, input: RemoveInput): Promise<void> {
    const device = await this.device(principal);
    const current = device.biometricKey ?? null;
    if (!current) return;
    if (!input.signature && !input.code) throw DevicesErrors.BIOMETRIC_PROOF_REQUIRED();
    let proven = false;
    if (input.signature) {
      const nonceOk = await this.consumeNonce(principal, input.nonce);
      proven =
        nonceOk &&
        input.nonce !== undefined &&
        verifySignature(must(parsePublicKey(current.publicKey, current.algorithm), 'the enrolled key').key, current.algorithm, Buffer.from(signedMessage.remove(input.nonce)), input.signature);
    }
    if (!proven && input.code !== undefined) proven = await this.checkCode(principal, input.code);
    if (!proven) throw DevicesErrors.BIOMETRIC_PROOF_INVALID({ message: 'The removal proof is invalid' });
    if (!(await this.deps.devices.swapBiometricKey(device._id, current.publicKey, null))) {
      throw DevicesErrors.BIOMETRIC_PROOF_INVALID({ message: 'The enrolled key changed meanwhile; try again' });
    }
    await this.deps.events.toUsers([principal.userId], 'device.biometric-key-removed', { deviceId: device._id, name: device.name });
  }

  /**
   * `confirm` for an action whose signed text is `BIOMETRIC_CONFIRM_V1|<nonce>|<ACTION>|<fields>`:
   * `signedFor` builds it from the nonce the device sent (the confirmation is optional in the request,
   * required only when the device has a key).
   */
  async confirmAction(principal: Principal, confirmation: Confirmation, signedFor: (nonce: string) => string): Promise<ConfirmationResult> {
    return this.confirmWith(principal, await this.enrolledKey(principal), actionInput(confirmation, signedFor));
  }

  /** `confirmAction` for each of a request's actions, in order, the device read once; the first refusal throws. */
  async confirmActions(principal: Principal, actions: { confirmation: Confirmation; signedFor: (nonce: string) => string }[]): Promise<void> {
    if (actions.length === 0) return;
    const key = await this.enrolledKey(principal);
    for (const { confirmation, signedFor } of actions) await this.confirmWith(principal, key, actionInput(confirmation, signedFor));
  }

  /**
   * The biometric check for actions that need it (wallet transactions, withdrawals, swaps): `message`
   * is the exact bytes the device signed, which must start with `BIOMETRIC_CONFIRM_V1|<nonce>|`; the
   * nonce is used up, so a confirmation cannot be replayed. A device without a key needs none.
   */
  async confirm(principal: Principal, input: ConfirmInput): Promise<ConfirmationResult> {
    return this.confirmWith(principal, await this.enrolledKey(principal), input);
  }

  /** The key enrolled on the calling device (null: none), from the devices' cache; 401 DEVICE_REVOKED for a device no longer active. */
  private async enrolledKey(principal: Principal): Promise<BiometricKeyRecord | null> {
    const key = await this.deps.devices.enrolledKeyOf(principal.deviceId, principal.userId);
    if (key === undefined) throw DevicesErrors.DEVICE_REVOKED();
    return key;
  }

  private async confirmWith(principal: Principal, current: BiometricKeyRecord | null, input: ConfirmInput): Promise<ConfirmationResult> {
    if (!current) return 'NOT_REQUIRED';
    if (!input.signature || !input.nonce) throw DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED();
    const prefix = Buffer.from(signedMessage.confirmPrefix(input.nonce));
    if (input.message.length < prefix.length || !input.message.subarray(0, prefix.length).equals(prefix)) {
      throw DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID({ message: 'The signed message does not carry this nonce' });
    }
    if (!(await this.consumeNonce(principal, input.nonce))) throw DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID({ message: 'The nonce is unknown, expired or used' });
    const key = must(parsePublicKey(current.publicKey, current.algorithm), 'the enrolled key').key;
    if (!verifySignature(key, current.algorithm, input.message, input.signature)) {
      throw DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID();
    }
    return 'CONFIRMED';
  }
}

type Confirmation = { nonce: string; signature: string } | null | undefined;
type ConfirmInput = { message: Buffer; signature?: string; nonce?: string };

/** What `confirm` checks for an action: the text `signedFor` makes of the nonce sent, and the signature. */
function actionInput(confirmation: Confirmation, signedFor: (nonce: string) => string): ConfirmInput {
  return {
    message: Buffer.from(signedFor(confirmation?.nonce ?? '')),
    ...(confirmation ? { nonce: confirmation.nonce, signature: confirmation.signature } : {}),
  };
}
