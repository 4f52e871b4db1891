import { randomUUID } from 'node:crypto';
import type { SummaryJob } from '../platform/queues.js';
import type { Principal } from '../platform/principal.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { MessageReads } from '../messages/index.js';
import type { UserReads } from '../users/index.js';
import type { Summarizer } from './summarizer.js';
import type { MessagesPolicy } from '../messages/index.js';
import { SummariesErrors } from './summaries.errors.js';

export type { SummaryJob };

/** Messages on each side of the one asked about that the summary covers. */
const CONTEXT = 25;

/** Summaries of the conversation around a message (spec, "Messages", rule 6). */
export class SummariesService {
  constructor(
    private readonly deps: {
      policy: MessagesPolicy;
      messages: MessageReads;
      users: UserReads;
      events: DeviceEvents;
      summarizer: Summarizer;
      enqueue: (job: SummaryJob) => Promise<void>;
    },
  ) {}

  /** Queues a summary: the caller must be an enabled member; not in end-to-end encrypted rooms. */
  async request(principal: Principal, messageId: string): Promise<{ requestId: string; messageId: string; status: 'QUEUED' }> {
    const { room } = await this.deps.policy.forEnabledMember(principal, messageId);
    if (room.type === 'E2EE') throw SummariesErrors.TLDR_NOT_IN_E2EE();
    const user = await this.deps.users.findById(principal.userId);
    const requestId = randomUUID();
    await this.deps.enqueue({ requestId, userId: principal.userId, messageId, language: user?.language ?? 'en' });
    return { requestId, messageId, status: 'QUEUED' };
  }

  /** The worker's part: summarize and tell the requester's devices with `chat.tldr-ready`. */
  async run(job: SummaryJob): Promise<void> {
    const message = await this.deps.messages.findById(job.messageId);
    if (!message) return;
    const timeline = message.parentId;
    const [before, after] = await Promise.all([
      this.deps.messages.before(message.roomId, timeline, message._id, CONTEXT),
      this.deps.messages.after(message.roomId, timeline, message._id, CONTEXT),
    ]);
    const conversation = [...before.reverse(), message, ...after].filter((m) => m.message.length > 0);
    const authors = new Map((await this.deps.users.findManyByIds([...new Set(conversation.map((m) => m.userId))])).map((u) => [u._id, u.displayName ?? 'Someone']));
    const summary = await this.deps.summarizer.summarize(
      conversation.map((m) => ({ author: authors.get(m.userId) ?? 'Someone', text: m.message })),
      job.language,
    );
    await this.deps.events.toUsers([job.userId], 'chat.tldr-ready', {
      requestId: job.requestId,
      roomId: message.roomId,
      messageId: message._id,
      summary: summary.text,
      language: summary.language,
      requestedLanguage: job.language,
      messageCount: conversation.length,
    });
  }
}
