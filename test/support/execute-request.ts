import { OutboundHttp } from '../../src/shared/outbound/outbound-http';
import { parseAllowList } from '../../src/shared/outbound/address-policy';
import { ExecuteRequest, ExecutionError, ExecutionErrorCode } from '../../src/modules/plugins/domain/plugin';
import { HttpClient } from '../../src/modules/plugins/catalog/http-client';

/** The real outbound client, allowed to reach 127.0.0.1 only (where the test servers listen). */
export function loopbackClient(): HttpClient {
  return new OutboundHttp({ allowList: parseAllowList('127.0.0.1/32') });
}

export function makeExecuteRequest(overrides: Partial<ExecuteRequest> = {}): ExecuteRequest {
  return {
    organizationId: 'org-under-test',
    pluginConfig: {},
    config: {},
    input: null,
    signal: new AbortController().signal,
    timeoutMs: 5000,
    idempotencyKey: 'exec-1:attempt-key',
    logger: { info: () => undefined, warn: () => undefined },
    ...overrides,
  };
}

/** Awaits a rejection and checks it is an ExecutionError with `code`. */
export async function failureOf(promise: Promise<unknown>, code: ExecutionErrorCode): Promise<ExecutionError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ExecutionError);
  expect(error).toMatchObject({ code });
  return error as ExecutionError;
}
