import type { FastifyReply } from 'fastify';
import type { AfterAnswer } from '../src/platform/after-answer.js';

/**
 * Work handed to it runs once this reply is over: sent, or its connection gone ('close' comes in
 * both cases), on the turn after, so it never holds the answer up.
 */
export function afterAnswerOf(reply: FastifyReply): AfterAnswer {
  return (task) => {
    if (reply.raw.closed) setImmediate(task);
    else reply.raw.once('close', () => setImmediate(task));
  };
}
