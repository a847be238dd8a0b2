import { createHash, randomUUID } from 'node:crypto';
import argon2 from 'argon2';
import { SecretBox } from '../../src/shared/crypto/secret-box';
import { selfSignedCertificate } from '../../src/shared/crypto/self-signed-certificate';
import { jsonHash } from '../../src/shared/json/canonical-json';
import { newKeySecret } from '../../src/modules/credentials/domain/key-secret';
import { newSigningSecret } from '../../src/shared/crypto/standard-webhooks';

/** A row as the current schema has it: column name -> value (jsonb columns as JS values). */
export type Row = Record<string, unknown>;

export interface FixtureInput {
  secretsKey: Buffer;
  /** The remote agent the http plugin's installation may send its secret to. */
  remoteUrl: string;
  /** Where the webhook endpoint delivers. */
  receiverUrl: string;
  licenseKey: string;
  idpCertificate: string;
  password: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * One installation's data in every table, written as the service writes it: secrets sealed
 * with SecretBox and the associated data each repository binds them to, token and key hashes,
 * argon2 password hashes. Each row holds every column of the current schema, with the value
 * it must have after the upgrade: a column that a pending migration adds must show that
 * migration's default here. Tables are in insertion order (foreign keys).
 */
export async function upgradeFixture(input: FixtureInput) {
  const box = new SecretBox(input.secretsKey);
  const spKey = randomUUID();
  const spPair = await selfSignedCertificate('acme SAML SP', 30);
  const now = Date.now();
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
  const ahead = (days: number) => new Date(now + days * 86_400_000).toISOString();
  const id = () => randomUUID();

  const acme = id();
  const auditEvent = id();
  const globex = id();
  const [admin, member, viewer, globexAdmin] = [id(), id(), id(), id()];
  const passwordHash = await argon2.hash(input.password, { type: argon2.argon2id, memoryCost: 1024, timeCost: 1, parallelism: 1 });
  const refreshToken = 'rt_upgrade-fixture-refresh-token-that-is-still-valid';
  const [httpInstallation, transformInstallation] = [id(), id()];
  const httpSecret = 'Bearer upgrade-fixture-remote-secret';
  const [httpAgent, upperAgent] = [id(), id()];
  const [upperExecution, failedExecution, stepExecution] = [id(), id(), id()];
  const [workflow, run] = [id(), id()];
  const [endpoint, message] = [id(), id()];
  const signingSecret = newSigningSecret();
  const [serviceAccount, serviceKeyId, personalKeyId] = [id(), id(), id()];
  const schedule = id();
  const [trigger, triggerEvent] = [id(), id()];
  const triggerToken = 'plat_hk_upgrade-fixture-trigger-token';
  const serviceKey = newKeySecret('service_account');
  const personalKey = newKeySecret('personal');
  const user = { id: admin, type: 'user' };
  const upperDefinition = {
    name: 'shout',
    description: 'Upper-cases the text',
    steps: [{ id: 'upper', agent: upperAgent, input: 'input' }],
  };
  const oidcClientSecret = 'acme-oidc-client-secret';
  const oidcSettings = {
    issuer: 'https://login.acme.test',
    clientId: 'platform',
    scopes: 'openid email profile',
    claims: { email: 'email', name: 'name', groups: 'groups' },
    roleMappings: [{ value: 'platform-admins', role: 'admin' }],
    defaultRole: 'viewer',
    allowedRedirects: ['https://app.acme.test/'],
    enabled: true,
  };
  const samlSettings = {
    idpEntityId: 'https://idp.acme.test/entity',
    idpSsoUrl: 'https://idp.acme.test/sso',
    idpCertificates: [input.idpCertificate],
    attributes: { email: 'email', firstName: 'firstName', lastName: 'lastName', groups: 'groups' },
    roleMappings: [{ group: 'platform-admins', role: 'admin' }],
    defaultRole: 'viewer',
    wantResponseSigned: false,
    allowedRedirects: ['https://app.acme.test/'],
    enabled: true,
    enforced: false,
  };

  const tables: Array<[string, Row[]]> = [
    [
      'organizations',
      [
        {
          id: acme,
          slug: 'acme',
          name: 'Acme Corp',
          tier: 'enterprise',
          rate_limit_per_minute: 1200,
          seat_quota: 25,
          history_retention_days: null,
          created_at: at(9000),
        },
        {
          id: globex,
          slug: 'globex',
          name: 'Globex',
          tier: 'starter',
          rate_limit_per_minute: null,
          seat_quota: null,
          history_retention_days: null,
          created_at: at(8000),
        },
      ],
    ],
    [
      'users',
      [
        [admin, acme, 'ada@acme.test', 'admin', false, true, 'Ada', 'Lovelace', 0],
        [member, acme, 'max@acme.test', 'member', false, false, 'Max', null, 3],
        [viewer, acme, 'vic@acme.test', 'viewer', true, false, null, null, 1],
        [globexAdmin, globex, 'hank@globex.test', 'admin', false, false, 'Hank', 'Scorpio', 0],
      ].map(([uid, org, email, role, disabled, isOperator, first, last, credentials], i) => ({
        id: uid,
        organization_id: org,
        email,
        password_hash: passwordHash,
        role,
        disabled,
        is_operator: isOperator,
        first_name: first,
        last_name: last,
        credentials_version: credentials,
        keys_version: 0,
        created_at: at(7000 - i),
        updated_at: at(100 + i),
      })),
    ],
    [
      'refresh_tokens',
      [
        { used: null, revoked: null, hash: sha256(refreshToken) },
        { used: at(300), revoked: null, hash: sha256('rt_used') },
        { used: null, revoked: at(200), hash: sha256('rt_revoked') },
      ].map((token, i) => ({
        id: id(),
        user_id: admin,
        organization_id: acme,
        family_id: id(),
        credentials_version: 0,
        token_hash: token.hash,
        via: null,
        expires_at: ahead(20),
        used_at: token.used,
        revoked_at: token.revoked,
        created_at: at(400 - i),
      })),
    ],
    [
      'plugin_installations',
      [
        {
          id: httpInstallation,
          organization_id: acme,
          slug: 'http',
          version: '1.0.0',
          config: { origins: [input.remoteUrl] },
          sealed_secrets: box.seal(JSON.stringify({ authorization: httpSecret }), `${acme}:http`),
          installed_by: admin,
          created_at: at(6000),
          updated_at: at(5000),
        },
        {
          id: transformInstallation,
          organization_id: acme,
          slug: 'transform',
          version: '1.0.0',
          config: {},
          sealed_secrets: null,
          installed_by: admin,
          created_at: at(5900),
          updated_at: at(5900),
        },
      ],
    ],
    [
      'agents',
      [
        {
          id: httpAgent,
          organization_id: acme,
          name: 'Echo',
          description: 'The remote echo agent',
          kind: 'http.agent',
          plugin_slug: 'http',
          config: { url: `${input.remoteUrl}/echo` },
          input_schema: null,
          timeout_ms: 10000,
          max_attempts: 1,
          // Not served at /api/mcp: agents from before it stay unexposed.
          mcp: null,
          created_by: admin,
          created_at: at(4000),
          updated_at: at(4000),
        },
        {
          id: upperAgent,
          organization_id: acme,
          name: 'Upper',
          description: 'Shouts',
          kind: 'transform.jsonata',
          plugin_slug: 'transform',
          config: { expression: '$uppercase(text)' },
          input_schema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
          timeout_ms: 30000,
          max_attempts: 3,
          mcp: null,
          created_by: admin,
          created_at: at(3900),
          updated_at: at(3800),
        },
      ],
    ],
    [
      'agent_executions',
      [
        { id: upperExecution, agent_id: upperAgent, status: 'succeeded', input: { text: 'hi' }, output: 'HI', error: null, by: user },
        {
          id: failedExecution,
          agent_id: httpAgent,
          status: 'failed',
          input: { ping: 1 },
          output: null,
          error: { code: 'UPSTREAM_ERROR', message: 'Agent answered 500' },
          by: { type: 'api_key', id: serviceKeyId },
        },
        {
          id: stepExecution,
          agent_id: upperAgent,
          status: 'succeeded',
          input: { text: 'yo' },
          output: 'YO',
          error: null,
          by: { type: 'workflow_run', id: run },
        },
      ].map(({ by, ...execution }, i) => ({
        ...execution,
        organization_id: acme,
        attempts: 1,
        job_id: id(),
        triggered_by: by,
        // Executions from before retries neither retry nor were retried.
        retry_of: null,
        retried_by: null,
        created_at: at(300 - i * 10),
        started_at: at(299 - i * 10),
        finished_at: at(298 - i * 10),
      })),
    ],
    [
      'idempotency_keys',
      [
        {
          organization_id: acme,
          scope: `agent:${upperAgent}`,
          key: 'order-1001',
          request_hash: jsonHash({ input: { text: 'hi' } }),
          resource_id: upperExecution,
          created_at: at(300),
          expires_at: ahead(1),
        },
      ],
    ],
    [
      'workflows',
      [
        {
          id: workflow,
          organization_id: acme,
          name: 'shout',
          version: 2,
          created_by: admin,
          created_at: at(2000),
          updated_at: at(1000),
          deleted_at: null,
        },
      ],
    ],
    [
      'workflow_versions',
      [
        { id: id(), workflow_id: workflow, version: 1, definition: upperDefinition, created_by: admin, created_at: at(2000) },
        {
          id: id(),
          workflow_id: workflow,
          version: 2,
          definition: { ...upperDefinition, output: "{ 'shouted': steps.upper.output }", timeoutMs: 60000 },
          created_by: admin,
          created_at: at(1000),
        },
      ],
    ],
    [
      'workflow_runs',
      [
        {
          id: run,
          organization_id: acme,
          workflow_id: workflow,
          workflow_version: 1,
          status: 'succeeded',
          input: { text: 'yo' },
          output: { upper: 'YO' },
          error: null,
          attempts: 1,
          job_id: id(),
          timeout_ms: 3600000,
          triggered_by: user,
          // Runs from before child runs: started by no parent, at the top.
          parent_run_id: null,
          depth: 0,
          // Runs from before retries neither retry nor were retried.
          retry_of: null,
          retried_by: null,
          // Runs from before concurrency: no key, holding no place and waiting for none.
          concurrency_key: null,
          concurrency_limit: null,
          waits_for_place: false,
          created_at: at(281),
          started_at: at(280),
          finished_at: at(277),
        },
      ],
    ],
    [
      'workflow_run_steps',
      [
        {
          run_id: run,
          step_id: 'upper',
          position: 0,
          status: 'succeeded',
          attempts: 1,
          input: { text: 'yo' },
          output: 'YO',
          error: null,
          execution_id: stepExecution,
          // Steps from before waits, skip reasons and child runs have none of them.
          resume_at: null,
          reason: null,
          child_run_id: null,
          waiting_for: null,
          started_at: at(280),
          finished_at: at(278),
        },
      ],
    ],
    // A map step's item (a table the upgrade creates: written only where the schema has it).
    [
      'workflow_run_items',
      [
        {
          run_id: run,
          step_id: 'upper',
          index: 0,
          status: 'succeeded',
          attempts: 1,
          output: 'YO',
          error: null,
          execution_id: null,
          resume_at: null,
          started_at: at(279),
          finished_at: at(278),
        },
      ],
    ],
    // A wait step's wait and an event kept for one (tables the upgrade creates).
    [
      'workflow_run_waits',
      [
        {
          run_id: run,
          step_id: 'upper',
          organization_id: acme,
          workflow_id: workflow,
          kind: 'approval',
          event_name: null,
          event_key: null,
          schema: { type: 'object' },
          approvers: { roles: ['admin'] },
          self_approval: false,
          status: 'answered',
          answer: { data: { ok: true }, by: { type: 'user', id: admin, email: 'ada@acme.test' }, at: at(279) },
          created_at: at(280),
          timeout_at: null,
        },
      ],
    ],
    [
      'workflow_events',
      [
        {
          id: id(),
          organization_id: acme,
          name: 'payment.settled',
          key: 'order-1001',
          data: { amount: 42 },
          by: { type: 'event', name: 'payment.settled' },
          created_at: at(100),
          expires_at: ahead(1),
        },
      ],
    ],
    // A tool-calling execution's journal: a turn that called a tool, and the call (a table the upgrade creates).
    [
      'agent_execution_steps',
      [
        {
          execution_id: upperExecution,
          turn: 1,
          position: 0,
          organization_id: acme,
          call_id: null,
          name: 'served-model',
          body: {
            reply: {
              content: null,
              toolCalls: [{ id: 'call_1', name: 'shout', arguments: '{"text":"hi"}' }],
              usage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
              model: 'served-model',
              finishReason: 'tool_calls',
            },
            repair: null,
          },
          result: null,
          started_at: at(3700),
          finished_at: at(3699),
        },
        {
          execution_id: upperExecution,
          turn: 1,
          position: 1,
          organization_id: acme,
          call_id: 'call_1',
          name: 'shout',
          body: { arguments: { text: 'hi' } },
          result: { status: 'succeeded', output: 'HI' },
          started_at: at(3699),
          finished_at: at(3698),
        },
      ],
    ],
    ['installation_license', [{ id: 1, key: input.licenseKey, installed_by: admin, installed_at: at(9500) }]],
    // When the installation first started in trial mode (TRIAL=true); without TRIAL it changes nothing.
    ['installation_trial', [{ id: 1, started_at: at(9600) }]],
    ['saml_settings', [{ organization_id: acme, settings: samlSettings, updated_at: at(600) }]],
    ['saml_requests', [{ id: `_${'a'.repeat(40)}`, organization_id: acme, expires_at: at(50), used_at: null }]],
    // `via` came with OIDC sign-in (the codes from before are SAML's); family_id with SAML sessions (older codes start no named session).
    [
      'saml_login_codes',
      [{ code_hash: sha256('expired-code'), user_id: member, organization_id: acme, via: 'saml', family_id: null, expires_at: at(60) }],
    ],
    [
      'saml_sp_keys',
      [
        {
          id: spKey,
          organization_id: acme,
          certificate: spPair.certificate,
          private_key: box.seal(spPair.privateKey, `saml_sp_key:${spKey}`),
          created_at: at(700),
          retire_at: null,
        },
      ],
    ],
    [
      'oidc_settings',
      [
        {
          organization_id: acme,
          settings: oidcSettings,
          sealed_client_secret: box.seal(oidcClientSecret, `oidc:${acme}`),
          updated_at: at(590),
        },
      ],
    ],
    [
      'oidc_identities',
      [{ organization_id: acme, issuer: oidcSettings.issuer, subject: 'acme-subject-1', user_id: admin, linked_at: at(595) }],
    ],
    [
      'saml_sessions',
      [
        {
          family_id: id(),
          organization_id: acme,
          user_id: member,
          name_id: 'member@acme.test',
          name_id_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
          session_index: '_session-1',
          created_at: at(40),
          expires_at: at(-600),
        },
      ],
    ],
    ['saml_assertions', [{ organization_id: acme, id: `_${'b'.repeat(40)}`, expires_at: at(-5) }]],
    [
      'oidc_logins',
      [
        {
          state_hash: sha256('a-pending-state'),
          organization_id: acme,
          nonce: 'a-nonce',
          code_verifier: 'a-code-verifier-of-at-least-forty-three-characters-long',
          redirect: 'https://app.acme.test/after',
          expires_at: at(-5),
          used_at: null,
        },
      ],
    ],
    [
      'webhook_endpoints',
      [
        {
          id: endpoint,
          organization_id: acme,
          url: input.receiverUrl,
          description: 'Ops hook',
          event_types: ['agent.execution.*', 'webhook.test'],
          enabled: true,
          sealed_secrets: box.seal(JSON.stringify([{ secret: signingSecret, expiresAt: null }]), `webhook:${endpoint}`),
          disabled_reason: null,
          failing_since: null,
          created_at: at(3000),
          updated_at: at(3000),
        },
      ],
    ],
    [
      'webhook_messages',
      [
        {
          id: message,
          organization_id: acme,
          endpoint_id: endpoint,
          type: 'agent.execution.succeeded',
          payload: JSON.stringify({ type: 'agent.execution.succeeded', timestamp: at(298), data: { id: upperExecution } }),
          status: 'succeeded',
          attempts: 1,
          job_id: id(),
          error: null,
          next_attempt_at: null,
          created_at: at(298),
          finished_at: at(297),
        },
      ],
    ],
    [
      'webhook_attempts',
      [{ id: id(), message_id: message, attempted_at: at(297), status_code: 204, latency_ms: 12, response_body: '', error: null }],
    ],
    [
      'service_accounts',
      [
        {
          id: serviceAccount,
          organization_id: acme,
          name: 'ci-bot',
          role: 'member',
          disabled: false,
          created_at: at(2500),
          updated_at: at(2500),
        },
      ],
    ],
    [
      'api_keys',
      [
        {
          id: serviceKeyId,
          owner_type: 'service_account',
          owner_id: serviceAccount,
          name: 'deploys',
          scopes: ['agents:read', 'agents:execute'],
          secret: serviceKey,
        },
        { id: personalKeyId, owner_type: 'user', owner_id: admin, name: 'laptop', scopes: null, secret: personalKey },
      ].map(({ secret, ...key }, i) => ({
        ...key,
        organization_id: acme,
        display_prefix: secret.displayPrefix,
        hash: secret.hash,
        previous_hash: null,
        previous_expires_at: null,
        owner_version: 0,
        created_at: at(2400 - i),
        expires_at: ahead(60),
        last_used_at: at(10),
        revoked_at: null,
      })),
    ],
    [
      'api_key_events',
      [
        { id: 1, key_id: serviceKeyId, organization_id: acme, type: 'created', actor: user, at: at(2400) },
        { id: 2, key_id: personalKeyId, organization_id: acme, type: 'created', actor: user, at: at(2399) },
      ],
    ],
    ['api_key_policies', [{ organization_id: acme, max_lifetime_days: 90 }]],
    [
      'workflow_schedules',
      [
        {
          id: schedule,
          organization_id: acme,
          workflow_id: workflow,
          cron: '30 2 * * *',
          timezone: 'Europe/Berlin',
          input: { n: 5 },
          overlap: 'skip',
          catch_up: 'latest',
          enabled: false,
          next_fire_at: null,
          last_fired_at: at(1000),
          last_run_id: run,
          created_at: at(2000),
          updated_at: at(1000),
        },
      ],
    ],
    [
      'workflow_schedule_occurrences',
      [{ id: 1, schedule_id: schedule, organization_id: acme, scheduled_for: at(1000), outcome: 'started', run_id: run, at: at(1000) }],
    ],
    [
      'workflow_triggers',
      [
        {
          id: trigger,
          organization_id: acme,
          workflow_id: workflow,
          name: 'from the CRM',
          scheme: 'bearer',
          signature_header: null,
          signature_encoding: null,
          signature_prefix: null,
          sealed_secrets: box.seal(JSON.stringify([{ secret: triggerToken, expiresAt: null }]), `trigger:${trigger}`),
          mapping: '{ "n": body.count }',
          dedupe: 'idempotency-key',
          dedupe_header: null,
          response_mode: 'async',
          wait_seconds: 30,
          workflow_version: null,
          enabled: true,
          created_at: at(900),
          updated_at: at(900),
        },
      ],
    ],
    [
      'workflow_trigger_events',
      [
        {
          id: triggerEvent,
          trigger_id: trigger,
          organization_id: acme,
          created_at: at(800),
          source: '192.0.2.10',
          status: 'started',
          run_id: run,
          dedupe_key: 'crm-delivery-1',
          error: null,
          replay_of: null,
          headers: { 'content-type': 'application/json', 'idempotency-key': 'crm-delivery-1' },
          query: {},
          body: { count: 5 },
        },
      ],
    ],
    [
      'audit_events',
      [
        {
          id: auditEvent,
          organization_id: acme,
          occurred_at: at(700),
          actor: { type: 'user', id: admin, name: 'admin@acme.test', ip: '192.0.2.20', userAgent: 'curl/8', via: 'password' },
          actor_id: admin,
          action: 'agent.updated',
          target: { type: 'agent', id: upperAgent, name: 'upper' },
          target_id: upperAgent,
          outcome: 'success',
          request_id: 'req-upgrade-1',
          changes: { before: { description: '' }, after: { description: 'Upper-cases text' } },
          sequence: 1,
          previous_hash: '0'.repeat(64),
          hash: 'a'.repeat(64),
        },
      ],
    ],
    [
      'audit_inbox',
      [
        {
          id: id(),
          organization_id: acme,
          occurred_at: at(600),
          actor: { type: 'user', id: admin, name: 'admin@acme.test', ip: '192.0.2.20', userAgent: 'curl/8', via: 'password' },
          actor_id: admin,
          action: 'agent.deleted',
          target: { type: 'agent', id: upperAgent, name: 'upper' },
          target_id: upperAgent,
          outcome: 'success',
          request_id: 'req-upgrade-2',
          changes: null,
        },
      ],
    ],
    // keyed_from: the upgrade keys a chain begun before the key from the event after its last one.
    [
      'audit_chain_heads',
      [
        {
          organization_id: globex,
          sequence: 1,
          hash: 'f'.repeat(64),
          purged_through: 0,
          purged_hash: null,
          keyed_from: 2,
          keyed_mac: null,
        },
      ],
    ],
    ['audit_settings', [{ organization_id: acme, retention_days: 365, updated_at: at(500) }]],
  ];

  return {
    tables,
    ids: {
      acme,
      globex,
      admin,
      member,
      httpAgent,
      upperAgent,
      upperExecution,
      failedExecution,
      workflow,
      run,
      endpoint,
      message,
      schedule,
      trigger,
      triggerEvent,
      auditEvent,
      spKey,
    },
    secrets: { refreshToken, httpSecret, signingSecret, triggerToken, serviceKey: serviceKey.key, personalKey: personalKey.key },
    samlSettings,
    oidcSettings,
  };
}

export type UpgradeFixture = Awaited<ReturnType<typeof upgradeFixture>>;
