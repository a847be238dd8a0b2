import { ERROR_CATALOG, errorCatalogMarkdown } from './error-catalog';

describe('error catalog', () => {
  it('uses UPPER_SNAKE codes with an error status each', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOG)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
  });

  it('renders every code into the published table', () => {
    const table = errorCatalogMarkdown();
    for (const code of Object.keys(ERROR_CATALOG)) expect(table).toContain(`\`${code}\``);
  });
});
