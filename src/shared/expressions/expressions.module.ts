import { Global, Module } from '@nestjs/common';
import { ExpressionSandbox } from './expression-sandbox';

/** The sandbox of tenant expressions, one pool of threads per process. */
@Global()
@Module({ providers: [ExpressionSandbox], exports: [ExpressionSandbox] })
export class ExpressionsModule {}
