/** The migrations this process ran at boot (none when another instance had run them): a one-time step may hang on one. */
export class AppliedMigrations {
  constructor(readonly names: readonly string[]) {}

  ranThisBoot(name: string): boolean {
    return this.names.includes(name);
  }
}
