import type { Reconciler } from '../../src/wallets/reconciler.js';

/** Finishes ledger entries a crash interrupted and checks the wallet books (see Reconciler). */
export function reconcileProcessor(reconciler: Reconciler) {
  return async () => {
    await reconciler.run();
  };
}
