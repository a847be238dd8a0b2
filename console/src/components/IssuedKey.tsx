import { useState } from 'react';
import type { Schemas } from '../../../clients/typescript/src/index';

/**
 * A key the API has just issued (created or rotated), shown this once with a copy button: the
 * API never shows it again. `onDone` forgets it.
 */
export function IssuedKey({ issued, onDone }: { issued: Schemas['IssuedApiKeyResponse']; onDone: () => void }) {
  // Which key was copied: a key issued next starts as not copied.
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    await navigator.clipboard.writeText(issued.key).then(
      () => setCopied(issued.key),
      () => setCopied(null),
    );
  };
  return (
    <div className="card issued" role="status" aria-label="New API key">
      <p>
        The key <strong>{issued.name}</strong>, shown this once: copy it now, it cannot be shown again.
      </p>
      <code className="secret">{issued.key}</code>
      <div className="actions">
        <button type="button" onClick={copy}>
          {copied === issued.key ? 'Copied' : 'Copy key'}
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
