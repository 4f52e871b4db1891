import type { MessagesRepo } from '../messages/messages.repo.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import type { UsersRepo } from '../users/users.repo.js';
import { ExtractiveSummarizer } from './extractive.summarizer.js';
import { OpenAiCompatibleSummarizer } from './openai.summarizer.js';
import { SummariesService } from './summaries.service.js';

/** Summaries of the conversation around a message, made in the worker. */
export function summariesArea(p: Platform, deps: { rooms: RoomsArea; messages: MessagesRepo; users: UsersRepo; events: DeviceEvents }) {
  const { config } = p;
  return {
    summaries: new SummariesService({
      rooms: deps.rooms.repos.rooms,
      members: deps.rooms.repos.roomMembers,
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
