import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { ExecutionError } from '../domain/plugin';
import { abortError } from './abort-error';

/**
 * Maps a failed outbound call to what the execution reports. `remote` names the other side in
 * messages, lower case with its article ("the agent", "the LLM endpoint", "the URL"): "The
 * agent did not answer in time", "The call to the URL failed: ...". Errors that are not
 * OutboundErrors (bugs) pass through.
 */
export function fromOutboundError(error: unknown, signal: AbortSignal, remote: string): unknown {
  if (error instanceof ExecutionError) return error;
  if (!(error instanceof OutboundError)) return error;
  switch (error.code) {
    case 'TIMEOUT':
      return new ExecutionError('AGENT_TIMEOUT', `${remote.charAt(0).toUpperCase()}${remote.slice(1)} did not answer in time`);
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
      return new ExecutionError('UPSTREAM_ERROR', `The call to ${remote} failed: ${error.message}`);
  }
}
