import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebSession } from '../../src/auth/index.js';
import type { RouteOptions } from '../route-options.js';
import type { Html } from './html.js';
import type { Frame } from './layout.js';

export const COOKIE_NAME = '__Host-console';

/** What each console page module receives. */
export interface ConsoleContext extends RouteOptions {
  frame: (request: FastifyRequest) => Promise<Frame>;
  /** The signed-in session, or a redirect to sign in (thrown). */
  session: (request: FastifyRequest) => WebSession;
  /** Sends a whole page. */
  send: (reply: FastifyReply, request: FastifyRequest, title: string, body: Html | Html[], status?: number) => Promise<FastifyReply>;
  /** The session's cookie value (for what is shown once). */
  cookie: (request: FastifyRequest) => string;
}

/** Thrown to answer with a redirect (to sign in, or after a form: post, redirect, get). */
export class Redirect extends Error {
  constructor(readonly location: string) {
    super(`redirect to ${location}`);
  }
}

