/** Answers what, in an organization, still uses a resource (e.g. "agent 'triage'"). */
export type UsageCheck = (organizationId: string, id: string) => Promise<string[]>;

/**
 * Where modules that use a resource say so, without the resource's module knowing them:
 * agents register a check with the plugins' checks, workflows with the agents'. A delete is
 * refused while any check names a user.
 */
export class UsageChecks {
  private readonly checks: UsageCheck[] = [];

  register(check: UsageCheck): void {
    this.checks.push(check);
  }

  /** One check after another: inside a delete's transaction they share its one connection. */
  async usersOf(organizationId: string, id: string): Promise<string[]> {
    const users: string[] = [];
    for (const check of this.checks) users.push(...(await check(organizationId, id)));
    return users;
  }
}
