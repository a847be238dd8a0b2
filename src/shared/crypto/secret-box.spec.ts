import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never shows the plaintext', () => {
    const sealed = box.seal('sk-live-123', 'org:llm');
    expect(sealed).not.toContain('sk-live-123');
    expect(box.open(sealed, 'org:llm')).toBe('sk-live-123');
    expect(box.seal('sk-live-123', 'org:llm')).not.toBe(sealed);
  });

  it('refuses a ciphertext moved to another owner, tampered, or sealed with another key', () => {
    const sealed = box.seal('value', 'org-a:llm');
    expect(() => box.open(sealed, 'org-b:llm')).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => box.open(parts.join('.'), 'org-a:llm')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'org-a:llm')).toThrow();
  });

  it('requires a 32-byte key', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });
});
