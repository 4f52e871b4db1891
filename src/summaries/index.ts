import type { MessageReads, MessagesPolicy } from '../messages/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { UserReads } from '../users/index.js';
import { ExtractiveSummarizer } from './extractive.summarizer.js';
import { OpenAiCompatibleSummarizer } from './openai.summarizer.js';
import { SummariesService } from './summaries.service.js';

/** Summaries of the conversation around a message, made in the worker. */
export function summariesArea(p: Platform, deps: { messages: MessageReads; messagesPolicy: MessagesPolicy; users: UserReads; events: DeviceEvents }) {
  const { config } = p;
  return {
    summaries: new SummariesService({
      policy: deps.messagesPolicy,
      messages: deps.messages,
      users: deps.users,
      events: deps.events,
      summarizer:
        config.SUMMARIZER === 'openai'
          ? new OpenAiCompatibleSummarizer({ baseUrl: config.OPENAI_BASE_URL ?? '', apiKey: config.OPENAI_API_KEY, model: config.OPENAI_MODEL })
          : new ExtractiveSummarizer(),
      enqueue: (job) => p.queues.add(QUEUES.summaries, job),
    }),
  };
}
