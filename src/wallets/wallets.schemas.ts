import { z } from 'zod';
import { IdParam, IsoDateTime } from '../platform/common.schemas.js';
import { pagedSchema } from '../contacts/contacts.schemas.js';
import { AMOUNT_PATTERN, CURRENCY_CODES } from './money.js';

export const CurrencySchema = z.enum(CURRENCY_CODES as [string, ...string[]]).describe('ETH (18 decimals) or USDT (6 decimals)');
/** Amounts are decimal strings on the wire, never numbers. */
export const AmountSchema = z.string().regex(AMOUNT_PATTERN, 'a decimal string such as "0.015"').describe('A decimal string such as "0.015"');
const RequestId = z.string().min(8).max(64).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : -').describe('Idempotency key: the same key with the same fields returns the first result');

export const BiometricConfirmationSchema = z
  .object({
    nonce: z.string().min(1).max(128).describe('From POST /api/devices/biometric-key/nonce'),
    signature: z.string().min(1).max(512).describe('Base64 signature by the enrolled key over BIOMETRIC_CONFIRM_V1|<nonce>|<ACTION>|<fields>'),
  })
  .strict()
  .meta({ id: 'BiometricConfirmation' });

export const WalletDtoSchema = z
  .object({
    id: z.string(),
    currency: CurrencySchema,
    name: z.string(),
    balance: AmountSchema.describe('Available plus held'),
    available: AmountSchema.describe('What may be spent now'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WalletDto' });

export const WalletCreateSchema = z
  .object({ currency: CurrencySchema, name: z.string().max(200).optional() })
  .strict()
  .meta({ id: 'WalletCreateRequest' });

export const WalletRenameQuerySchema = z.object({ name: z.string().max(200).describe('1 to 50 characters once surrounding whitespace is removed') });

export const DepositAddressSchema = z
  .object({ network: z.string().describe('The EVM chain id'), currency: CurrencySchema, address: z.string() })
  .meta({ id: 'DepositAddressDto' });

export const LedgerLineSchema = z
  .object({
    id: z.string(),
    kind: z.enum(['TRANSFER', 'DEPOSIT', 'WITHDRAWAL', 'SWAP', 'PAYMENT', 'ADJUSTMENT']),
    amount: z.string().describe('Signed decimal: negative left the wallet'),
    currency: CurrencySchema,
    counterpartyUserId: z.string().nullable(),
    note: z.string().nullable(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WalletLedgerEntryDto' });
export const LedgerPageSchema = pagedSchema(LedgerLineSchema, 'PagedModelWalletLedgerEntryDto');

export const ExchangeRatesSchema = z
  .object({
    rates: z.array(z.object({ from: CurrencySchema, to: CurrencySchema, rate: z.string().describe('How much of `to` one `from` buys') })),
    source: z.string(),
    at: IsoDateTime,
  })
  .meta({ id: 'ExchangeRatesDto' });

export const WalletTransactionRequestSchema = z
  .object({
    requestId: RequestId,
    fromWalletId: IdParam,
    toUserId: IdParam,
    amount: AmountSchema,
    note: z.string().max(200).nullish(),
    biometric: BiometricConfirmationSchema.nullish().describe('Required when the calling device has a biometric key: ACTION TRANSFER, fields requestId|fromWalletId|toUserId|amount'),
  })
  .strict()
  .meta({ id: 'WalletTransactionRequest' });
export const WalletTransactionsSchema = z.array(WalletTransactionRequestSchema).min(1).max(50);

export const WalletTransactionDtoSchema = z
  .object({
    requestId: z.string(),
    id: z.string().nullable().describe('The ledger entry; null when refused before one was made'),
    fromWalletId: z.string(),
    toUserId: z.string(),
    currency: CurrencySchema.nullable(),
    amount: z.string(),
    note: z.string().nullable(),
    status: z.enum(['COMPLETED', 'PENDING', 'REFUSED']).describe('PENDING: still being applied; ask again with the same requestId'),
    error: z.object({ code: z.string(), message: z.string() }).nullable().describe('Why it was refused'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WalletTransactionDto' });
