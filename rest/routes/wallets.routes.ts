import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { afterAnswerOf } from '../after-answer.js';
import { IdParam } from '../../src/platform/common.schemas.js';
import { pagingQuery } from '../../src/platform/common.schemas.js';
import {
  DepositAddressSchema,
  ExchangeRatesSchema,
  LedgerPageSchema,
  WalletCreateSchema,
  WalletDtoSchema,
  WalletRenameQuerySchema,
  WalletTransactionDtoSchema,
  WalletTransactionsSchema,
  WithdrawalCreateSchema,
  WithdrawalDtoSchema,
  SwapDtoSchema,
  SwapExecuteSchema,
  SwapListQuerySchema,
  SwapPageSchema,
  SwapQuoteDtoSchema,
  SwapQuoteRequestSchema,
  PaymentRequestCreateSchema,
  PaymentRequestDtoSchema,
  PaymentRequestListQuerySchema,
  PaymentRequestPageSchema,
  PaymentRequestPaySchema,
  LimitRequestCreateSchema,
  LimitRequestDtoSchema,
  LimitRequestPageSchema,
} from '../../src/wallets/wallets.schemas.js';
import { UsersErrors } from '../../src/users/users.errors.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { WalletsErrors } from '../../src/wallets/wallets.errors.js';
import { DevicesErrors } from '../../src/devices/devices.errors.js';

/** Wallets, their history, transfers between members, exchange rates (spec, "Wallets"; docs/clients/wallets.md). */
export const walletsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { wallets, walletTransfers, withdrawals, swaps, paymentRequests, walletLimits, exchangeRates } = services;
  const tags = ['Wallets'];
  const security = [{ bearerAuth: [] }];
  const wallet = z.object({ walletId: IdParam });
  const notFound = WalletsErrors.WALLET_NOT_FOUND;

  app.get('/api/wallets', {
    schema: { tags, security, summary: 'The caller\'s wallets, oldest first', response: { 200: z.array(WalletDtoSchema), ...authedErrors() } },
    handler: async (request) => wallets.list(principalOf(request)),
  });

  app.post('/api/wallets', {
    schema: {
      tags,
      security,
      summary: 'Create a wallet in a currency (at most 20 per account)',
      body: WalletCreateSchema,
      response: { 200: WalletDtoSchema, ...authedErrors(WalletsErrors.WALLET_NAME_INVALID, WalletsErrors.WALLET_LIMIT_REACHED, ...BODY_ERRORS) },
    },
    handler: async (request) => wallets.create(principalOf(request), { currency: request.body.currency, ...(request.body.name === undefined ? {} : { name: request.body.name }) }),
  });

  app.get('/api/wallets/:walletId', {
    schema: { tags, security, summary: 'One of the caller\'s wallets (400 for one that does not exist or is another member\'s)', params: wallet, response: { 200: WalletDtoSchema, ...authedErrors(notFound) } },
    handler: async (request) => wallets.get(principalOf(request), request.params.walletId),
  });

  app.post('/api/wallets/:walletId', {
    schema: {
      tags,
      security,
      summary: 'Rename a wallet (surrounding whitespace removed; empty is 400)',
      params: wallet,
      querystring: WalletRenameQuerySchema,
      response: { 200: WalletDtoSchema, ...authedErrors(notFound, WalletsErrors.WALLET_NAME_INVALID) },
    },
    handler: async (request) => wallets.rename(principalOf(request), request.params.walletId, request.query.name),
  });

  app.get('/api/wallets/:walletId/deposit-address', {
    schema: {
      tags,
      security,
      summary: 'Where to send funds on chain for this wallet',
      description: 'Funds sent there are credited once the deposit has the configured number of confirmations.',
      params: wallet,
      response: { 200: DepositAddressSchema, ...authedErrors(notFound) },
    },
    handler: async (request) => wallets.depositAddress(principalOf(request), request.params.walletId),
  });

  app.get('/api/wallets/:walletId/transactions', {
    schema: { tags, security, summary: 'The wallet\'s ledger entries, newest first', params: wallet, querystring: pagingQuery(20, 100), response: { 200: LedgerPageSchema, ...authedErrors(notFound) } },
    handler: async (request) => wallets.history(principalOf(request), request.params.walletId, request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/wallet-transactions', {
    schema: {
      tags,
      security,
      summary: 'Transfers to other members: one ledger entry per item, answered item by item',
      description:
        'Each item moves `amount` from the caller\'s wallet to the recipient\'s oldest wallet of that currency, free of charge. ' +
        'The whole request is checked first: every source wallet is the caller\'s, every amount valid, every recipient another member with a wallet of that currency, no requestId twice, and, when the calling device has a biometric key, every item\'s `biometric` signature over `BIOMETRIC_CONFIRM_V1|<nonce>|TRANSFER|<requestId>|<fromWalletId>|<toUserId>|<amount>`. ' +
        'A failed check answers 400 (403 for the biometric confirmation) and nothing is applied. Then the items are applied in order: an item the balance cannot pay at that moment, or one a concurrent request took under the same requestId, is REFUSED with its `error` and does not stop the others. ' +
        'The same requestId with the same fields answers as the first time; with other fields 400 REQUEST_ID_REUSED.',
      body: WalletTransactionsSchema,
      response: {
        200: z.array(WalletTransactionDtoSchema),
        ...authedErrors(
          notFound,
          WalletsErrors.AMOUNT_INVALID,
          WalletsErrors.TRANSFER_TO_SELF,
          WalletsErrors.RECIPIENT_HAS_NO_WALLET,
          UsersErrors.USER_NOT_FOUND,
          WalletsErrors.REQUEST_ID_REUSED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request, reply) => walletTransfers.transfer(principalOf(request), request.body, afterAnswerOf(reply)),
  });

  app.post('/api/wallet-withdrawals', {
    schema: {
      tags,
      security,
      summary: 'Withdraw to an address on chain',
      description:
        'Checks first: the wallet is the caller\'s, the amount and address are valid, the biometric confirmation when the device has a key (`BIOMETRIC_CONFIRM_V1|<nonce>|WITHDRAW|<requestId>|<walletId>|<toAddress>|<amount>`), the 24-hour sending limit, and the balance for amount plus fee. ' +
        'Then the amount and fee are debited (held) before anything is sent; the answer is `pending`, and the devices hear `wallet.withdrawal-updated` as it becomes `sent`, `confirmed`, or `refunded` when the chain refuses it. ' +
        'The same requestId with the same fields returns the first result; with other fields 400 REQUEST_ID_REUSED.',
      body: WithdrawalCreateSchema,
      response: {
        200: WithdrawalDtoSchema,
        ...authedErrors(
          notFound,
          WalletsErrors.AMOUNT_INVALID,
          WalletsErrors.ADDRESS_INVALID,
          WalletsErrors.LIMIT_EXCEEDED,
          WalletsErrors.INSUFFICIENT_FUNDS,
          WalletsErrors.REQUEST_ID_REUSED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request) => withdrawals.create(principalOf(request), request.body),
  });

  app.get('/api/wallet-withdrawals/:withdrawalId', {
    schema: { tags, security, summary: 'One of the caller\'s withdrawals with its status', params: z.object({ withdrawalId: IdParam }), response: { 200: WithdrawalDtoSchema, ...authedErrors(WalletsErrors.WITHDRAWAL_NOT_FOUND) } },
    handler: async (request) => withdrawals.get(principalOf(request), request.params.withdrawalId),
  });

  app.post('/api/wallet-swaps/quote', {
    schema: {
      tags,
      security,
      summary: 'Quote a swap between two of the caller\'s wallets: price, fee, what would be received, until when',
      description: 'Nothing is debited; ask again on every amount change. The fee is part of `amount`.',
      body: SwapQuoteRequestSchema,
      response: { 200: SwapQuoteDtoSchema, ...authedErrors(notFound, WalletsErrors.SWAP_SAME_CURRENCY, WalletsErrors.AMOUNT_INVALID, WalletsErrors.SWAP_TOO_SMALL, WalletsErrors.PRICES_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request) => swaps.quote(principalOf(request), request.body),
  });

  app.post('/api/wallet-swaps', {
    schema: {
      tags,
      security,
      summary: 'Accept a quote: debit and credit at the quoted price',
      description:
        'The biometric confirmation (`BIOMETRIC_CONFIRM_V1|<nonce>|SWAP|<quoteId>`, when the device has a key) and the balance are checked first; then the quote is taken, once, before `expiresAt`. ' +
        'If a check fails neither wallet changes. `PENDING` when the house is short of the target currency: the credit follows when it is filled.',
      body: SwapExecuteSchema,
      response: {
        200: SwapDtoSchema,
        ...authedErrors(
          WalletsErrors.QUOTE_NOT_FOUND,
          WalletsErrors.QUOTE_EXPIRED,
          WalletsErrors.QUOTE_ALREADY_USED,
          WalletsErrors.INSUFFICIENT_FUNDS,
          notFound,
          DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request) => swaps.execute(principalOf(request), request.body),
  });

  app.get('/api/wallet-swaps', {
    schema: { tags, security, summary: 'The swaps in or out of a wallet of the caller, newest first', querystring: SwapListQuerySchema, response: { 200: SwapPageSchema, ...authedErrors(notFound) } },
    handler: async (request) => swaps.list(principalOf(request), request.query.walletId, request.query.pageSize, request.query.currentPage),
  });

  const paymentRequest = z.object({ paymentRequestId: IdParam });
  app.post('/api/payment-requests', {
    schema: {
      tags,
      security,
      summary: 'Ask members to pay into one of the caller\'s wallets: one item per recipient and amount',
      description: 'Each recipient\'s devices hear `wallet.payment-requested`. Open until paid, cancelled, or `PAYMENT_REQUEST_TTL` (7 days) passes.',
      body: PaymentRequestCreateSchema,
      response: { 200: PaymentRequestDtoSchema, ...authedErrors(notFound, WalletsErrors.PAYMENT_RECIPIENT_INVALID, WalletsErrors.AMOUNT_INVALID, ...BODY_ERRORS) },
    },
    handler: async (request) => paymentRequests.create(principalOf(request), request.body),
  });

  app.get('/api/payment-requests', {
    schema: { tags, security, summary: 'The caller\'s payment requests, newest first: asked (outgoing) or to pay (incoming)', querystring: PaymentRequestListQuerySchema, response: { 200: PaymentRequestPageSchema, ...authedErrors() } },
    handler: async (request) => paymentRequests.list(principalOf(request), request.query.role, request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/payment-requests/:paymentRequestId/pay', {
    schema: {
      tags,
      security,
      summary: 'Pay the caller\'s own item of a payment request',
      description: 'From a wallet of the request\'s currency; with the biometric confirmation `BIOMETRIC_CONFIRM_V1|<nonce>|PAY|<paymentRequestId>|<walletId>` when the device has a key. The requester hears `wallet.payment-request-paid`.',
      params: paymentRequest,
      body: PaymentRequestPaySchema,
      response: {
        200: PaymentRequestDtoSchema,
        ...authedErrors(
          WalletsErrors.PAYMENT_REQUEST_NOT_FOUND,
          WalletsErrors.PAYMENT_ITEM_NOT_OPEN,
          WalletsErrors.PAYMENT_REQUEST_CLOSED,
          WalletsErrors.CURRENCY_MISMATCH,
          WalletsErrors.INSUFFICIENT_FUNDS,
          notFound,
          DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request) => paymentRequests.pay(principalOf(request), request.params.paymentRequestId, request.body),
  });

  app.post('/api/payment-requests/:paymentRequestId/cancel', {
    schema: {
      tags,
      security,
      summary: 'Cancel a payment request: the owner of its target wallet, only while no item is paid',
      params: paymentRequest,
      response: { 200: PaymentRequestDtoSchema, ...authedErrors(WalletsErrors.PAYMENT_REQUEST_NOT_FOUND, WalletsErrors.PAYMENT_REQUEST_HAS_PAYMENTS, WalletsErrors.PAYMENT_REQUEST_CLOSED, notFound) },
    },
    handler: async (request) => paymentRequests.cancel(principalOf(request), request.params.paymentRequestId),
  });

  app.post('/api/wallet-limits/requests', {
    schema: {
      tags,
      security,
      summary: 'Ask for a higher sending limit (a tier) or none, for 7 days, 30 days or until changed',
      description:
        'Only from a device past its waiting period (`LIMIT_REQUEST_DEVICE_WAIT`, 3 days) with a biometric key, which signs `BIOMETRIC_CONFIRM_V1|<nonce>|LIMIT_REQUEST|<tier or NONE>|<duration>`; ' +
        'one open request at a time, and not within 7 days of a refusal. A site administrator decides; the devices hear `wallet.limit-request-decided`.',
      body: LimitRequestCreateSchema,
      response: {
        200: LimitRequestDtoSchema,
        ...authedErrors(
          WalletsErrors.LIMIT_DEVICE_TOO_NEW,
          WalletsErrors.LIMIT_NEEDS_BIOMETRIC_KEY,
          WalletsErrors.LIMIT_REQUEST_OPEN,
          WalletsErrors.LIMIT_REFUSED_RECENTLY,
          DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED,
          DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request) => walletLimits.request(principalOf(request), request.body),
  });

  const adminTags = ['Admin'];
  app.get('/api/admin/wallet-limit-requests', {
    schema: {
      tags: adminTags,
      security,
      summary: 'Limit requests by status, oldest first (site administrators)',
      querystring: pagingQuery(20, 100).extend({ status: z.enum(['OPEN', 'APPROVED', 'REFUSED']).default('OPEN') }),
      response: { 200: LimitRequestPageSchema, ...authedErrors() },
    },
    handler: async (request) => walletLimits.listForAdmin(principalOf(request), request.query.status, request.query.pageSize, request.query.currentPage),
  });

  for (const [action, approve] of [['approve', true], ['refuse', false]] as const) {
    app.post(`/api/admin/wallet-limit-requests/:requestId/${action}`, {
      schema: {
        tags: adminTags,
        security,
        summary: `${approve ? 'Approve' : 'Refuse'} a limit request (site administrators); the member's devices are told`,
        params: z.object({ requestId: IdParam }),
        response: { 200: LimitRequestDtoSchema, ...authedErrors(WalletsErrors.LIMIT_REQUEST_NOT_FOUND, WalletsErrors.LIMIT_REQUEST_DECIDED) },
      },
      handler: async (request) => walletLimits.decide(principalOf(request), request.params.requestId, approve),
    });
  }

  app.get('/api/exchange-rates', {
    schema: { tags, security, summary: 'Current rates between the supported currencies', response: { 200: ExchangeRatesSchema, ...authedErrors(WalletsErrors.PRICES_UNAVAILABLE) } },
    handler: async () => exchangeRates.current(),
  });
};
