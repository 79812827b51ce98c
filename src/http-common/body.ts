/** A body that could not be read as JSON; reported as a validation error in its turn. */
export class BadBody {
  constructor(readonly reason: string) {}
}
