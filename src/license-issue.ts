import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { generateLicenseKeyPair, issueLicense } from './modules/licensing/application/license-issuer';
import { Tier, TIERS } from './modules/licensing/domain/tiers';

/**
 * The vendor's license tool (not part of the service):
 *
 *   npm run license:issue -- --tier team --seats 50 --days 365 --key vendor.pem [--customer "Acme"] [--features a,b] [--max-rate 5000]
 *   npm run license:issue -- --new-key vendor.pem      # writes a key pair; prints LICENSE_PUBLIC_KEYS
 *
 * Prints the license key on stdout.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tier: { type: 'string' },
      seats: { type: 'string' },
      days: { type: 'string' },
      key: { type: 'string' },
      customer: { type: 'string', default: 'customer' },
      features: { type: 'string' },
      'max-rate': { type: 'string' },
      'new-key': { type: 'string' },
    },
  });
  if (values['new-key']) {
    const pair = generateLicenseKeyPair();
    writeFileSync(values['new-key'], pair.privateKeyPem, { mode: 0o600 });
    process.stdout.write(`${pair.publicKeyBase64}\n`);
    return;
  }
  if (!values.tier || !values.seats || !values.days || !values.key) {
    throw new Error(`usage: license:issue --tier <${TIERS.join('|')}> --seats <n> --days <n> --key <private key PEM file>`);
  }
  const license = await issueLicense(
    {
      customer: values.customer,
      tier: values.tier as Tier,
      seats: Number(values.seats),
      days: Number(values.days),
      features: values.features?.split(',').filter(Boolean),
      maxRateLimitPerMinute: values['max-rate'] ? Number(values['max-rate']) : undefined,
    },
    readFileSync(values.key, 'utf8'),
  );
  process.stdout.write(`${license}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
