import type { DepositsService } from '../../src/wallets/deposits.service.js';
import type { SwapsService } from '../../src/wallets/swaps.service.js';
import type { PaymentRequestsService } from '../../src/wallets/payment-requests.service.js';

/** Reads new confirmed blocks and credits deposits, each once (see DepositsService.scan). */
export function depositScanProcessor(deposits: DepositsService) {
  return async () => deposits.scan();
}

/** Credits pending swaps the house can now fill (see SwapsService.fillPending). */
export function swapFillProcessor(swaps: SwapsService) {
  return async () => swaps.fillPending();
}

/** Expires payment requests and settles items a crash left being paid (see PaymentRequestsService.sweep). */
export function paymentRequestSweepProcessor(paymentRequests: PaymentRequestsService) {
  return async () => paymentRequests.sweep();
}
