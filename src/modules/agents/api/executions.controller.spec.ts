import { describeListRoute } from '../../../../test/support/controller-harness';
import { ExecutionsService } from '../application/executions.service';
import { ExecutionsController } from './executions.controller';

/** GET /api/executions on its own; what it lists, and for whom, is in test/cross-lists.e2e-spec.ts. */
describeListRoute({
  controller: ExecutionsController,
  service: ExecutionsService,
  method: 'list',
  path: '/api/executions',
  filter: 'agentId',
  scope: 'agents:read',
  otherScope: 'workflows:read',
});
