import { OutboundError } from '../../../shared/outbound/outbound-http.types';
import { ExecutionError } from '../domain/plugin';
import { fromOutboundError } from './outbound-error.mapper';

const signal = new AbortController().signal;

describe('fromOutboundError', () => {
  it.each([
    ['the URL', 'The call to the URL failed: Could not connect to x.example (ECONNREFUSED)'],
    ['the agent', 'The call to the agent failed: Could not connect to x.example (ECONNREFUSED)'],
  ])('names the remote side once: %s', (remote, message) => {
    const error = fromOutboundError(new OutboundError('CONNECT_FAILED', 'Could not connect to x.example (ECONNREFUSED)'), signal, remote);
    expect(error).toBeInstanceOf(ExecutionError);
    expect(error).toMatchObject({ code: 'UPSTREAM_ERROR', message });
  });

  it('says who did not answer in time', () => {
    const error = fromOutboundError(new OutboundError('TIMEOUT', 'No complete answer within 10 ms'), signal, 'the LLM endpoint');
    expect(error).toMatchObject({ code: 'AGENT_TIMEOUT', message: 'The LLM endpoint did not answer in time' });
  });
});
