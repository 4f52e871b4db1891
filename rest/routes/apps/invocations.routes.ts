import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../route-options.js';
import { IdParam } from '../../../src/platform/common.schemas.js';
import { AppsErrors } from '../../../src/apps/apps.errors.js';
import { RoomsErrors } from '../../../src/rooms/rooms.errors.js';
import { MessagesErrors } from '../../../src/messages/messages.errors.js';
import { ContactsErrors } from '../../../src/contacts/contacts.errors.js';
import { InvocationResultSchema, InvokeSchema } from '../../../src/apps/invocations/invocations.service.js';
import { principalOf } from '../../auth.js';
import { BODY_ERRORS, authedErrors } from '../../responses.js';

/** Invoking an app from the phone, and the owner's test console (docs/apps/overview.md). */
export const appInvocationsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { appInvocations } = services;
  const tags = ['Apps'];
  const security = [{ bearerAuth: [] }];
  const appParam = z.object({ appId: IdParam });

  const invocationErrors = [
    AppsErrors.APP_NOT_FOUND,
    AppsErrors.APP_NOT_INSTALLED,
    AppsErrors.APP_CONSENT_REQUIRED,
    AppsErrors.APP_HAS_NO_MANIFEST,
    AppsErrors.APP_NOT_IN_ROOM,
    AppsErrors.INVOCATION_INVALID,
    AppsErrors.INVOCATION_VALUES_INVALID,
    AppsErrors.INVOCATION_NOT_FOUND,
    AppsErrors.INVOCATION_STEP_LIMIT,
    RoomsErrors.ROOM_NOT_FOUND,
    RoomsErrors.NOT_A_MEMBER,
    RoomsErrors.PUBLISH_NOT_ALLOWED,
    MessagesErrors.MESSAGE_NOT_FOUND,
    ContactsErrors.BLOCKED,
    ...BODY_ERRORS,
  ] as const;
  app.post('/api/apps/:appId/invocations', {
    schema: {
      tags,
      security,
      summary: 'Invoke an app: a command, a form step, or a card\'s submit button; the answer is what the phone shows',
      description:
        'The caller uses the manifest version they installed; a member who did not install the app may use it in a room its admin added it to (`roomId`), on the current version, unless it asks for their name, language or location (400 APP_CONSENT_REQUIRED: installing is the consent). The answers are checked against that manifest (400 naming the input) before anything is sent. The app\'s reply comes back as `outcome`: card (posted into the room, or private), ack, error, view (the next step of a dynamic form: answer it with this invocationId and step), or failed with the message to show. A form has at most 8 steps.',
      params: appParam,
      body: InvokeSchema,
      response: { 200: InvocationResultSchema, ...authedErrors(...invocationErrors) },
    },
    handler: async (request) => appInvocations.invoke(principalOf(request), request.params.appId, request.body, { ip: request.ip, testConsole: false }),
  });

  app.post('/api/apps/:appId/test-invocations', {
    schema: {
      tags,
      security,
      summary: 'The test console: the app\'s owner invokes it with no room (as a tester until they install it)',
      params: appParam,
      body: InvokeSchema,
      response: { 200: InvocationResultSchema, ...authedErrors(...invocationErrors) },
    },
    handler: async (request) => appInvocations.invoke(principalOf(request), request.params.appId, request.body, { ip: request.ip, testConsole: true }),
  });
};
