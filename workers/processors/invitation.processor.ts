import type { Job } from 'bullmq';
import type { ContactsService } from '../../src/contacts/contacts.service.js';
import type { InvitationJob } from '../../src/platform/queues.js';

/** Sends an invitation that has not gone out yet; a provider failure throws and BullMQ retries with backoff. */
export function invitationProcessor(contacts: ContactsService) {
  return async (job: Job<InvitationJob>) => contacts.deliverInvitation(job.data.requestId);
}
