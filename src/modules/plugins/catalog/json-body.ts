/** Parses a response body as JSON; `undefined` when it is empty or not JSON. */
export function parseJsonBody(body: Buffer): { value: unknown } | undefined {
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** `application/json` and the `+json` family (`application/problem+json`, ...). */
export function isJsonContentType(contentType: string | undefined): boolean {
  const mediaType = (contentType ?? '').split(';', 1)[0].trim().toLowerCase();
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** A value as a JSON request body with its content type. */
export function jsonPayload(value: unknown): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(value ?? null);
  return { body, headers: { 'content-type': 'application/json' } };
}
