import { TransactionHost } from '@nestjs-cls/transactional';

/**
 * For unit specs of services with @Transactional() methods. The decorator looks up the
 * TransactionHost, which throws outside Nest until one is built; this one runs each method as
 * it is, and `isTransactionActive()` is true inside it, so a spec can tell what ran in one.
 */
export function inlineTransactions(): TransactionHost {
  const none = {};
  return new TransactionHost({
    getFallbackInstance: () => null,
    wrapWithTransaction: (_options: unknown, fn: () => Promise<unknown>, setTx: (tx: unknown) => void) => {
      setTx(none);
      return fn();
    },
  } as never);
}
