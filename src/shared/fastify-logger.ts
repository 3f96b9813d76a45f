import type { FastifyBaseLogger } from 'fastify';
import type { Logger } from 'pino';

/** A pino logger as fastify's base logger type, so an instance is typed FastifyInstance with its default logger. */
export function fastifyLogger(log: Logger): FastifyBaseLogger {
  return log;
}
