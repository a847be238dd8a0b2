import { DomainError } from '../../../shared/errors/domain-error';
import { WebhookEndpoint } from './endpoint';

const endpoint = (eventTypes = ['agent.execution.*']) =>
  WebhookEndpoint.create({ organizationId: 'org', url: 'https://hooks.example.com/in', eventTypes });

describe('WebhookEndpoint', () => {
  it('wants the event types it names, or those a prefix wildcard covers', () => {
    const e = endpoint(['agent.execution.*', 'plugin.installed']);
    expect(e.wants('agent.execution.failed')).toBe(true);
    expect(e.wants('plugin.installed')).toBe(true);
    expect(e.wants('plugin.uninstalled')).toBe(false);
    expect(e.wants('workflow.run.failed')).toBe(false);
    expect(endpoint(['*']).wants('webhook.test')).toBe(true);
  });

  it('refuses no event types, and names the unknown ones', () => {
    expect(() => endpoint([])).toThrow(DomainError);
    expect(() => endpoint(['agent.execution.exploded', 'nothing.*'])).toThrow(
      'Unknown event types: agent.execution.exploded, nothing.* (see GET /api/webhook-event-types)',
    );
  });

  it('keeps the old secret signing through the grace window of a rotation, then only the new one', () => {
    const e = endpoint();
    const old = e.currentSecret;
    const now = new Date('2026-01-01T00:00:00Z');
    const fresh = e.rotateSecret(60, now);
    expect(fresh).not.toBe(old);
    expect(e.signingSecrets(new Date(now.getTime() + 59_000))).toEqual([fresh, old]);
    expect(e.signingSecrets(new Date(now.getTime() + 60_000))).toEqual([fresh]);
    e.rotateSecret(0, now);
    expect(e.signingSecrets(now)).toHaveLength(1);
  });

  it('forgets past failures when a user enables it again', () => {
    const e = WebhookEndpoint.rehydrate({
      ...endpointProps(),
      enabled: false,
      disabledReason: 'The receiver answered 410 Gone',
      failingSince: new Date(),
    });
    e.update({ enabled: true });
    expect({ enabled: e.enabled, disabledReason: e.disabledReason, failingSince: e.failingSince }).toEqual({
      enabled: true,
      disabledReason: null,
      failingSince: null,
    });
  });
});

function endpointProps() {
  const e = endpoint();
  return {
    id: e.id,
    organizationId: e.organizationId,
    url: e.url,
    description: e.description,
    eventTypes: [...e.eventTypes],
    enabled: e.enabled,
    secrets: [...e.secrets],
    disabledReason: e.disabledReason,
    failingSince: e.failingSince,
    createdAt: e.createdAt,
    updatedAt: e.updatedAt,
  };
}
