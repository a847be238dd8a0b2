import { Link } from 'react-router';
import { ApprovalForm } from '../components/ApprovalForm';
import { ErrorNote } from '../components/Layout';
import { useApprovals, useCanOperate } from '../components/session-context';

/** The approvals the signed-in user may answer, oldest first, each with its form. */
export function ApprovalsPage() {
  const canOperate = useCanOperate();
  const approvals = useApprovals();
  return (
    <section>
      <h1>Approvals waiting on me</h1>
      <ErrorNote error={approvals.error} />
      {approvals.data?.data.length === 0 && <p>Nothing waits on you.</p>}
      {approvals.data?.data.map((approval) => (
        <article className="card" key={`${approval.runId}/${approval.stepId}`} aria-label={`Approval ${approval.stepId}`}>
          <h2>
            Step <code>{approval.stepId}</code> of run{' '}
            <Link to={`/workflows/${approval.workflowId}/runs/${approval.runId}`}>{approval.runId}</Link>
          </h2>
          <p>
            Waiting since {new Date(approval.createdAt).toLocaleString()}
            {approval.timeoutAt ? `, until ${new Date(approval.timeoutAt).toLocaleString()}` : ''}
          </p>
          {canOperate ? <ApprovalForm approval={approval} /> : null}
        </article>
      ))}
    </section>
  );
}
