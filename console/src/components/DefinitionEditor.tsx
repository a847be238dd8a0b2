import { json } from '@codemirror/lang-json';
import { HighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { EditorState, StateEffect } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { tags } from '@lezer/highlight';
import { basicSetup } from 'codemirror';
import { useEffect, useMemo, useRef, useState } from 'react';
import { definitionValidator, parseDefinition, placeServerProblems, type PlacedProblem } from '../model/definition-problems';

/** Dispatched when what the text is checked against changed (the schema arrived, a save was refused): check it again. */
const recheck = StateEffect.define<null>();

/**
 * The page's style nonce (the service puts a new one in each page it serves): CodeMirror adds
 * its styles as style elements, which the content security policy allows with this nonce only.
 */
const STYLE_NONCE = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce ?? '';

/** JSON's colors from the console's palette, so they keep their contrast in light and dark. */
const JSON_COLORS = HighlightStyle.define([
  { tag: tags.propertyName, color: 'var(--accent)' },
  { tag: tags.string, color: 'var(--ok)' },
  { tag: [tags.number, tags.bool, tags.null], color: 'var(--wait)' },
]);

export interface ServerProblem {
  path?: string;
  message: string;
}

/**
 * A workflow definition as JSON text: checked as it is typed against the definition's JSON
 * Schema (from the API), with the server's problems of the last save placed where they are
 * (until the text is edited again).
 * Every problem is marked in the text and listed below it; a problem in the list moves the
 * cursor to it. Loaded on its own (CodeMirror is most of its weight), only where it is shown.
 */
export default function DefinitionEditor({
  initial,
  schema,
  serverProblems,
  readOnly,
  onChange,
}: {
  initial: string;
  schema: object | undefined;
  serverProblems: ServerProblem[];
  readOnly: boolean;
  /** The text, and the value when it parses and passes the schema (null otherwise). */
  onChange: (text: string, valid: unknown) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const validate = useMemo(() => (schema ? definitionValidator(schema) : null), [schema]);
  const latest = useRef({ validate, serverProblems, onChange });
  latest.current = { validate, serverProblems, onChange };
  const [problems, setProblems] = useState<PlacedProblem[]>([]);
  /** The text the server's problems are of: the text as it was when they arrived. */
  const serverFor = useRef<string | null>(null);

  useEffect(() => {
    const check = (text: string): PlacedProblem[] => {
      const parsed = parseDefinition(text);
      const found = [
        ...parsed.problems,
        ...(parsed.value !== undefined && latest.current.validate ? latest.current.validate(parsed.value, parsed.root) : []),
      ];
      latest.current.onChange(text, found.length === 0 && parsed.value !== undefined ? parsed.value : null);
      // The server's problems are of the text it was sent: an edit since makes them stale.
      const server = text === serverFor.current ? placeServerProblems(latest.current.serverProblems, parsed.root) : [];
      const all = [...found, ...server];
      setProblems(all);
      return all;
    };
    const editor = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: initial,
        extensions: [
          EditorView.cspNonce.of(STYLE_NONCE),
          basicSetup,
          json(),
          syntaxHighlighting(JSON_COLORS, { fallback: false }),
          lintGutter(),
          linter(
            (v): Diagnostic[] =>
              check(v.state.doc.toString()).map((p) => ({
                from: Math.min(p.from, v.state.doc.length),
                to: Math.min(p.to, v.state.doc.length),
                severity: 'error',
                source: p.source,
                message: p.path ? `${p.path}: ${p.message}` : p.message,
              })),
            { delay: 300, needsRefresh: (update) => update.transactions.some((tr) => tr.effects.some((e) => e.is(recheck))) },
          ),
          EditorState.readOnly.of(readOnly),
          EditorView.contentAttributes.of({ 'aria-label': 'Workflow definition (JSON)' }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // The editor is made once per text it starts from; later props reach it through `latest`.
  }, [initial, readOnly]);

  useEffect(() => {
    if (!view.current) return;
    serverFor.current = view.current.state.doc.toString();
    view.current.dispatch({ effects: recheck.of(null) });
  }, [serverProblems, validate]);

  const reveal = (p: PlacedProblem) => {
    const editor = view.current;
    if (!editor) return;
    const at = Math.min(p.from, editor.state.doc.length);
    editor.dispatch({ selection: { anchor: at }, effects: EditorView.scrollIntoView(at, { y: 'center' }) });
    editor.focus();
  };

  return (
    <div className="definition-editor">
      <div ref={host} className="editor-host" />
      <div aria-live="polite">
        {problems.length === 0 ? (
          <p className="ok">No problems found{schema ? '' : ' (the schema is loading)'}.</p>
        ) : (
          <ul className="problems" aria-label="Problems">
            {problems.map((p, i) => (
              <li key={`${p.source}-${p.path}-${i}`}>
                <button type="button" className="link" onClick={() => reveal(p)}>
                  <span className={`problem-source problem-${p.source}`}>{p.source === 'server' ? 'server' : p.source}</span>{' '}
                  <code>{p.path || '(definition)'}</code> {p.message}
                </button>
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
