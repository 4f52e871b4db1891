import { z } from 'zod';
import { IdParam, IsoDateTime } from '../platform/common.schemas.js';
import { pagedSchema, pagingQuery } from '../platform/common.schemas.js';
import { AMOUNT_PATTERN, CURRENCY_CODES } from './money.js';

export const CurrencySchema = z.enum(CURRENCY_CODES).describe('ETH (18 decimals) or USDT (6 decimals)');
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
    error: z.object({ code: z.string(), message: z.string() }).meta({ id: 'WalletTransactionError' }).nullable().describe('Why it was refused'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WalletTransactionDto' });

export const WithdrawalCreateSchema = z
  .object({
    requestId: RequestId,
    walletId: IdParam,
    toAddress: z.string().max(64).describe('The EVM address to pay'),
    amount: AmountSchema.describe('What the address receives; the fee is taken from the wallet on top'),
    biometric: BiometricConfirmationSchema.nullish().describe('Required when the calling device has a biometric key: ACTION WITHDRAW, fields requestId|walletId|toAddress|amount'),
  })
  .strict()
  .meta({ id: 'WithdrawalCreateRequest' });

export const WithdrawalDtoSchema = z
  .object({
    id: z.string(),
    requestId: z.string(),
    walletId: z.string(),
    currency: CurrencySchema,
    amount: z.string(),
    fee: z.string(),
    toAddress: z.string(),
    status: z.enum(['pending', 'sent', 'confirmed', 'refused', 'refunded']).describe('pending (debited, not sent yet), sent, confirmed; refused and refunded when the chain refused it'),
    txHash: z.string().nullable(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WithdrawalRequestDto' });

export const SwapQuoteRequestSchema = z
  .object({ fromWalletId: IdParam, toWalletId: IdParam, amount: AmountSchema.describe('What leaves the from-wallet, the fee included') })
  .strict()
  .meta({ id: 'WalletSwapQuoteRequest' });

export const SwapQuoteDtoSchema = z
  .object({
    id: z.string(),
    fromWalletId: z.string(),
    toWalletId: z.string(),
    fromCurrency: CurrencySchema,
    toCurrency: CurrencySchema,
    amount: z.string(),
    price: z.string().describe('How much of toCurrency one fromCurrency buys'),
    fee: z.string().describe('In fromCurrency, part of amount'),
    receiveAmount: z.string(),
    expiresAt: IsoDateTime,
  })
  .meta({ id: 'WalletSwapQuoteDto' });

export const SwapExecuteSchema = z
  .object({
    quoteId: IdParam,
    biometric: BiometricConfirmationSchema.nullish().describe('Required when the calling device has a biometric key: ACTION SWAP, fields quoteId'),
  })
  .strict()
  .meta({ id: 'WalletSwapExecuteRequest' });

export const SwapDtoSchema = z
  .object({
    id: z.string(),
    quoteId: z.string(),
    status: z.enum(['COMPLETED', 'PENDING', 'FAILED']).describe('PENDING: the house is short of the target currency; the credit follows when it is filled'),
    fromWalletId: z.string(),
    toWalletId: z.string(),
    fromCurrency: CurrencySchema,
    toCurrency: CurrencySchema,
    amount: z.string(),
    price: z.string(),
    fee: z.string(),
    receiveAmount: z.string(),
    createdAt: IsoDateTime,
    completedAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'WalletSwapDto' });
export const SwapPageSchema = pagedSchema(SwapDtoSchema, 'PagedModelWalletSwapDto');
export const SwapListQuerySchema = pagingQuery(20, 100).extend({ walletId: IdParam });

export const PaymentRequestCreateSchema = z
  .object({
    walletId: IdParam.describe('The caller\'s wallet the payments go into'),
    items: z.array(z.object({ recipientId: IdParam, amount: AmountSchema }).strict()).min(1).max(50),
    note: z.string().max(200).nullish(),
  })
  .strict()
  .meta({ id: 'PaymentRequestCreateRequest' });

export const PaymentRequestDtoSchema = z
  .object({
    id: z.string(),
    requesterId: z.string(),
    walletId: z.string().nullable().describe('The target wallet; shown to its owner only'),
    currency: CurrencySchema,
    note: z.string().nullable(),
    status: z.enum(['OPEN', 'PAID', 'CANCELLED', 'EXPIRED']),
    items: z.array(z.object({ recipientId: z.string(), amount: z.string(), status: z.enum(['OPEN', 'PAYING', 'PAID']), paidAt: IsoDateTime.nullable() })),
    createdAt: IsoDateTime,
    expiresAt: IsoDateTime,
  })
  .meta({ id: 'PaymentRequestDto' });

export const PaymentRequestPaySchema = z
  .object({
    walletId: IdParam.describe('The caller\'s wallet to pay from, in the request\'s currency'),
    biometric: BiometricConfirmationSchema.nullish().describe('Required when the calling device has a biometric key: ACTION PAY, fields paymentRequestId|walletId'),
  })
  .strict()
  .meta({ id: 'PaymentRequestPayRequest' });

export const PaymentRequestListQuerySchema = pagingQuery(20, 100).extend({
  role: z.enum(['outgoing', 'incoming']).describe('outgoing: the caller asked; incoming: the caller is asked to pay'),
});
export const PaymentRequestPageSchema = pagedSchema(PaymentRequestDtoSchema, 'PagedModelPaymentRequestDto');

export const LIMIT_TIERS = ['TIER_1', 'TIER_2', 'TIER_3'] as const;
export const LimitRequestCreateSchema = z
  .object({
    tier: z.enum(LIMIT_TIERS).optional().describe('TIER_1 is every account\'s start; TIER_2 ten times it; TIER_3 a hundred times'),
    noLimit: z.literal(true).optional().describe('Ask for no limit instead of a tier'),
    duration: z.enum(['DAYS_7', 'DAYS_30', 'UNTIL_CHANGED']),
    reason: z.string().max(500).nullish(),
    biometric: BiometricConfirmationSchema.describe('Signed by the device\'s key: ACTION LIMIT_REQUEST, fields <tier or NONE>|<duration>'),
  })
  .strict()
  .refine((body) => (body.tier === undefined) !== (body.noLimit === undefined), { message: 'give either tier or noLimit: true', path: ['tier'] })
  .meta({ id: 'WalletLimitRequestCreateRequest' });

export const LimitRequestDtoSchema = z
  .object({
    id: z.string(),
    userId: z.string(),
    tier: z.enum(LIMIT_TIERS).nullable(),
    noLimit: z.boolean(),
    duration: z.enum(['DAYS_7', 'DAYS_30', 'UNTIL_CHANGED']),
    reason: z.string().nullable(),
    status: z.enum(['OPEN', 'APPROVED', 'REFUSED']),
    decidedAt: IsoDateTime.nullable(),
    /** While approved: until when the limit applies (null: until changed). */
    effectiveUntil: IsoDateTime.nullable(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'WalletLimitRequestDto' });
export const LimitRequestPageSchema = pagedSchema(LimitRequestDtoSchema, 'PagedModelWalletLimitRequestDto');
