import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { ExecutionError } from '../domain/plugin';
import { abortError } from './abort-error';

/**
 * Maps a failed outbound call to what the execution reports. `subject` names the remote side
 * in messages ("Agent", "LLM endpoint"). Errors that are not OutboundErrors (bugs) pass through.
 */
export function fromOutboundError(error: unknown, signal: AbortSignal, subject: string): unknown {
  if (error instanceof ExecutionError) return error;
  if (!(error instanceof OutboundError)) return error;
  switch (error.code) {
    case 'TIMEOUT':
      return new ExecutionError('AGENT_TIMEOUT', `${subject} did not answer in time`);
    case 'ABORTED':
      return signal.aborted ? abortError(signal) : new ExecutionError('CANCELED', 'The execution was canceled');
    case 'ADDRESS_NOT_ALLOWED':
    case 'SCHEME_NOT_ALLOWED':
    case 'URL_INVALID':
      return new ExecutionError('OUTBOUND_REFUSED', error.message);
    case 'DNS_FAILED':
    case 'CONNECT_FAILED':
    case 'RESPONSE_TOO_LARGE':
    case 'TOO_MANY_REDIRECTS':
      return new ExecutionError('UPSTREAM_ERROR', `${subject} request failed: ${error.message}`);
  }
}
