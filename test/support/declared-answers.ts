import Ajv from 'ajv';
import addFormats from 'ajv-formats';

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
  text?: string;
}

type Document = {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
};

/**
 * Checks an answer against what the OpenAPI document declares for it: its media type among the
 * operation's, and a JSON body valid against the declared schema (OpenAPI 3.0's `nullable`
 * included). Answers what does not match, or null.
 */
export class DeclaredAnswers {
  private readonly ajv = new Ajv({ strict: false, allErrors: true, logger: false });

  constructor(private readonly document: Document) {
    addFormats(this.ajv);
    this.ajv.addSchema(document, 'openapi');
  }

  /** `key` is "METHOD /path" as the document names the operation. */
  mismatch(key: string, answer: Answer): string | null {
    const [method, path] = key.split(' ');
    const declared = this.document.paths[path]?.[method.toLowerCase()]?.responses[String(answer.status)];
    if (!declared) return `${key}: ${answer.status} is not a declared answer`;
    const type = answer.headers['content-type']?.split(';')[0].trim();
    const content = declared.content ?? {};
    if (!type) return Object.keys(content).length && !isEmpty(answer) ? `${key}: a body with no content type` : null;
    if (!(type in content)) return `${key}: ${type} is not among the declared ${Object.keys(content).join(', ') || '(no body)'}`;
    if (type !== 'application/json') return null;
    const pointer = ['paths', path, method.toLowerCase(), 'responses', String(answer.status), 'content', type, 'schema']
      .map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1')))
      .join('/');
    const validate = this.ajv.getSchema(`openapi#/${pointer}`);
    if (!validate) return `${key}: no schema declared for ${type}`;
    if (validate(answer.body)) return null;
    return `${key}: ${this.ajv.errorsText(validate.errors, { dataVar: 'body' })}`;
  }
}

function isEmpty(answer: Answer): boolean {
  return answer.text === undefined || answer.text === '';
}
