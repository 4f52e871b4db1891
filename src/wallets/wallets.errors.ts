import { defineErrors } from '../platform/errors.js';

export const WalletsErrors = defineErrors('wallets', {
  WALLET_NOT_FOUND: { status: 400, message: 'No such wallet' },
  WALLET_NAME_INVALID: { status: 400, message: 'A wallet name has 1 to 50 characters besides surrounding spaces' },
  WALLET_LIMIT_REACHED: { status: 400, message: 'An account holds at most 20 wallets' },
  AMOUNT_INVALID: { status: 400, message: 'The amount is not a positive decimal with at most as many fraction digits as the currency has' },
  INSUFFICIENT_FUNDS: { status: 400, message: 'The wallet\'s available balance is too low' },
  RECIPIENT_HAS_NO_WALLET: { status: 400, message: 'The recipient has no wallet in this currency' },
  TRANSFER_TO_SELF: { status: 400, message: 'Send to another member; move between your own wallets with a swap' },
  REQUEST_ID_REUSED: { status: 400, message: 'This requestId was used with other fields' },
});
