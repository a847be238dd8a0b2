import { useId, useMemo, useState } from 'react';
import { formFields, formValue } from '../model/schema-form';

/** A form made from a JSON Schema; `onSubmit` gets the value once every field is well formed. */
export function SchemaForm({
  schema,
  submitLabel,
  onSubmit,
  busy,
}: {
  schema: unknown;
  submitLabel: string;
  onSubmit: (value: unknown) => void;
  busy?: boolean;
}) {
  const fields = useMemo(() => formFields(schema), [schema]);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [problems, setProblems] = useState<Record<string, string>>({});
  const id = useId();
  const submit = (event: React.FormEvent) => {
    event.preventDefault();
    const result = formValue(fields, texts);
    setProblems(result.problems);
    if (!Object.keys(result.problems).length) onSubmit(result.value);
  };
  const text = (name: string, initial: string) => texts[name] ?? initial;
  const setText = (name: string, value: string) => setTexts((current) => ({ ...current, [name]: value }));
  return (
    <form className="schema-form" onSubmit={submit} noValidate>
      {fields.map((field) => {
        const inputId = `${id}-${field.name || 'value'}`;
        const problemId = `${inputId}-problem`;
        const described = problems[field.name] ? { 'aria-invalid': true, 'aria-describedby': problemId } : {};
        return (
          <div className="field" key={field.name}>
            <label htmlFor={inputId}>
              {field.label}
              {field.required ? ' (required)' : ''}
            </label>
            {field.description && <small>{field.description}</small>}
            {field.kind === 'boolean' ? (
              <input
                id={inputId}
                type="checkbox"
                checked={text(field.name, field.initial) === 'true'}
                onChange={(event) => setText(field.name, event.target.checked ? 'true' : '')}
                {...described}
              />
            ) : field.kind === 'choice' ? (
              <select
                id={inputId}
                value={text(field.name, field.initial)}
                onChange={(event) => setText(field.name, event.target.value)}
                {...described}
              >
                <option value="">—</option>
                {field.options!.map((option) => (
                  <option key={String(option)} value={String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            ) : field.kind === 'json' ? (
              <textarea
                id={inputId}
                rows={4}
                value={text(field.name, field.initial)}
                onChange={(event) => setText(field.name, event.target.value)}
                {...described}
              />
            ) : (
              <input
                id={inputId}
                type={field.kind === 'text' ? 'text' : 'number'}
                step={field.kind === 'integer' ? 1 : 'any'}
                value={text(field.name, field.initial)}
                onChange={(event) => setText(field.name, event.target.value)}
                {...described}
              />
            )}
            {problems[field.name] && (
              <span id={problemId} className="problem">
                {problems[field.name]}
              </span>
            )}
          </div>
        );
      })}
      <button type="submit" disabled={busy}>
        {submitLabel}
      </button>
    </form>
  );
}
