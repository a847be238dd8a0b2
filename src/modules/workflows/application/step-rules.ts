import { Injectable } from '@nestjs/common';
import { StepKindRules } from '../domain/definition';

/**
 * The step kinds a definition is checked against. The runs module, which runs them, hands
 * them over as it starts: definitions depend on the kinds' rules, never on what runs them.
 */
@Injectable()
export class StepRules {
  private kinds: readonly StepKindRules[] = [];

  use(kinds: readonly StepKindRules[]): void {
    this.kinds = kinds;
  }

  get all(): readonly StepKindRules[] {
    if (!this.kinds.length) throw new Error('No step kinds: the runs module hands them over as it starts');
    return this.kinds;
  }
}
