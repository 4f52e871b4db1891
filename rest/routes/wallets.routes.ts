import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../app.js';
import { IdParam } from '../../src/platform/common.schemas.js';
import { pagingQuery } from '../../src/contacts/contacts.schemas.js';
import {
  DepositAddressSchema,
  ExchangeRatesSchema,
  LedgerPageSchema,
  WalletCreateSchema,
  WalletDtoSchema,
  WalletRenameQuerySchema,
  WalletTransactionDtoSchema,
  WalletTransactionsSchema,
} from '../../src/wallets/wallets.schemas.js';
import type { Currency } from '../../src/wallets/money.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { WalletsErrors } from '../../src/wallets/wallets.errors.js';

/** Wallets, their history, transfers between members, exchange rates (spec, "Wallets"; DESIGN.md, "Wallets"). */
export const walletsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { wallets, walletTransfers, exchangeRates } = services;
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
    handler: async (request) => wallets.create(principalOf(request), { currency: request.body.currency as Currency, ...(request.body.name === undefined ? {} : { name: request.body.name }) }),
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
        'Each item moves `amount` from the caller\'s wallet to the recipient\'s oldest wallet of that currency, free of charge. A refused item (`status` REFUSED with its `error`) changes nothing and does not stop the others. ' +
        'When the calling device has a biometric key, every item carries `biometric`: the signature over `BIOMETRIC_CONFIRM_V1|<nonce>|TRANSFER|<requestId>|<fromWalletId>|<toUserId>|<amount>`. ' +
        'The same requestId with the same fields answers as the first time; with other fields the item is refused with REQUEST_ID_REUSED.',
      body: WalletTransactionsSchema,
      response: { 200: z.array(WalletTransactionDtoSchema), ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request) => walletTransfers.transfer(principalOf(request), request.body),
  });

  app.get('/api/exchange-rates', {
    schema: { tags, security, summary: 'Current rates between the supported currencies', response: { 200: ExchangeRatesSchema, ...authedErrors() } },
    handler: async () => exchangeRates.current(),
  });
};
