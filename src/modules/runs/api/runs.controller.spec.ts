import { describeListRoute } from '../../../../test/support/controller-harness';
import { RunsService } from '../application/runs.service';
import { RunsController } from './runs.controller';

/** GET /api/runs on its own; what it lists, and for whom, is in test/cross-lists.e2e-spec.ts. */
describeListRoute({
  controller: RunsController,
  service: RunsService,
  method: 'list',
  path: '/api/runs',
  filter: 'workflowId',
  scope: 'workflows:read',
  otherScope: 'agents:read',
});
