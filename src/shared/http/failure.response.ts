import { ApiProperty } from '@nestjs/swagger';

/** `error` of an execution, a run or a step: why it did not succeed. */
export class FailureResponse {
  @ApiProperty({ example: 'UPSTREAM_ERROR' }) code!: string;
  @ApiProperty() message!: string;
}
