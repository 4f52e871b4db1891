import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { Clock } from '../../platform/clock.js';
import type { GeoLocator } from '../../platform/geoip.js';
import type { Principal } from '../../platform/principal.js';
import type { RoomsPolicy } from '../../rooms/index.js';
import type { UserReads } from '../../users/index.js';
import { AppsErrors } from '../apps.errors.js';
import type { InvocationDoc, InvocationsRepo } from './invocations.repo.js';
import type { AppsRepo } from '../apps.repo.js';
import { CardSchema, ReplySchema, ViewSchema, fillTemplate, firstProblem, type Card, type Reply, type View } from '../shared/cards.js';
import { compilePattern } from '../shared/patterns.js';
import type { InstallsService } from './installs.service.js';
import type { Manifest } from '../shared/manifest.js';
import type { CallFailure, WebhooksService } from '../delivery/webhooks.service.js';
import { AppPaymentDtoSchema, type AppPaymentsService } from '../payments/payments.service.js';
import { must } from '../../platform/must.js';
import { parseManifest } from '../shared/manifest.js';
import { cleanText } from '../../messages/index.js';
import { CommonErrors } from '../../platform/common.errors.js';
import { FOLLOW_UP_TTL_MS, FOLLOW_UP_USES, type FollowUpTarget, type FollowUpTokens } from './follow-ups.js';
import { COMMAND_TEXT_DEFAULT } from '../apps.schemas.js';

export const SEALED_ALG = 'x25519-hkdf-sha256-aes256gcm/v1';
export const MAX_STEPS = 8;
const MAX_PAYLOAD_BYTES = 4096;
const Decl = z.string().min(1).max(64);

export const InvokeSchema = z
  .object({
    roomId: z.string().min(1).max(64).optional().describe('The room the member invokes from (the app must have been added to it)'),
    command: Decl.optional().describe('A command of the manifest'),
    flow: Decl.optional().describe('A flow an open_flow button started'),
    action: z.object({ messageId: z.string().min(1).max(64), id: Decl }).strict().optional().describe('A submit button of a card message: the message and the button id'),
    invocationId: z.string().min(1).max(64).optional().describe('The invocation a dynamic flow\'s next step belongs to'),
    step: Decl.optional().describe('In a dynamic flow: the view the answers come from'),
    values: z.record(z.string(), z.unknown()).optional().describe('Answers by input id'),
    sealed: z.object({ alg: z.literal(SEALED_ALG), value: z.string().min(1).max(200_000) }).strict().optional().describe('Sealed answers, when the manifest has a sealing key'),
    payload: z.record(z.string(), z.unknown()).optional().describe('With flow: the open_flow button\'s payload (at most 4 KB)'),
    text: z.string().max(20_000).optional().describe('With a command that declares an argument: the text after it (`/weather Berlin` → "Berlin"); its options go in `values`'),
  })
  .strict()
  .meta({ id: 'AppInvocationRequest' });
export type InvokeInput = z.infer<typeof InvokeSchema>;

export const InvocationResultSchema = z
  .object({
    invocationId: z.string(),
    outcome: z.enum(['card', 'ack', 'error', 'view', 'payment', 'deferred', 'failed']),
    card: CardSchema.nullable().describe('outcome card: the card'),
    visibility: z.enum(['room', 'private']).nullable().describe('outcome card: posted into the room (messageId), or shown to the caller only'),
    messageId: z.string().nullable(),
    message: z.string().nullable().describe('outcome ack: the notice; outcome deferred: what to show while the app works (its answer comes later: a card into the room, or the device event app.follow-up); outcome failed: what the member is told'),
    userMessage: z.string().nullable().describe('outcome error: the app\'s message, shown as is'),
    view: ViewSchema.nullable().describe('outcome view: the next step of the form; answer it with this invocationId and step = view.id'),
    payment: AppPaymentDtoSchema.nullable().describe('outcome payment: the payment sheet; answer it with POST /api/app-payments/{id}/confirm or /decline'),
  })
  .meta({ id: 'AppInvocationResult' });
export type InvocationResult = z.infer<typeof InvocationResultSchema>;

type Input = Manifest['flows'][number]['views'][number]['inputs'][number];
type Flow = Manifest['flows'][number];

/**
 * A command's free text (`/weather Berlin`): only for a command that declares an argument, cleaned as
 * a post is, within the argument's maxLength, present when required; null when none came.
 */
function commandText(input: InvokeInput, command: Manifest['commands'][number] | null): string | null {
  if (input.text === undefined) {
    if (command?.argument?.required) throw AppsErrors.INVOCATION_VALUES_INVALID({ message: `text: required (${command.argument.label})`, details: [{ input: 'text', message: 'required' }] });
    return null;
  }
  if (!command?.argument) throw invalid('This command takes no text');
  const text = cleanText(input.text);
  const maxLength = command.argument.maxLength ?? COMMAND_TEXT_DEFAULT;
  const problem = text.length === 0 && command.argument.required ? 'required' : text.length > maxLength ? `at most ${maxLength} characters` : null;
  if (problem) throw AppsErrors.INVOCATION_VALUES_INVALID({ message: `text: ${problem}`, details: [{ input: 'text', message: problem }] });
  return text.length === 0 ? null : text;
}

/** How long forms and finished deliveries are kept: the activity's 30 days. */
const RETENTION_MS = 30 * 86_400_000;

/** The longest text answer any input takes (its maxLength may only lower it). */
export const TEXT_ANSWER_MAX = 10_000;

/** Checks answers against the inputs' declarations: known ids, required ones present, types and rules. Problems by input. */
export function checkValues(inputs: Input[], values: Record<string, unknown>): { input: string; message: string }[] {
  const problems: { input: string; message: string }[] = [];
  const declared = new Map(inputs.map((input) => [input.id, input]));
  for (const key of Object.keys(values)) if (!declared.has(key)) problems.push({ input: key, message: 'not an input of this form' });
  for (const input of inputs) {
    const value = values[input.id];
    const rules = input.rules ?? {};
    if (value === undefined || value === null || value === '') {
      if (input.required) problems.push({ input: input.id, message: 'required' });
      continue;
    }
    const fail = (message: string) => problems.push({ input: input.id, message });
    switch (input.type) {
      case 'text':
        if (typeof value !== 'string') fail('expected text');
        else {
          // Lengths first: a pattern only ever sees an answer of an allowed length.
          const maxLength = Math.min(rules.maxLength ?? TEXT_ANSWER_MAX, TEXT_ANSWER_MAX);
          if (rules.minLength !== undefined && value.length < rules.minLength) fail(`at least ${rules.minLength} characters`);
          else if (value.length > maxLength) fail(`at most ${maxLength} characters`);
          else if (rules.pattern !== undefined && !compilePattern(rules.pattern)?.test(value)) fail('does not match the pattern');
        }
        break;
      case 'number':
        if (typeof value !== 'number' || !Number.isFinite(value)) fail('expected a number');
        else {
          if (rules.min !== undefined && value < rules.min) fail(`at least ${rules.min}`);
          if (rules.max !== undefined && value > rules.max) fail(`at most ${rules.max}`);
        }
        break;
      case 'select':
        if (typeof value !== 'string' || !(rules.options ?? []).some((option) => option.value === value)) fail('not one of the options');
        break;
      case 'date':
        if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) fail('expected a date (YYYY-MM-DD)');
        break;
      case 'boolean':
        if (typeof value !== 'boolean') fail('expected true or false');
        break;
    }
  }
  return problems;
}

/** How a view an app returns breaks its flow, or null when it keeps to it: declared there, the same inputs with the same rules (title, texts and defaults may change). */
function viewBreach(view: View, flow: Flow): string | null {
  const declared = flow.views.find((v) => v.id === view.id);
  if (!declared) return `view.id: ${view.id} is not a view of flow ${flow.id}`;
  const inputs = view.blocks.filter((block): block is Extract<View['blocks'][number], { type: 'input' }> => block.type === 'input');
  if (inputs.length !== declared.inputs.length) return `view.blocks: ${inputs.length} inputs where the manifest declares ${declared.inputs.length}`;
  for (const block of inputs) {
    const input = declared.inputs.find((i) => i.id === block.id);
    if (!input) return `view.blocks: input ${block.id} is not declared in view ${view.id}`;
    if (block.rules !== undefined && !isDeepStrictEqual(block.rules, input.rules ?? {})) return `view.blocks: the rules of input ${block.id} differ from the manifest's`;
  }
  return null;
}

// The app did not answer (or was not called: its breaker is open, spec "Webhook failures" 3). An app
// that answered with a 5xx or a redirect did answer: its reply could not be shown.
const NOT_ANSWERING: CallFailure[] = ['TIMEOUT', 'CONNECTION_FAILED', 'ADDRESS_REFUSED', 'BREAKER_OPEN'];

/** What the member is told when a call brings no reply to show (spec, "Webhook failures"). */
function failedMessage(failure: CallFailure): string {
  if (failure === 'TOO_MANY_CONCURRENT') return 'The app is busy; try again in a moment';
  if (NOT_ANSWERING.includes(failure)) return 'The app is not answering';
  return 'The app\'s reply could not be shown';
}

const empty = { card: null, visibility: null, messageId: null, message: null, userMessage: null, view: null, payment: null } as const;

/**
 * A member's phone invoking an app (docs/apps/overview.md): a command, a form step, or a card's
 * submit button. The answers are checked against the manifest version the member has before anything
 * is sent; the app gets exactly the spec's invocation body, signed; its reply is checked against its
 * bounds and the flow (a breach is a contract failure) and turned into what the phone shows. Calls go
 * straight from the api process (the member is waiting), through the same breaker and in-flight limit
 * as every other call.
 */
export class InvocationsService {
  constructor(
    private readonly invocations: InvocationsRepo,
    private readonly deps: {
      repo: AppsRepo;
      payments: Pick<AppPaymentsService, 'open' | 'present'>;
      installs: InstallsService;
      webhooks: WebhooksService;
      rooms: RoomsPolicy;
      users: UserReads;
      geo: GeoLocator;
      postCard: (roomId: string, appId: string, card: Card) => Promise<{ id: string }>;
      findCardMessage: (principal: Principal, messageId: string) => Promise<{ roomId: string; appId: string | null; card: Card | null }>;
      /** Deferred answers: the tokens of follow-up URLs, where they point, how many times one was used (counted). */
      followUps: { tokens: FollowUpTokens; baseUrl: string; countUse: (invocationId: string, ttlMs: number) => Promise<number> };
      /** A follow-up answer that is not a card for the room goes to the member's devices (`app.follow-up`). */
      tellMember: (userId: string, payload: { appId: string; invocationId: string; outcome: 'card' | 'ack' | 'error'; card: Card | null; message: string | null; userMessage: string | null }) => Promise<void>;
      /** Replaces the card of one of the app's messages; false when it is gone. */
      updateCard: (messageId: string, appId: string, card: Card) => Promise<boolean>;
      /** How long a form waits for its next step. */
      formTtlMs: number;
      clock: Clock;
    },
  ) {}

  /** Removes forms not moved on for 30 days (they expired long before); how many. */
  deleteOldForms(now: Date): Promise<number> {
    return this.invocations.deleteUntouchedSince(new Date(now.getTime() - RETENTION_MS));
  }

  /**
   * One invocation, in named steps: who calls (the install and its manifest), from where (the room),
   * what (a command, a flow or a card action, or the next step of a form), the answers checked, the
   * body built and signed, the reply checked against the contract, the form moved on, and the reply
   * turned into what the phone shows.
   */
  async invoke(principal: Principal, appId: string, input: InvokeInput, context: { ip: string; testConsole: boolean }): Promise<InvocationResult> {
    const { app, caller, manifestDoc, manifest } = await this.callerOf(principal, appId, context.testConsole, input.roomId);
    const room = await this.roomOf(principal, appId, input, context.testConsole);
    const target = await this.targetOf(principal, appId, input, manifest);
    const step = this.checkAnswers(input, manifest, target);
    // A command's own call (not a form it opened, nor a button): only it takes text.
    const text = commandText(input, target.doc === null && target.flow === null ? target.command : null);
    if (input.payload && (!target.flowId || Buffer.byteLength(JSON.stringify(input.payload)) > MAX_PAYLOAD_BYTES)) throw invalid(`A payload comes with a flow, at most ${MAX_PAYLOAD_BYTES} bytes`);
    const contract = contractOf(manifest, target.flow, target.doc?.steps ?? 0, target.action !== null);
    const invocationId = target.doc?._id ?? randomUUID();
    const now = this.deps.clock();
    const body = {
      type: 'invocation',
      id: invocationId,
      ts: Math.floor(now.getTime() / 1000),
      app: { id: appId, version: caller.manifestVersion, manifestHash: manifestDoc.hash },
      command: target.flowId === null ? target.commandId : null,
      flow: target.flowId,
      step,
      values: manifest.sealing ? null : target.action ? {} : (input.values ?? {}),
      sealed: input.sealed ?? null,
      payload: target.payload,
      action: target.action,
      // Beyond the specification's body: a command's free text (null when it takes none, or none came),
      // and where to answer later when the app needs longer than its reply time (reply `deferred`).
      text,
      followUp: this.followUpOf({ appId, invocationId, userId: principal.userId, roomId: room?._id ?? null, expiresAt: now.getTime() + FOLLOW_UP_TTL_MS }),
      user: await this.userOf(principal, caller.appUserId, contract.scopes, context.ip),
      conversation: room ? { roomType: room.type, ...(contract.scopes.has('conversation.ref') ? { ref: room._id } : {}) } : null,
    };
    const { activity, reply } = await this.deps.webhooks.call(app, 'invocation', body, { contractBreach: contract.breach });
    const outcome = must(activity, 'the invocation\'s activity row');
    // The reply kept the contract (contractBreach parsed it) when the call is OK.
    const answer = outcome.outcome === 'OK' ? ReplySchema.parse(reply) : null;
    await this.moveForm(target, answer, { invocationId, appId, userId: principal.userId, roomId: room?._id ?? null, manifestVersion: caller.manifestVersion, now });
    // Cast: a failed call's activity row records one of the CallFailure kinds.
    if (!answer) return { invocationId, outcome: 'failed', ...empty, message: failedMessage(outcome.failure as CallFailure) };
    return this.shown(answer, contract, { invocationId, appId, roomId: room?._id ?? null, userId: principal.userId, appUserId: caller.appUserId, activityId: outcome._id, pressedMessageId: target.action?.messageId ?? null, testMode: app.testMode === true });
  }

  /** Where the app answers this invocation later: a URL of the payments interface's host, its token inside. */
  private followUpOf(target: FollowUpTarget): { url: string; expiresAt: number } {
    const { tokens, baseUrl } = this.deps.followUps;
    return { url: `${baseUrl}/app-api/v1/follow-ups/${tokens.make(target)}`, expiresAt: Math.floor(target.expiresAt / 1000) };
  }

  /**
   * The app's later answer to an invocation it deferred, through the invocation's follow-up URL (up
   * to FOLLOW_UP_USES answers within FOLLOW_UP_TTL_MS): a card into the room the member invoked from,
   * or a private card, an ack or an error to the member's devices (`app.follow-up`). The reply is checked
   * as an invocation's is (a card's bounds, a template of the app's current manifest).
   */
  async followUp(token: string, reply: unknown): Promise<{ outcome: 'card' | 'ack' | 'error'; messageId: string | null }> {
    const target = this.deps.followUps.tokens.read(token, this.deps.clock().getTime());
    if (!target) throw AppsErrors.FOLLOW_UP_INVALID();
    const app = await this.deps.repo.findApp(target.appId);
    const manifestDoc = app?.manifestVersion ? await this.deps.repo.findManifest(app._id, app.manifestVersion) : null;
    if (!app || !manifestDoc) throw AppsErrors.FOLLOW_UP_INVALID();
    const contract = contractOf(parseManifest(JSON.parse(manifestDoc.manifest)), null, 0, false);
    const breach = contract.breach(reply);
    const answer = breach === null ? ReplySchema.parse(reply) : null;
    if (!answer || (answer.type !== 'card' && answer.type !== 'ack' && answer.type !== 'error')) {
      throw CommonErrors.VALIDATION_FAILED({ message: `A follow-up answers with a card, an ack or an error${breach ? `: ${breach}` : ''}` });
    }
    if ((await this.deps.followUps.countUse(target.invocationId, target.expiresAt - this.deps.clock().getTime())) > FOLLOW_UP_USES) throw AppsErrors.FOLLOW_UP_USED_UP();
    const tell = (payload: { outcome: 'card' | 'ack' | 'error'; card: Card | null; message: string | null; userMessage: string | null }) =>
      this.deps.tellMember(target.userId, { appId: target.appId, invocationId: target.invocationId, ...payload });
    if (answer.type === 'card') {
      const card = must(contract.cardOf(answer), 'the card the contract check found');
      if (answer.visibility !== 'private' && target.roomId) {
        // The room's card only while the app is still in the room.
        if (!(await this.deps.repo.isInRoom(target.roomId, target.appId))) throw AppsErrors.FOLLOW_UP_INVALID({ message: 'The app is no longer in the room it was invoked from' });
        const posted = await this.deps.postCard(target.roomId, target.appId, card);
        return { outcome: 'card', messageId: posted.id };
      }
      await tell({ outcome: 'card', card, message: null, userMessage: null });
      return { outcome: 'card', messageId: null };
    }
    if (answer.type === 'ack') await tell({ outcome: 'ack', card: null, message: answer.message, userMessage: null });
    else await tell({ outcome: 'error', card: null, message: null, userMessage: answer.userMessage });
    return { outcome: answer.type, messageId: null };
  }

  /** The app, the member's install of it (or the owner testing) and the manifest version they use. */
  private async callerOf(principal: Principal, appId: string, testConsole: boolean, roomId: string | undefined) {
    const app = await this.deps.repo.findApp(appId);
    if (!app || (testConsole && app.ownerId !== principal.userId)) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    // A member who did not install the app may use it in a room its admin added it to.
    const caller = await this.deps.installs.caller(app, principal.userId, testConsole ? undefined : roomId);
    if (!caller) throw AppsErrors.APP_NOT_INSTALLED();
    const manifestDoc = await this.deps.repo.findManifest(appId, caller.manifestVersion);
    if (!manifestDoc) throw AppsErrors.APP_HAS_NO_MANIFEST();
    const manifest = parseManifest(JSON.parse(manifestDoc.manifest));
    // What tells the app who the member is needs their consent, given once by installing.
    const personal = manifest.scopes.filter((scope) => scope.startsWith('user.'));
    if (caller.viaRoom && personal.length > 0) throw AppsErrors.APP_CONSENT_REQUIRED({ details: [{ scopes: personal }] });
    return { app, caller, manifestDoc, manifest };
  }

  /** Where: a room the member may post in and the app was added to; none from the test console. */
  private async roomOf(principal: Principal, appId: string, input: InvokeInput, testConsole: boolean) {
    if (testConsole && input.roomId) throw invalid('The test console calls with no room');
    if (!input.roomId) return null;
    const room = await this.deps.rooms.mayPost(principal, input.roomId);
    if (!(await this.deps.repo.isInRoom(input.roomId, appId))) throw AppsErrors.APP_NOT_IN_ROOM();
    return room;
  }

  /** What: a new invocation (exactly one of command, flow, action), or the next step of a form under way. */
  private async targetOf(principal: Principal, appId: string, input: InvokeInput, manifest: Manifest): Promise<Target> {
    let doc: InvocationDoc | null = null;
    if (input.invocationId) {
      doc = await this.invocations.findOfMember(input.invocationId, appId, principal.userId);
      // A form waits APPS_FORM_TTL for its next step; after that it is gone, as if never begun.
      if (!doc || doc.expectedView === null || this.deps.clock().getTime() - doc.updatedAt.getTime() > this.deps.formTtlMs) throw AppsErrors.INVOCATION_NOT_FOUND();
      if (doc.steps >= MAX_STEPS) throw AppsErrors.INVOCATION_STEP_LIMIT();
      if ((doc.roomId ?? undefined) !== input.roomId) throw invalid('The next step comes from the same room');
    } else if ([input.command, input.flow, input.action].filter((v) => v !== undefined).length !== 1) {
      throw invalid('Send exactly one of command, flow and action');
    }
    const commandId = doc ? doc.command : (input.command ?? null);
    const flowId = doc ? doc.flow : (input.flow ?? null);
    const command = commandId === null ? null : manifest.commands.find((c) => c.id === commandId);
    if (command === undefined) throw invalid(`The manifest (version ${manifest.version}) has no command ${commandId}`);
    const flowName = flowId ?? command?.flow ?? null;
    const flow = flowName === null ? null : manifest.flows.find((f) => f.id === flowName);
    if (flow === undefined) throw invalid(`The manifest has no flow ${flowName}`);
    const action = input.action && !doc ? await this.actionOf(principal, appId, input) : null;
    return { doc, commandId, command: command ?? null, flowId, flow, action, payload: doc ? doc.payload : (input.payload ?? null) };
  }

  /** A card's submit button, tapped: it must be on a card this app posted. */
  private async actionOf(principal: Principal, appId: string, input: InvokeInput): Promise<{ id: string; payload: Record<string, unknown>; messageId: string }> {
    const tapped = must(input.action, 'the tapped button');
    const message = await this.deps.findCardMessage(principal, tapped.messageId);
    const button = message.appId === appId ? message.card?.blocks.flatMap((b) => (b.type === 'actions' ? b.buttons : [])).find((b) => b.id === tapped.id && b.kind === 'submit') : undefined;
    if (!button) throw invalid('No such submit button on a card of this app');
    // A tap comes from the room the card is in: the app is told that room, and no other.
    if (input.roomId !== message.roomId) throw invalid('A card\'s button is tapped in the card\'s room');
    if (input.values || input.sealed) throw invalid('A card action carries no answers');
    // The message the button is on: the app may answer by updating that card.
    return { id: button.id, payload: button.payload ?? {}, messageId: tapped.messageId };
  }

  /** The answers: which inputs this call answers, then the values checked, or sealed answers forwarded unread. The step answered. */
  private checkAnswers(input: InvokeInput, manifest: Manifest, target: Target): string | null {
    const { flow, doc } = target;
    let inputs: Input[] = [];
    let step: string | null = null;
    if (flow) {
      if (flow.mode === 'static') inputs = flow.views.flatMap((v) => v.inputs);
      else {
        step = input.step ?? null;
        const expected = doc ? doc.expectedView : must(flow.views[0], 'a flow\'s first view').id;
        if (step !== expected) throw invalid(`This step answers the view ${expected}`);
        inputs = must(flow.views.find((v) => v.id === step), `the view ${step}`).inputs;
      }
    } else if (input.step !== undefined) throw invalid('Only a dynamic flow has steps');
    // A command without a form: its options, if it declares any, are its answers.
    else if (target.command && !target.action) inputs = target.command.options ?? [];
    if (manifest.sealing) {
      if (input.values !== undefined) throw invalid('This app takes sealed answers: send sealed, not values');
      if (inputs.length > 0 && !input.sealed) throw invalid('Seal the answers with the app\'s sealing key');
    } else {
      if (input.sealed) throw invalid('This app has no sealing key: send values');
      const problems = checkValues(inputs, input.values ?? {});
      if (problems.length > 0) throw AppsErrors.INVOCATION_VALUES_INVALID({ message: problems.map((p) => `${p.input}: ${p.message}`).join('; '), details: problems });
    }
    return step;
  }

  /** Who: the per-app id always; name, language and location only under their scopes. */
  private async userOf(principal: Principal, appUserId: string, scopes: Set<string>, ip: string): Promise<Record<string, unknown>> {
    const user: Record<string, unknown> = { id: appUserId };
    if (scopes.has('user.name') || scopes.has('user.language')) {
      const profile = await this.deps.users.findById(principal.userId);
      if (scopes.has('user.name')) user.name = profile?.displayName ?? null;
      if (scopes.has('user.language')) user.language = profile?.language ?? null;
    }
    if (scopes.has('user.location')) user.location = this.deps.geo.locate(ip);
    return user;
  }

  /** A form moves on with a view (recorded under the invocation's id), and ends with anything else. */
  private async moveForm(target: Target, reply: Reply | null, form: { invocationId: string; appId: string; userId: string; roomId: string | null; manifestVersion: string; now: Date }): Promise<void> {
    // A step that failed (no reply in time, a broken contract) or that the app answered with an error
    // leaves the form where it was: the member may answer that step again.
    if (target.doc && (reply === null || reply.type === 'error')) return;
    const nextView = reply?.type === 'view' ? reply.view.id : null;
    if (target.doc) await this.invocations.step(target.doc._id, nextView, form.now);
    else if (nextView) {
      const { invocationId, appId, userId, roomId, manifestVersion, now } = form;
      await this.invocations.insert({ _id: invocationId, appId, userId, roomId, command: target.commandId, flow: target.flowId, payload: target.payload, manifestVersion, steps: 1, expectedView: nextView, createdAt: now, updatedAt: now });
    }
  }

  /** What the phone shows for a reply that kept the contract. */
  private async shown(answer: Reply, contract: Contract, call: { invocationId: string; appId: string; roomId: string | null; userId: string; appUserId: string; activityId: string; pressedMessageId: string | null; testMode: boolean }): Promise<InvocationResult> {
    const { invocationId } = call;
    switch (answer.type) {
      case 'card': {
        const card = must(contract.cardOf(answer), 'the card the contract check found');
        // The card whose button was pressed, replaced (the contract allows update only then).
        if (answer.update && call.pressedMessageId) {
          const updated = await this.deps.updateCard(call.pressedMessageId, call.appId, card);
          if (!updated) return { invocationId, outcome: 'failed', ...empty, message: 'The card was deleted meanwhile' };
          return { invocationId, outcome: 'card', ...empty, card, visibility: 'room', messageId: call.pressedMessageId };
        }
        if (answer.visibility !== 'private' && call.roomId) {
          const posted = await this.deps.postCard(call.roomId, call.appId, card);
          return { invocationId, outcome: 'card', ...empty, card, visibility: 'room', messageId: posted.id };
        }
        return { invocationId, outcome: 'card', ...empty, card, visibility: 'private' };
      }
      case 'ack':
        return { invocationId, outcome: 'ack', ...empty, message: answer.message };
      case 'deferred':
        return { invocationId, outcome: 'deferred', ...empty, message: answer.message ?? 'Working on it…' };
      case 'error':
        // The code is for the app's logs: kept on the activity row, not shown.
        if (answer.code) await this.deps.repo.setAppErrorCode(call.activityId, answer.code);
        return { invocationId, outcome: 'error', ...empty, userMessage: answer.userMessage };
      case 'view':
        return { invocationId, outcome: 'view', ...empty, view: answer.view };
      case 'payment': {
        const opening = await this.deps.payments.open({ appId: call.appId, userId: call.userId, appUserId: call.appUserId, invocationId, test: call.testMode, payment: answer.payment });
        if ('refused' in opening) {
          // The member is told it failed; the app's activity row says so, and why.
          await this.deps.repo.setRefused(call.activityId, 'PAYMENT_REFUSED', opening.refused);
          return { invocationId, outcome: 'failed', ...empty, message: failedMessage('CONTRACT') };
        }
        // A test payment's row says so, as its events' rows do.
        if (call.testMode) await this.deps.repo.markTest(call.activityId);
        return { invocationId, outcome: 'payment', ...empty, payment: this.deps.payments.present(opening.opened) };
      }
    }
  }
}

/** What an invocation is about: a form under way, or the command, flow or card action it starts. */
interface Target {
  doc: InvocationDoc | null;
  commandId: string | null;
  /** The manifest's command (null for a flow a button opened, or a button press). */
  command: Manifest['commands'][number] | null;
  flowId: string | null;
  flow: Flow | null;
  action: { id: string; payload: Record<string, unknown>; messageId: string } | null;
  payload: Record<string, unknown> | null;
}

/** What a reply must keep to: a card (inline, or a template the manifest has), a view of the flow, a payment under its scope. */
interface Contract {
  scopes: Set<string>;
  cardOf(answer: Extract<Reply, { type: 'card' }>): Card | null;
  /** What in a reply breaks the contract, or null when it keeps it. */
  breach(reply: unknown): string | null;
}

function contractOf(manifest: Manifest, flow: Flow | null, stepsTaken: number, pressed: boolean): Contract {
  const scopes = new Set<string>(manifest.scopes);
  const cardOf = (answer: Extract<Reply, { type: 'card' }>): Card | null => {
    if (answer.card) return answer.card;
    const template = manifest.templates?.find((t) => t.id === answer.template);
    return template ? fillTemplate(template.card, answer.data ?? {}) : null;
  };
  const breach = (reply: unknown): string | null => {
    const parsed = ReplySchema.safeParse(reply);
    if (!parsed.success) return firstProblem(parsed.error);
    const answer = parsed.data;
    if (answer.type === 'card') {
      const card = cardOf(answer);
      if (card === null) return `template: ${answer.template ?? ''} is not a template of the manifest, or its data leaves a {{name}} unfilled or a text too long`;
      if (answer.update && !pressed) return 'update: only the answer to a press of a card\'s button updates a card (the one pressed)';
      if (answer.update && answer.visibility === 'private') return 'update: a card updated stays where it is, in the room: no visibility private';
      // A submit button is pressed on a message of the room (action {messageId, id}): a card shown to
      // the caller alone has none, so its submit buttons could never be pressed.
      if (answer.visibility === 'private' && card.blocks.some((block) => block.type === 'actions' && block.buttons.some((button) => button.kind === 'submit'))) {
        return 'card: a private card cannot carry submit buttons (they are pressed on a message of the room): post it to the room, or use open_flow buttons';
      }
      return null;
    }
    if (answer.type === 'view') {
      if (flow?.mode !== 'dynamic') return 'type: a view answers only a step of a dynamic flow';
      // The step this reply answers is the last a form may take: it must finish the form.
      if (stepsTaken + 1 >= MAX_STEPS) return `type: step ${MAX_STEPS} of a form finishes it (a card, an ack, an error or a payment), not another view`;
      return viewBreach(answer.view, flow);
    }
    // A payment needs the payments scope.
    if (answer.type === 'payment') return scopes.has('payments') ? null : 'type: a payment reply needs the payments scope';
    return null;
  };
  return { scopes, cardOf, breach };
}

const invalid = (message: string) => AppsErrors.INVOCATION_INVALID({ message });
