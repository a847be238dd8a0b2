import { LoggerService } from '@nestjs/common';

/** Nest's contexts that log one line per controller and route at every start (~130 lines). */
const ROUTE_MAPPING_CONTEXTS = new Set(['RoutesResolver', 'RouterExplorer']);

/**
 * The application logger with Nest's route mappings at debug instead of info, so a start's
 * log shows what matters (the generated admin password of a first start, warnings) at
 * LOG_LEVEL=info. LOG_LEVEL=debug shows them again.
 */
export function routeMappingsAtDebug(logger: LoggerService): LoggerService {
  return new Proxy(logger, {
    get(target, property, receiver) {
      if (property !== 'log') return Reflect.get(target, property, receiver) as unknown;
      return (message: unknown, ...optionalParams: unknown[]) => {
        const context = optionalParams[optionalParams.length - 1];
        if (typeof context === 'string' && ROUTE_MAPPING_CONTEXTS.has(context) && target.debug) {
          target.debug(message, ...optionalParams);
        } else {
          target.log(message, ...optionalParams);
        }
      };
    },
  });
}
