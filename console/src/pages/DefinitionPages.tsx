import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { PlatformError, unwrap, type Schemas } from '../../../clients/typescript/src/index';
import { ErrorNote } from '../components/Layout';
import { useIsAdmin, useSession } from '../components/session-context';
import type { ServerProblem } from '../components/DefinitionEditor';

const DefinitionEditor = lazy(() => import('../components/DefinitionEditor'));

/** The fields of a workflow that make its definition (what POST and PUT take). */
const DEFINITION_FIELDS = [
  'name',
  'description',
  'inputSchema',
  'steps',
  'output',
  'timeoutMs',
  'onFailure',
  'concurrency',
  'mcp',
] as const;

const STARTER = {
  name: 'New workflow',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  steps: [{ id: 'first', action: 'transform.jsonata', with: { expression: '$uppercase(input.text)' } }],
  output: 'steps.first.output',
};

/** The definition's JSON Schema, from the API (it knows the step kinds this service runs). */
function useDefinitionSchema() {
  const { session } = useSession();
  return useQuery({
    queryKey: ['definition-schema'],
    staleTime: Infinity,
    queryFn: async () => unwrap(await session.client.GET('/api/workflows/definition-schema')) as object,
  });
}

/** A save refused for the definition: its details, to place in the text; any other error is shown as it is. */
function refusedProblems(error: unknown): ServerProblem[] {
  return error instanceof PlatformError && error.code === 'WORKFLOW_INVALID' ? (error.details ?? []) : [];
}

/** The definition editor with its save button: the button is enabled once the text parses and passes the schema. */
function DefinitionForm({
  initial,
  readOnly,
  saveLabel,
  save,
}: {
  initial: string;
  readOnly: boolean;
  saveLabel: string;
  save: { mutate: (value: unknown) => void; isPending: boolean; error: unknown };
}) {
  const schema = useDefinitionSchema();
  const [valid, setValid] = useState<unknown>(null);
  // One list per refusal: the editor takes a new list as new problems of the text it holds.
  const problems = useMemo(() => refusedProblems(save.error), [save.error]);
  return (
    <div className="card">
      <ErrorNote error={schema.error} />
      <Suspense fallback={<p role="status">Loading the editor…</p>}>
        <DefinitionEditor
          initial={initial}
          schema={schema.data}
          serverProblems={problems}
          readOnly={readOnly}
          onChange={(_text, value) => setValid(value)}
        />
      </Suspense>
      {!problems.length && <ErrorNote error={save.error} />}
      {!readOnly && (
        <div className="actions">
          <button type="button" disabled={valid === null || save.isPending} onClick={() => save.mutate(valid)}>
            {saveLabel}
          </button>
        </div>
      )}
    </div>
  );
}

/** A workflow's definition: admins edit it and save a new version; others read it. */
export function DefinitionSection({ workflow }: { workflow: Schemas['WorkflowResponse'] }) {
  const { session } = useSession();
  const queries = useQueryClient();
  const admin = useIsAdmin();
  const definition = Object.fromEntries(
    DEFINITION_FIELDS.filter((field) => workflow[field] !== null && workflow[field] !== undefined).map((f) => [f, workflow[f]]),
  );
  const save = useMutation({
    mutationFn: async (body: unknown) =>
      unwrap(await session.client.PUT('/api/workflows/{id}', { params: { path: { id: workflow.id } }, body: body as never })),
    onSuccess: (saved) => {
      queries.setQueryData(['workflow', workflow.id], saved);
      void queries.invalidateQueries({ queryKey: ['versions', workflow.id] });
    },
  });
  return (
    <>
      <h2>Definition</h2>
      {save.isSuccess && <p role="status">Saved as version {save.data.version}.</p>}
      <DefinitionForm
        key={workflow.version}
        initial={JSON.stringify(definition, null, 2)}
        readOnly={!admin}
        saveLabel="Save as a new version"
        save={save}
      />
    </>
  );
}

/** A new workflow from a definition written in the editor (admins). */
export function NewWorkflowPage() {
  const { session } = useSession();
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: async (body: unknown) => unwrap(await session.client.POST('/api/workflows', { body: body as never })),
    onSuccess: (created) => navigate(`/workflows/${created.id}`),
  });
  return (
    <section>
      <h1>New workflow</h1>
      <DefinitionForm initial={JSON.stringify(STARTER, null, 2)} readOnly={false} saveLabel="Create workflow" save={create} />
    </section>
  );
}
