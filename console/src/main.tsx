import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router';
import { Layout } from './components/Layout';
import { SessionProvider, useSession } from './components/session-context';
import { ApiKeysPage } from './pages/ApiKeysPage';
import { ApprovalsPage } from './pages/ApprovalsPage';
import { AgentsPage, AuditPage, ExecutionsPage, PluginsPage, UsersPage, WebhookPage, WebhooksPage } from './pages/ListPages';
import { NewWorkflowPage } from './pages/DefinitionPages';
import { RunPage } from './pages/RunPage';
import { RunLookupPage, RunsPage } from './pages/RunsPage';
import { ServiceAccountPage, ServiceAccountsPage } from './pages/ServiceAccountsPage';
import { SignInPage, SsoLandingPage } from './pages/SignInPage';
import { TriggerPage } from './pages/TriggerPage';
import { SubscriptionPage, WorkflowPage, WorkflowsPage } from './pages/WorkflowsPages';
import { Session } from './session';
import './styles.css';

const queries = new QueryClient({
  defaultOptions: {
    // An error answer is shown, not retried: the envelope says why it failed.
    queries: { retry: false, refetchOnWindowFocus: true, staleTime: 2000 },
  },
});

function SignedIn({ children }: { children: React.ReactNode }) {
  const { session } = useSession();
  if (!session.signedIn)
    return (
      <Navigate
        to={`/sign-in?next=${encodeURIComponent(window.location.pathname.replace(/^\/console/, '') + window.location.search)}`}
        replace
      />
    );
  return <Layout>{children}</Layout>;
}

function App() {
  return (
    <Routes>
      <Route path="/sign-in" element={<SignInPage />} />
      <Route path="/sso" element={<SsoLandingPage />} />
      {(
        [
          ['/runs', <RunsPage />],
          ['/runs/:runId', <RunLookupPage />],
          ['/executions', <ExecutionsPage />],
          ['/workflows', <WorkflowsPage />],
          ['/workflows/new', <NewWorkflowPage />],
          ['/workflows/:id', <WorkflowPage />],
          ['/workflows/:workflowId/runs/:runId', <RunPage />],
          ['/workflows/:id/triggers/:tid', <TriggerPage />],
          ['/agents', <AgentsPage />],
          ['/approvals', <ApprovalsPage />],
          ['/plugins', <PluginsPage />],
          ['/webhooks', <WebhooksPage />],
          ['/webhooks/:id', <WebhookPage />],
          ['/api-keys', <ApiKeysPage />],
          ['/service-accounts', <ServiceAccountsPage />],
          ['/service-accounts/:id', <ServiceAccountPage />],
          ['/users', <UsersPage />],
          ['/audit', <AuditPage />],
          ['/subscription', <SubscriptionPage />],
        ] as const
      ).map(([path, page]) => (
        <Route key={path} path={path} element={<SignedIn>{page}</SignedIn>} />
      ))}
      <Route path="*" element={<Navigate to="/runs" replace />} />
    </Routes>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <SessionProvider session={new Session()}>
      <QueryClientProvider client={queries}>
        <BrowserRouter basename="/console">
          <App />
        </BrowserRouter>
      </QueryClientProvider>
    </SessionProvider>
  </StrictMode>,
);
