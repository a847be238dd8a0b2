import { useMutation, useQueryClient } from '@tanstack/react-query';
import { unwrap, type Schemas } from '../../../clients/typescript/src/index';
import { ErrorNote } from './Layout';
import { SchemaForm } from './SchemaForm';
import { useSession } from './session-context';

/** Answers a waiting approval with a form made from its schema. */
export function ApprovalForm({ approval }: { approval: Schemas['ApprovalResponse'] }) {
  const { session } = useSession();
  const queries = useQueryClient();
  const answer = useMutation({
    mutationFn: async (data: unknown) =>
      unwrap(
        await session.client.POST('/api/workflows/{id}/runs/{runId}/steps/{stepId}/complete', {
          params: { path: { id: approval.workflowId, runId: approval.runId, stepId: approval.stepId } },
          body: { data } as Schemas['CompleteStepBody'],
        }),
      ),
    onSuccess: () => queries.invalidateQueries(),
  });
  if (answer.isSuccess) return <p role="status">Answered.</p>;
  return (
    <>
      <SchemaForm schema={approval.schema} submitLabel="Send answer" busy={answer.isPending} onSubmit={(value) => answer.mutate(value)} />
      <ErrorNote error={answer.error} />
    </>
  );
}
