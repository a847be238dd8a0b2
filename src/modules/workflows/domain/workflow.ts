import { randomUUID } from 'node:crypto';
import { DomainError } from '../../../shared/errors/domain-error';
import { DefinitionContext, definitionProblems, WorkflowDefinition } from './definition';

export interface WorkflowProps {
  id: string;
  organizationId: string;
  /** The current version's definition. */
  definition: WorkflowDefinition;
  version: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** A workflow: a graph of steps, versioned; each change is a new version and runs pin theirs. */
export class Workflow {
  private constructor(private props: WorkflowProps) {}

  /** Checks the definition whole and refuses it with every problem in `details`. */
  static define(input: { organizationId: string; definition: unknown; createdBy: string }, context: DefinitionContext): Workflow {
    const definition = Workflow.checked(input.definition, context);
    const now = new Date();
    return new Workflow({
      id: randomUUID(),
      organizationId: input.organizationId,
      definition,
      version: 1,
      createdBy: input.createdBy,
      createdAt: now,
      updatedAt: now,
    });
  }

  static rehydrate(props: WorkflowProps): Workflow {
    return new Workflow({ ...props });
  }

  /** A new version with this definition. */
  redefine(definition: unknown, context: DefinitionContext): void {
    this.props = {
      ...this.props,
      definition: Workflow.checked(definition, context),
      version: this.props.version + 1,
      updatedAt: new Date(),
    };
  }

  get id() {
    return this.props.id;
  }
  get organizationId() {
    return this.props.organizationId;
  }
  get name() {
    return this.props.definition.name;
  }
  get version() {
    return this.props.version;
  }
  get definition() {
    return this.props.definition;
  }

  toProps(): WorkflowProps {
    return { ...this.props };
  }

  private static checked(definition: unknown, context: DefinitionContext): WorkflowDefinition {
    const details = definitionProblems(definition, context);
    if (details.length) {
      throw new DomainError(
        'WORKFLOW_INVALID',
        `The workflow definition has ${details.length} problem${details.length > 1 ? 's' : ''}`,
        details,
      );
    }
    return definition as WorkflowDefinition;
  }
}
